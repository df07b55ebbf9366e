import type { PageSnapshot, Participant, SnapshotHooks } from "../adapter.js";
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
  const says = (phrases: readonly string[]) => phrases.some((phrase) => text.includes(phrase));
  const has = (selector: string) => document.querySelector(selector) !== null;
  const none: Participant[] = [];

  if (says(texts.removed)) return { phase: "removed", participants: none };
  if (says(texts.ended)) return { phase: "ended", participants: none };
  if (says(texts.left)) return { phase: "left", participants: none };
  if (says(texts.denied)) return { phase: "denied", participants: none };
  if (says(texts.notFound)) return { phase: "not_found", participants: none };
  if (says(texts.blocked)) return { phase: "blocked", participants: none };
  if (says(texts.signIn) || has(hooks.loginForm)) return { phase: "sign_in", participants: none };

  if (has(call.hangup) && call.callOnly.some(has)) {
    const participants = readParticipants();
    const present = new Set(participants.map((p) => p.id));
    const speakers: string[] = [];
    for (const tile of document.querySelectorAll(call.stageTile)) {
      const id = tile.getAttribute("data-tid") ?? "";
      const outline = tile.querySelector(call.voiceOutline);
      const speaking = outline?.classList.contains(call.speakingClass) ?? false;
      if (speaking && present.has(id) && !speakers.includes(id)) speakers.push(id);
    }
    return { phase: "in_call", participants, speakers };
  }

  if (says(texts.hostNotStarted)) return { phase: "host_not_started", participants: none };
  if (says(texts.lobby)) return { phase: "lobby", participants: none };
  if (has(hooks.prejoin.nameInput) || has(hooks.prejoin.joinButton) || has(hooks.launcher.joinOnWeb)) {
    return { phase: "prejoin", participants: none };
  }
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
