import type { PageSnapshot, Participant, Phase, SnapshotHooks } from "../adapter.js";
import type { ZOOM_HOOKS } from "./selectors.js";

type ZoomHooks = typeof ZOOM_HOOKS & SnapshotHooks;

/**
 * Runs in the page (see PlatformAdapter.snapshot), so everything it uses is defined inside it.
 * The end and removal dialogs come first because they are drawn over the call; dead ends next;
 * admission is judged only by the footer's participants button, which the waiting screens lack.
 *
 * Participants come from the roster's entries wherever they are rendered, or from the video tiles
 * while the participants panel is closed.
 * Zoom gives them no per-person id, so the id is derived from the name ("name:Alice", and
 * "name:Alice#2" for a second Alice): stable while the name is, the same from panel and tiles.
 *
 * The bot is the entry Zoom tags "(Me)", never an entry by its name: someone who takes the bot's
 * name is listed like anyone. The tiles carry no such tag, so there the bot is one tile with its
 * name, its own, which the page always shows: one is taken out, and every other tile with that
 * name is a namesake who stays.
 */
export function zoomSnapshot(rawHooks: SnapshotHooks): PageSnapshot {
  const hooks = rawHooks as ZoomHooks;
  // innerText, not textContent: only rendered text counts.
  const text = (document.body?.innerText ?? "").toLowerCase();
  /** `texts.<key> "<the phrase found>"`, or undefined when the page says none of them. */
  const said = (key: keyof ZoomHooks["texts"]) => {
    const phrase = hooks.texts[key].find((candidate) => text.includes(candidate.toLowerCase()));
    return phrase === undefined ? undefined : `texts.${key} "${phrase}"`;
  };
  const has = (selector: string) => document.querySelector(selector) !== null;
  const none: Participant[] = [];
  const inCall = has(hooks.footer) && has(hooks.participantsButton);

  const removed = has(hooks.removedDialog) ? "removedDialog" : said("removed");
  if (removed) {
    // The same dialog over the waiting screen is a denial: Zoom "removes" waiting people.
    if (inCall) return { phase: "removed", participants: none, evidence: removed };
    return { phase: "denied", participants: none, evidence: `${removed}, no call underneath` };
  }
  const ended = has(hooks.endedDialog) ? "endedDialog" : said("ended");
  if (ended) return { phase: "ended", participants: none, evidence: ended };
  // In this order: the first screen that matches wins.
  const screens: ReadonlyArray<readonly [Phase, keyof ZoomHooks["texts"]]> = [
    ["denied", "denied"],
    ["left", "left"],
    ["not_found", "notFound"],
    ["bot_wall", "botWall"],
    ["sign_in", "signIn"],
    ["bad_passcode", "badPasscode"],
  ];
  for (const [phase, key] of screens) {
    const evidence = said(key);
    if (evidence) return { phase, participants: none, evidence };
  }
  if (new RegExp(hooks.signInPathPattern).test(location.pathname)) {
    return { phase: "sign_in", participants: none, evidence: `signInPathPattern "${location.pathname}"` };
  }

  if (inCall) {
    const self = hooks.selfName.trim();
    const selfLabel = new RegExp(hooks.selfLabelPattern, "i");
    const idOf = new Map<string, string>();
    const participants: Participant[] = [];
    const add = (name: string) => {
      const count = participants.filter((p) => p.name === name).length;
      const id = count === 0 ? `name:${name}` : `name:${name}#${count + 1}`;
      if (!idOf.has(name)) idOf.set(name, id);
      participants.push({ id, name });
    };
    // Roster entries wherever the panel renders them; a hidden copy is not what the page shows.
    const entries = [...document.querySelectorAll(hooks.participantName)].filter(
      (name) => name.getClientRects().length > 0,
    );
    if (entries.length > 0) {
      const items = entries.map((name) => {
        const item = name.closest(hooks.participantItem) ?? name.parentElement;
        return {
          name: (name.textContent ?? "").trim(),
          isSelf: selfLabel.test(item?.querySelector(hooks.participantTag)?.textContent ?? ""),
        };
      });
      // Zoom tags the bot "(Me)". A build that tagged nobody: the bot's own entry is there (the
      // list has everyone), so one entry with its name is taken for it, and only one.
      if (!items.some((item) => item.isSelf)) {
        const bot = items.find((item) => item.name === self);
        if (bot) bot.isSelf = true;
      }
      for (const item of items) if (item.name && !item.isSelf) add(item.name);
    } else {
      // How many tiles name each person. One person can show twice (the speaker view's filmstrip
      // and its big frame), never twice in one kind of tile: a name counts as often as the kind
      // that shows it most.
      const shown = new Map<string, number>();
      for (const kind of hooks.videoTileKinds) {
        const inKind = new Map<string, number>();
        for (const tile of document.querySelectorAll(kind)) {
          const name = (tile.querySelector(hooks.videoTileName)?.textContent ?? "").trim();
          if (name) inKind.set(name, (inKind.get(name) ?? 0) + 1);
        }
        for (const [name, count] of inKind) shown.set(name, Math.max(shown.get(name) ?? 0, count));
      }
      // One tile with the bot's name is the bot's own (the page always shows it); more are namesakes.
      if (shown.has(self)) shown.set(self, (shown.get(self) ?? 0) - 1);
      for (const [name, count] of shown) for (let i = 0; i < count; i++) add(name);
    }
    // A tile names no one person among namesakes: the first one's id (the bot never speaks).
    const speakers = new Set<string>();
    for (const tile of document.querySelectorAll(hooks.activeSpeakerTile)) {
      const id = idOf.get((tile.querySelector(hooks.videoTileName)?.textContent ?? "").trim());
      if (id) speakers.add(id);
    }
    const evidence = "footer + participantsButton";
    return { phase: "in_call", participants, speakers: [...speakers], evidence };
  }

  // Checked before the waiting room: the host may start the meeting into a waiting room.
  const hostNotStarted = said("hostNotStarted");
  if (hostNotStarted) return { phase: "host_not_started", participants: none, evidence: hostNotStarted };
  const waitingRoom = said("waitingRoom");
  if (waitingRoom) return { phase: "lobby", participants: none, evidence: waitingRoom };
  const form = (["nameInput", "joinButton", "termsAgree"] as const).find((key) => has(hooks[key]));
  if (form) {
    const snap: PageSnapshot = { phase: "prejoin", participants: none, evidence: form };
    const label = document.querySelector(hooks.accountLabel)?.getAttribute("aria-label");
    if (label) {
      const parts = new RegExp(hooks.accountLabelPattern).exec(label);
      const bare = label.replace(/^Signed in as\s+/, "").trim();
      snap.account = { name: (parts ? parts[1]?.trim() : bare) || null, email: parts?.[2] ?? null };
      snap.evidence = `${form} + accountLabel`;
    }
    return snap;
  }
  return { phase: "loading", participants: none };
}
