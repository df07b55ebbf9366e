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
    ["blocked", "blocked"],
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
    const present = new Set(participants.map((p) => p.id));
    const speakers: string[] = [];
    for (const tile of document.querySelectorAll(call.stageTile)) {
      const id = tile.getAttribute("data-tid") ?? "";
      const outline = tile.querySelector(call.voiceOutline);
      const speaking = outline?.classList.contains(call.speakingClass) ?? false;
      if (speaking && present.has(id) && !speakers.includes(id)) speakers.push(id);
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
  if (form) return { phase: "prejoin", participants: none, evidence: form[0] };
  return { phase: "loading", participants: none };

  /** Everyone but the bot, from the roster, or from the stage when the roster is not rendered. */
  function readParticipants(): Participant[] {
    const found: Participant[] = [];
    const seen = new Set<string>();
    const add = (id: string, name: string, marked: string) => {
      const isSelf = name === hooks.selfName || call.selfMarkers.some((marker) => marked.includes(marker));
      if (!id || !name || isSelf || seen.has(id)) return;
      seen.add(id);
      found.push({ id, name });
    };
    const tree = document.querySelector(call.rosterTree);
    if (tree) {
      for (const item of tree.querySelectorAll(call.rosterItem)) {
        const id = (item.getAttribute("data-tid") ?? "").slice(call.rosterItemPrefix.length);
        const titled = item.querySelector(call.rosterName);
        const name = (titled?.getAttribute("title") ?? titled?.textContent ?? "").trim();
        add(id, name, item.textContent ?? "");
      }
      return found;
    }
    for (const tile of document.querySelectorAll(call.stageTile)) {
      const name = (tile.querySelector(call.tileName)?.textContent ?? "").trim();
      add(tile.getAttribute("data-tid") ?? "", name, name);
    }
    return found;
  }
}
