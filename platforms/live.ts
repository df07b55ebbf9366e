import type { Page } from "playwright";

/**
 * The live meeting as a platform shows it: its captions and its chat. Each adapter supplies the
 * hooks (in its selectors.ts) and the few clicks that differ per platform (its captions.ts and
 * chat.ts); reading the page is the same everywhere: `readCaptions` and `readChat` below run in
 * the page, on every DOM change, and hand the runner what is on screen now. The runner
 * (src/runner/live-meeting/) turns those readings into utterances and messages.
 */

/** Who the page says wrote or said something: a name (the `nth` person of that name), or the user itself. */
export type SpeakerRef = { name: string; nth: number } | { self: true };

/** One caption entry on screen (a speaker turn; Meet's block, Zoom's line, Teams' entry). */
export interface CaptionEntryReading {
  /** Stable while the entry's element lives (the page keeps a key per element). */
  key: string;
  /** Its whole text now, whitespace collapsed. */
  text: string;
  speaker: SpeakerRef | null;
}

export interface CaptionsReading {
  /** Whether a captions region is on screen. */
  on: boolean;
  /** In document order. */
  entries: CaptionEntryReading[];
}

/** One chat message on screen. */
export interface ChatMessageReading {
  /** The platform's own id for it (Meet's data-message-id, Zoom's element id, Teams' data-mid), if shown. */
  id: string | null;
  text: string;
  /** The sender of its run (headers are printed once over a run of one sender's messages). */
  sender: SpeakerRef | null;
  /** The user's own message, as the page marks it. */
  own: boolean;
}

export interface ChatReading {
  /** Whether the composer is on screen: the panel is open and the page delivers messages. */
  open: boolean;
  messages: ChatMessageReading[];
}

/**
 * Where a platform's captions are. Leaves are paired by document order: each `text` takes the
 * speaker leaf (`speakerName` or `speakerAvatar`) last seen before it in the region, so a speaker
 * printed once over several entries, or beside its entry, or in a header, is found alike.
 */
export interface CaptionReadHooks {
  /** The captions region(s); every entry is inside one. */
  region: string;
  /** An entry's text leaf. */
  text: string;
  /** The element around one entry, whose life keys the utterance; the text leaf itself without one. */
  entry: string;
  /** A leaf printing the speaker's name (Meet, Teams). */
  speakerName?: string;
  /** A leaf showing only the speaker's avatar, matched to the roster's (Zoom). */
  speakerAvatar?: string;
  /** Names the page gives the user's own turns ("You"). */
  selfTexts: string[];
  /** Where avatars are matched to names (with `speakerAvatar`). */
  roster?: {
    /** A roster entry's name. */
    name: string;
    /** The entry around a name. */
    item: string;
    /** The entry's avatar (an image, or initials on a colour). */
    avatar: string;
    /** The entry's tag, e.g. "(Me)". */
    tag: string;
    /** What in the tag marks the user's own entry. */
    selfTagPattern: string;
  };
}

/** Where a platform's chat is. */
export interface ChatReadHooks {
  /** One message (the innermost match counts). */
  message: string;
  /** Elements whose messages are not the list's (Meet's pinned-message overlay). */
  excluded?: string;
  /** A message's text, inside it. */
  text: string;
  /** A sender's name, over a run of messages or inside its first one. */
  sender: string;
  /** The user's own messages (on the message or around it). */
  ownMessage?: string;
  /** Meet prints no sender over the user's own runs: a message outside every sender's run is own. */
  ownWhenNoSender: boolean;
  /** Sender names the page gives the user's own messages ("Me"). */
  selfTexts: string[];
  /** Attributes that hold the platform's message id, in order. */
  messageIdAttributes: string[];
  /** The composer: visible while the panel is open. */
  composer: string;
}

export type CaptionsOutcome = { on: true; language: string | null } | { on: false; reason: string };

/** The page gives the bot no chat (no chat button, or a disabled one): the command's CHAT_UNAVAILABLE. */
export class ChatUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChatUnavailable";
  }
}

/** Called for each step where a hook had variants, with the one that matched (logged by the runner). */
export type LiveNote = (hook: string, variant: string) => void;

/**
 * The bot's own microphone toggle in the call: each platform labels it with what a click would do,
 * so which of the two is shown says whether the microphone is on.
 */
export interface MicrophoneHooks {
  /** Shown while the microphone is on (a click mutes it). */
  onButton: string;
  /** Shown while it is muted (a click unmutes it). */
  offButton: string;
  /** Notices (a regular expression's source, case-insensitive) that the host muted the bot or keeps it muted. */
  hostMutedPattern: string;
}

/**
 * The bot's own camera toggle in the call, labelled like the microphone's with what a click would
 * do: which of the two shows says whether the camera is on.
 */
export interface CameraHooks {
  /** Shown while the camera is on (a click turns it off). */
  onButton: string;
  /** Shown while it is off (a click turns it on). */
  offButton: string;
}

/** The host muted the bot, or does not let it unmute: a sound cannot be heard. */
export class MutedByHost extends Error {}

/** A platform's captions and chat (PlatformAdapter.live). */
export interface LiveAdapter {
  captions: CaptionReadHooks;
  chat: ChatReadHooks;
  /**
   * Turns the bot's own captions on, the platform's way; with `language` (BCP 47), picks it where
   * the platform lets the bot. Never throws: a page that cannot give captions says why.
   */
  turnOnCaptions(page: Page, opts: { language?: string; note: LiveNote }): Promise<CaptionsOutcome>;
  /** Opens the chat panel (and keeps nothing in its way); throws ChatUnavailable when the page has none. */
  openChat(page: Page, opts: { note: LiveNote }): Promise<void>;
  /**
   * Types `text` into the composer and sends it; resolves once the composer cleared (the platform
   * took it). Throws ChatUnavailable when the page has no chat, an Error when it did not send.
   */
  sendChat(page: Page, text: string, opts: { note: LiveNote }): Promise<void>;
  microphone: MicrophoneHooks;
  /** Without it the bot cannot show pictures (show_image fails CAMERA_UNAVAILABLE). */
  camera?: CameraHooks;
  /**
   * Turns the other participants' video off for the bot alone (an audio-only bot: no tile is
   * decoded). Answers how, or why not (null: done). Never throws. Absent: the platform has no
   * such switch the bot can reach.
   */
  turnOffIncomingVideo?(page: Page, opts: { note: LiveNote }): Promise<string | null>;
}

/**
 * Runs in the page (serialized: self-contained). The caption entries on screen now, with their
 * speakers. An entry keeps its key as long as its element lives, so a block rewritten in place
 * stays one utterance.
 */
export function readCaptions(hooks: CaptionReadHooks): CaptionsReading {
  const store = window as unknown as {
    __meetbotEntryKeys?: WeakMap<Element, string>;
    __meetbotNextKey?: number;
    __meetbotDocument?: string;
  };
  const keys = (store.__meetbotEntryKeys ??= new WeakMap());
  // Per document: a reloaded page's entries are new ones, never an old key's.
  const documentKey = (store.__meetbotDocument ??= Math.random().toString(36).slice(2, 8));
  const keyOf = (element: Element) => {
    let key = keys.get(element);
    if (!key) {
      store.__meetbotNextKey = (store.__meetbotNextKey ?? 0) + 1;
      key = `${documentKey}-e${store.__meetbotNextKey}`;
      keys.set(element, key);
    }
    return key;
  };
  const clean = (text: string | null | undefined) => (text ?? "").replace(/\s+/g, " ").trim();

  /** An avatar's identity: its picture, or its initials on their colour (namesakes differ by colour). */
  const avatarKey = (element: Element | null): string | null => {
    if (!element) return null;
    const image = element.matches("img") ? element : element.querySelector("img");
    const src = image?.getAttribute("src");
    if (src) return `img:${src}`;
    let colour = "";
    for (const node of [element, ...element.querySelectorAll("*")]) {
      const background = getComputedStyle(node).backgroundColor;
      if (background && background !== "rgba(0, 0, 0, 0)" && background !== "transparent") {
        colour = background;
        break;
      }
    }
    const initials = clean(element.textContent);
    return initials ? `initials:${initials}|${colour}` : null;
  };

  /** The roster entry whose avatar is `key`: its name and place among namesakes, or the user. */
  const byAvatar = (key: string | null): SpeakerRef | null => {
    const roster = hooks.roster;
    if (!key || !roster) return null;
    const selfTag = new RegExp(roster.selfTagPattern, "i");
    const before = new Map<string, number>();
    // Only entries the page shows, in list order, as the roster's participant ids are derived.
    for (const nameNode of document.querySelectorAll(roster.name)) {
      if (nameNode.getClientRects().length === 0) continue;
      const item = nameNode.closest(roster.item) ?? nameNode.parentElement;
      const name = clean(nameNode.textContent);
      const isSelf = selfTag.test(item?.querySelector(roster.tag)?.textContent ?? "");
      const nth = isSelf ? 0 : (before.get(name) ?? 0);
      if (!isSelf) before.set(name, nth + 1);
      if (avatarKey(item?.querySelector(roster.avatar) ?? null) !== key) continue;
      return isSelf ? { self: true } : { name, nth };
    }
    return null;
  };

  const byName = (node: Element): SpeakerRef | null => {
    const name = clean(node.textContent);
    if (!name) return null;
    return hooks.selfTexts.includes(name) ? { self: true } : { name, nth: 0 };
  };

  const speakerLeaf = [hooks.speakerName, hooks.speakerAvatar].filter(Boolean).join(", ");
  const speakerOf = (leaf: Element): SpeakerRef | null =>
    hooks.speakerName && leaf.matches(hooks.speakerName) ? byName(leaf) : byAvatar(avatarKey(leaf));
  /** The leaf's words without a speaker's (a line that holds its avatar's initials). */
  const wordsOf = (leaf: Element): string => {
    const parts: string[] = [];
    const walker = document.createTreeWalker(leaf, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (
        speakerLeaf &&
        node.parentElement?.closest(speakerLeaf) &&
        leaf.contains(node.parentElement.closest(speakerLeaf))
      )
        continue;
      parts.push(node.textContent ?? "");
    }
    return clean(parts.join(" "));
  };

  const regions = [...document.querySelectorAll(hooks.region)].filter(
    (region, _i, all) => !all.some((other) => other !== region && other.contains(region)),
  );
  const entries: CaptionEntryReading[] = [];
  for (const region of regions) {
    let speaker: SpeakerRef | null = null;
    const leaves = region.querySelectorAll(speakerLeaf ? `${hooks.text}, ${speakerLeaf}` : hooks.text);
    for (const leaf of leaves) {
      if (speakerLeaf && leaf.matches(speakerLeaf)) {
        speaker = speakerOf(leaf);
        continue;
      }
      // A leaf around another text leaf (two variants matching nested elements): the inner one counts.
      if (leaf.querySelector(hooks.text)) continue;
      // A speaker inside the leaf comes after it in document order: it is this entry's.
      const inner = speakerLeaf ? leaf.querySelector(speakerLeaf) : null;
      if (inner) speaker = speakerOf(inner);
      const entry = leaf.closest(hooks.entry);
      const key = keyOf(entry && region.contains(entry) ? entry : leaf);
      const text = wordsOf(leaf);
      const last = entries.at(-1);
      if (last && last.key === key) last.text = clean(`${last.text} ${text}`);
      else entries.push({ key, text, speaker });
    }
  }
  // The latest entries only: older ones have settled (Teams keeps every entry of the call on the
  // page, and all of them on every change would grow without end).
  return { on: regions.length > 0, entries: entries.slice(-16) };
}

/**
 * Runs in the page (serialized: self-contained). The chat messages on screen now, each with the
 * sender of its run: a sender leaf starts a run that covers the messages after it within the
 * smallest element around it that holds another message (its group, or the whole list where
 * senders sit inside the first message of a run, as on Teams).
 */
export function readChat(hooks: ChatReadHooks): ChatReading {
  const visible = (element: Element) => element.getClientRects().length > 0;
  const textOf = (element: Element) => {
    const rendered = (element as HTMLElement).innerText;
    const raw = typeof rendered === "string" && visible(element) ? rendered : (element.textContent ?? "");
    // Lines kept (a message may have several), spaces within them collapsed.
    return raw
      .split("\n")
      .map((line) => line.replace(/\s+/g, " ").trim())
      .filter((line) => line !== "")
      .join("\n");
  };
  const composer = [...document.querySelectorAll(hooks.composer)].some(visible);
  const isMessage = (element: Element) =>
    !(hooks.excluded && element.closest(hooks.excluded)) && element.querySelector(hooks.message) === null;
  const scopes = new Map<Element, Element>();
  /** Where a sender's run may be: the smallest element around it holding another message. */
  const scopeOf = (sender: Element): Element => {
    const cached = scopes.get(sender);
    if (cached) return cached;
    const home = sender.closest(hooks.message);
    let scope: Element = document.body;
    for (let node = sender.parentElement; node; node = node.parentElement) {
      if ([...node.querySelectorAll(hooks.message)].some((m) => m !== home && isMessage(m))) {
        scope = node;
        break;
      }
    }
    scopes.set(sender, scope);
    return scope;
  };

  const messages: ChatMessageReading[] = [];
  let run: { name: string; scope: Element } | null = null;
  for (const node of document.querySelectorAll(`${hooks.message}, ${hooks.sender}`)) {
    if (hooks.excluded && node.closest(hooks.excluded)) continue;
    if (node.matches(hooks.sender) && !node.matches(hooks.message)) {
      run = { name: textOf(node).replace(/\s+/g, " "), scope: scopeOf(node) };
      continue;
    }
    if (!isMessage(node)) continue;
    // A sender inside the message (Teams' first of a run) comes after it in document order.
    const inner = node.querySelector(hooks.sender);
    if (inner) run = { name: textOf(inner).replace(/\s+/g, " "), scope: scopeOf(inner) };
    const sender = run && run.scope.contains(node) ? run.name : null;
    const ownMark = hooks.ownMessage ? node.closest(hooks.ownMessage) !== null : false;
    const own =
      ownMark ||
      (sender !== null && hooks.selfTexts.includes(sender)) ||
      (hooks.ownWhenNoSender && sender === null);
    let id: string | null = null;
    for (const attribute of hooks.messageIdAttributes) {
      const value = node.getAttribute(attribute);
      if (value) {
        id = value;
        break;
      }
    }
    const textNode = node.querySelector(hooks.text);
    messages.push({
      id,
      text: textNode ? textOf(textNode) : "",
      sender: own ? { self: true } : sender ? { name: sender, nth: 0 } : null,
      own,
    });
  }
  return { open: composer, messages };
}
