import type { PageSnapshot, Participant, Phase, SnapshotHooks } from "../adapter.js";
import type { TeamsHooks } from "./selectors.js";

/**
 * Runs in the page (see PlatformAdapter.snapshot), so it must stay self-contained: no imports
 * at run time, no helpers outside this function. The end and failure screens are checked first
 * because they replace the call; admission needs the hang-up button AND a hook the lobby lacks
 * (the lobby shows hang-up too); the lobby text is checked before the pre-join form because the
 * lobby keeps that form on screen.
 */
export function teamsSnapshot(rawHooks: SnapshotHooks): PageSnapshot {
  const hooks = rawHooks as TeamsHooks & SnapshotHooks;
  const { call, texts } = hooks;
  // innerText, not textContent: only rendered text counts (a hidden panel's text must not).
  const text = document.body?.innerText ?? "";
  /** `texts.<key> "<the phrase found>"`, or undefined when the page says none of them. */
  const said = (key: keyof TeamsHooks["texts"]) => {
    const phrase = texts[key].find((candidate) => text.includes(candidate));
    return phrase === undefined ? undefined : `texts.${key} "${phrase}"`;
  };
  const has = (selector: string) => document.querySelector(selector) !== null;
  const none: Participant[] = [];

  // In this order: the first screen that matches wins.
  const screens: ReadonlyArray<readonly [Phase, keyof TeamsHooks["texts"]]> = [
    ["removed", "removed"],
    ["ended", "ended"],
    ["left", "left"],
    ["denied", "denied"],
    ["not_found", "notFound"],
    ["bot_wall", "botWall"],
    ["sign_in", "signIn"],
  ];
  for (const [phase, key] of screens) {
    const evidence = said(key);
    if (evidence) return { phase, participants: none, evidence };
  }
  if (has(hooks.loginForm)) return { phase: "sign_in", participants: none, evidence: "loginForm" };

  const callOnly = has(call.hangup) ? call.callOnly.find(has) : undefined;
  if (callOnly) {
    const participants = readParticipants();
    const speakers: string[] = [];
    for (const outline of document.querySelectorAll(call.voiceOutline)) {
      if (!outline.classList.contains(call.speakingClass)) continue;
      const id = speakerOf(outline, participants);
      if (id !== undefined && !speakers.includes(id)) speakers.push(id);
    }
    return { phase: "in_call", participants, speakers, evidence: `call.hangup + callOnly "${callOnly}"` };
  }

  const hostNotStarted = said("hostNotStarted");
  if (hostNotStarted) return { phase: "host_not_started", participants: none, evidence: hostNotStarted };
  const lobby = said("lobby");
  if (lobby) return { phase: "lobby", participants: none, evidence: lobby };
  const form = (
    [
      ["prejoin.nameInput", hooks.prejoin.nameInput],
      ["prejoin.joinButton", hooks.prejoin.joinButton],
      ["launcher.joinOnWeb", hooks.launcher.joinOnWeb],
    ] as const
  ).find(([, selector]) => has(selector));
  if (form) {
    const snap: PageSnapshot = { phase: "prejoin", participants: none, evidence: form[0] };
    const control = document.querySelector(hooks.account.control);
    if (control && !has(hooks.prejoin.nameInput) && form[0] === "prejoin.joinButton") {
      const label = control.getAttribute("aria-label") ?? "";
      const name = label.startsWith(hooks.account.labelPrefix)
        ? label.slice(hooks.account.labelPrefix.length).trim()
        : "";
      const email = (document.querySelector(hooks.account.email)?.textContent ?? "").trim();
      snap.account = { name: name || null, email: email || null };
      snap.evidence = `${form[0]} + account.control`;
    }
    return snap;
  }
  // A launcher whose button lost its data-tid still names it by one of its texts or labels.
  const onWeb = [...document.querySelectorAll("button")].find((button) =>
    [button.getAttribute("aria-label") ?? "", button.textContent?.trim() ?? ""].some((name) =>
      hooks.launcher.joinOnWebTexts.includes(name),
    ),
  );
  if (onWeb) return { phase: "prejoin", participants: none, evidence: "launcher.joinOnWebTexts" };
  return { phase: "loading", participants: none };

  /**
   * Everyone but the bot, from the roster items wherever they are rendered, or from the stage
   * when there are none (the roster is closed). The bot is what the page marks as the user: the
   * roster item tagged "(You)" outside its name, the self-view tile. Never its name: a namesake of
   * the bot, or someone called "X (You)", is listed like anyone.
   */
  function readParticipants(): Participant[] {
    const found: Participant[] = [];
    const seen = new Set<string>();
    const add = (id: string, name: string) => {
      if (!id || !name || seen.has(id)) return;
      seen.add(id);
      found.push({ id, name });
    };
    // The roster's ids by name, as last rendered: the roster may close again (the chat pane takes
    // the People panel's place), and tiles keyed by display name then keep those ids.
    const store = window as unknown as { __meetbotTeamsRosterIds?: Record<string, string[]> };
    const items = document.querySelectorAll(call.rosterItem);
    if (items.length > 0) {
      const byName: Record<string, string[]> = {};
      for (const item of items) {
        const id = (item.getAttribute("data-tid") ?? "").slice(call.rosterItemPrefix.length);
        const titled = item.querySelector(call.rosterName);
        const rawName = titled?.getAttribute("title") ?? titled?.textContent ?? "";
        // The item's text without the name: its tags ("(Unverified)", "(You)", roles).
        const tags = (item.textContent ?? "").replace(rawName, "");
        if (call.selfMarkers.some((marker) => tags.includes(marker))) continue;
        add(id, rawName.trim());
        if (id) (byName[rawName.trim()] ??= []).push(id);
      }
      store.__meetbotTeamsRosterIds = byName;
      return found;
    }
    const rosterIds = store.__meetbotTeamsRosterIds ?? {};
    const knownIds = new Set(Object.values(rosterIds).flat());
    const taken = new Map<string, number>();
    for (const tile of document.querySelectorAll(call.stageTile)) {
      // A tile nested in another tile is the same participant's; the outer one names it.
      if (tile.parentElement?.closest(call.stageTile)) continue;
      if (isSelfTile(tile)) continue;
      const key = tile.getAttribute("data-tid") ?? "";
      const name = (tile.querySelector(call.tileName)?.textContent ?? "").trim();
      const nth = taken.get(name) ?? 0;
      taken.set(name, nth + 1);
      add(knownIds.has(key) ? key : (rosterIds[name]?.[nth] ?? key), name);
    }
    return found;
  }

  /** The self view, or a tile in it or around it. */
  function isSelfTile(tile: Element): boolean {
    return tile.closest(call.selfTile) !== null || tile.querySelector(call.selfTile) !== null;
  }

  /**
   * Whose speaking ring `outline` is: the first tile or roster item around it whose `data-tid`
   * (or name tag) names one of `participants` by id or by name. Undefined for the bot's own (the
   * self view), even when someone in `participants` has the bot's name.
   */
  function speakerOf(outline: Element, participants: Participant[]): string | undefined {
    const holders = `${call.stageTile}, ${call.rosterItem}`;
    for (
      let holder = outline.closest(holders);
      holder;
      holder = holder.parentElement?.closest(holders) ?? null
    ) {
      // The bot's own ring: whoever shares its name, it is not them talking.
      if (isSelfTile(holder)) return undefined;
      let key = holder.getAttribute("data-tid") ?? "";
      if (key.startsWith(call.rosterItemPrefix)) key = key.slice(call.rosterItemPrefix.length);
      const tag = (holder.querySelector(call.tileName)?.textContent ?? "").trim();
      const match = participants.find(
        (p) => p.id === key || p.name === key || (tag !== "" && p.name === tag),
      );
      if (match) return match.id;
    }
    return undefined;
  }
}
