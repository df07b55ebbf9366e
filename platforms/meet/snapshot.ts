import type { PageSnapshot, Participant, SnapshotHooks } from "../adapter.js";
import type { MEET_HOOKS } from "./selectors.js";

type MeetHooks = typeof MEET_HOOKS & SnapshotHooks;

/**
 * Runs in the page (see PlatformAdapter.snapshot). The end and failure screens are checked
 * first because they replace the call; admission is judged only by the People button and the
 * roster, which the lobby does not have.
 */
export function meetSnapshot(rawHooks: SnapshotHooks): PageSnapshot {
  const hooks = rawHooks as MeetHooks;
  // innerText, not textContent: only rendered text counts; a hidden lobby message must not.
  const text = document.body?.innerText ?? "";
  const says = (phrases: readonly string[]) => phrases.some((phrase) => text.includes(phrase));
  const none: Participant[] = [];
  if (says(hooks.texts.removed)) return { phase: "removed", participants: none };
  if (says(hooks.texts.ended)) return { phase: "ended", participants: none };
  if (says(hooks.texts.left)) return { phase: "left", participants: none };
  if (says(hooks.texts.denied)) return { phase: "denied", participants: none };
  if (says(hooks.texts.notFound)) return { phase: "not_found", participants: none };
  if (says(hooks.texts.blocked)) return { phase: "blocked", participants: none };
  if (says(hooks.texts.signIn)) return { phase: "sign_in", participants: none };
  if (document.querySelector(hooks.peopleButton) || document.querySelector(hooks.roster)) {
    const participants: Participant[] = [];
    const seen = new Set<string>();
    for (const entry of document.querySelectorAll(`${hooks.roster} ${hooks.rosterEntry}`)) {
      const id = entry.getAttribute("data-participant-id") ?? "";
      const name = (entry.getAttribute("aria-label") ?? "").trim();
      const isSelf =
        entry.matches(hooks.selfMarker) ||
        entry.querySelector(hooks.selfMarker) !== null ||
        name === hooks.selfName;
      if (!id || isSelf || seen.has(id)) continue;
      seen.add(id);
      participants.push({ id, name });
    }
    const speakers = new Set<string>();
    for (const tile of document.querySelectorAll(hooks.tile)) {
      if (tile.closest(hooks.roster)) continue;
      const id = tile.getAttribute("data-participant-id") ?? "";
      const talking = tile.matches(hooks.speakingTile) || tile.querySelector(hooks.speakingTile) !== null;
      if (talking && seen.has(id)) speakers.add(id);
    }
    return { phase: "in_call", participants, speakers: [...speakers] };
  }
  if (says(hooks.texts.lobby)) return { phase: "lobby", participants: none };
  if (document.querySelector(hooks.nameInput)) return { phase: "prejoin", participants: none };
  return { phase: "loading", participants: none };
}
