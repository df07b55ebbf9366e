import type { PageSnapshot, Participant, Phase, SnapshotHooks } from "../adapter.js";
import type { MEET_HOOKS } from "./selectors.js";

type MeetHooks = typeof MEET_HOOKS & SnapshotHooks;

/**
 * Runs in the page (see PlatformAdapter.snapshot). The end and failure screens are checked
 * first because they replace the call; admission is judged only by the People button and the
 * roster, which the lobby does not have. Participants come from the roster entries, or from
 * the tiles while no entry is rendered. The bot is left out by Meet's self mark on its own entry
 * and tile (`selfMarker`), never by its name: someone who joins under the bot's name is someone
 * else, and is listed like anyone.
 */
export function meetSnapshot(rawHooks: SnapshotHooks): PageSnapshot {
  const hooks = rawHooks as MeetHooks;
  // innerText, not textContent: only rendered text counts; a hidden lobby message must not.
  const text = document.body?.innerText ?? "";
  /** `texts.<key> "<the phrase found>"`, or undefined when the page says none of them. */
  const said = (key: keyof MeetHooks["texts"]) => {
    const phrase = hooks.texts[key].find((candidate) => text.includes(candidate));
    return phrase === undefined ? undefined : `texts.${key} "${phrase}"`;
  };
  const none: Participant[] = [];
  // In this order: the first screen that matches wins.
  const screens: ReadonlyArray<readonly [Phase, keyof MeetHooks["texts"]]> = [
    ["removed", "removed"],
    ["ended", "ended"],
    ["left", "left"],
    ["denied", "denied"],
    ["not_found", "notFound"],
    ["blocked", "blocked"],
    ["sign_in", "signIn"],
  ];
  for (const [phase, key] of screens) {
    if (phase === "sign_in") {
      // The wall for anonymous guests, by its heading only (the line under it is also elsewhere).
      const headings = [...document.querySelectorAll(hooks.heading)].map((h) =>
        (h as HTMLElement).innerText.trim(),
      );
      const wall = hooks.texts.cantJoin.find((candidate) => headings.some((h) => h.startsWith(candidate)));
      if (wall) return { phase: "sign_in", participants: none, evidence: `texts.cantJoin heading "${wall}"` };
    }
    const evidence = said(key);
    if (evidence) return { phase, participants: none, evidence };
  }
  const admitted = document.querySelector(hooks.peopleButton)
    ? "peopleButton"
    : document.querySelector(hooks.roster)
      ? "roster"
      : undefined;
  if (admitted) {
    const participants: Participant[] = [];
    const seen = new Set<string>();
    const add = (element: Element, name: string) => {
      const id = element.getAttribute("data-participant-id") ?? "";
      const isSelf = element.matches(hooks.selfMarker) || element.querySelector(hooks.selfMarker) !== null;
      if (!id || !name || isSelf || seen.has(id)) return;
      seen.add(id);
      participants.push({ id, name });
    };
    // The entries wherever the page renders them, whatever their container is labelled.
    for (const entry of document.querySelectorAll(hooks.rosterEntry)) {
      add(entry, (entry.getAttribute("aria-label") ?? "").trim());
    }
    // A closed roster may not be in the DOM at all: then the tiles say who is there.
    if (participants.length === 0) {
      for (const tile of document.querySelectorAll(hooks.tile)) {
        if (tile.matches(hooks.rosterEntry)) continue;
        add(tile, (tile.querySelector(hooks.tileName)?.textContent ?? "").trim());
      }
    }
    const speakers = new Set<string>();
    for (const tile of document.querySelectorAll(hooks.tile)) {
      const id = tile.getAttribute("data-participant-id") ?? "";
      const talking = tile.matches(hooks.speakingTile) || tile.querySelector(hooks.speakingTile) !== null;
      if (talking && seen.has(id)) speakers.add(id);
    }
    return { phase: "in_call", participants, speakers: [...speakers], evidence: admitted };
  }
  const lobby = said("lobby");
  if (lobby) return { phase: "lobby", participants: none, evidence: lobby };
  if (document.querySelector(hooks.nameInput))
    return { phase: "prejoin", participants: none, evidence: "nameInput" };
  // Signed in: no name field, the account in the Google bar, a call-to-action.
  const ctaTexts = [...hooks.joinButtonTexts, ...hooks.switchHereTexts];
  const cta = [...document.querySelectorAll('button, [role="button"]')]
    .map((button) => (button.textContent ?? "").trim())
    .find((label) => ctaTexts.includes(label));
  if (cta) {
    const snap: PageSnapshot = { phase: "prejoin", participants: none, evidence: `joinButtonTexts "${cta}"` };
    const label = document.querySelector(hooks.accountButton)?.getAttribute("aria-label");
    if (label) {
      const parts = new RegExp(hooks.accountLabelPattern).exec(label);
      const bare = label.replace(/^Google Account:\s*/, "").trim();
      snap.account = { name: (parts ? parts[1]?.trim() : bare) || null, email: parts?.[2] ?? null };
      snap.evidence = `${snap.evidence} + accountButton`;
    }
    return snap;
  }
  return { phase: "loading", participants: none };
}
