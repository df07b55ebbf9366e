import type { Locator, Page } from "playwright";
import type { MeetingInfo } from "../../src/core/index.js";
import type { JoinNote, PlatformAdapter } from "../adapter.js";
import { clickFirstClickable, exactly, firstVisible, ignoreNote, type Variants } from "../variants.js";
import { MEET_HOOKS } from "./selectors.js";
import { meetSnapshot } from "./snapshot.js";

const FORM_TIMEOUT_MS = 15_000;
/** How long one click may wait for its target before the pop-ups are looked at again. */
const CLICK_ATTEMPT_MS = 1_000;
const PEOPLE_TIMEOUT_MS = 5_000;
/** Pop-ups dismissed in one go: enough for a stack of them, bounded in case one keeps coming back. */
const MAX_POPUP_ROUNDS = 4;

export const meetAdapter: PlatformAdapter = {
  platform: "google",
  hooks: MEET_HOOKS,
  snapshot: meetSnapshot,

  meetingUrl(info: MeetingInfo): string {
    if (!info.meetingUrl) throw new Error("a Google Meet bot needs meetingInfo.meetingUrl");
    return info.meetingUrl;
  },

  async join(page: Page, { displayName, note = ignoreNote }): Promise<void> {
    const name = page.locator(MEET_HOOKS.nameInput).first();
    await name.waitFor({ timeout: FORM_TIMEOUT_MS });
    await dismissPopups(page, note);
    // fill() types into the field even under a pop-up; only clicks can land on what covers a control.
    await name.fill(displayName, { timeout: FORM_TIMEOUT_MS });
    // Joining muted and camera-off: the bot only listens. The toggles flip their label once
    // clicked, so a missing "Turn off" toggle means it is already off.
    const toggles = [
      ["microphone", MEET_HOOKS.microphoneOff],
      ["camera", MEET_HOOKS.cameraOff],
    ] as const;
    for (const [hook, selector] of toggles) {
      const toggle = page.locator(selector).first();
      if (await toggle.isVisible()) {
        await clickPast(page, toggle, note, FORM_TIMEOUT_MS);
        note(hook, `clicked ${selector}`);
      } else {
        note(hook, `no ${selector}: already off`);
      }
    }
    const anyCta = page.getByRole("button", { name: exactly(MEET_HOOKS.joinButtonTexts) });
    await anyCta.filter({ visible: true }).first().waitFor({ timeout: FORM_TIMEOUT_MS });
    // In the list's order, not the page's: "Join here too" rather than "Switch here" when both show.
    const cta = await firstVisible(buttonsNamed(page, MEET_HOOKS.joinButtonTexts));
    if (!cta) throw new Error(`the call-to-action (${MEET_HOOKS.joinButtonTexts.join(" / ")}) went away`);
    note("joinButton", cta.variant);
    await clickPast(page, cta.locator, note, FORM_TIMEOUT_MS);
  },

  /**
   * Meet may render the participant list only while the People panel is open. If it stays
   * closed (the button could not be clicked), the snapshot names participants from the tiles.
   */
  async afterAdmission(page: Page, { note = ignoreNote } = {}): Promise<void> {
    // Entries by their own hook, wherever the panel puts them: its container's label drifts.
    const shownEntries = page.locator(MEET_HOOKS.rosterEntry).filter({ visible: true });
    if ((await shownEntries.count()) > 0) {
      note("roster", "already open");
      return;
    }
    await clickPast(page, page.locator(MEET_HOOKS.peopleButton).first(), note, PEOPLE_TIMEOUT_MS);
    await shownEntries.first().waitFor({ timeout: PEOPLE_TIMEOUT_MS });
    note("roster", "opened with peopleButton");
  },

  async leave(page: Page): Promise<void> {
    const leave = page.locator(MEET_HOOKS.leaveCall).first();
    if (await leave.isVisible().catch(() => false)) {
      await clickPast(page, leave, ignoreNote, 3_000).catch(() => {});
    }
  },
};

/** One role=button locator per text, named by it, visible ones only. */
function buttonsNamed(page: Page, texts: readonly string[]): Variants {
  return texts.map((text) => [
    text,
    page.getByRole("button", { name: exactly([text]) }).filter({ visible: true }),
  ]);
}

/**
 * Clicks `target` whatever opens over it: before each attempt the pop-ups on top are dismissed,
 * and an attempt that stays intercepted (by a toast, or a dialog that opened meanwhile) gives up
 * after CLICK_ATTEMPT_MS so the pop-ups are looked at again, until `timeoutMs`.
 */
async function clickPast(page: Page, target: Locator, note: JoinNote, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await dismissPopups(page, note);
    try {
      await target.click({ timeout: CLICK_ATTEMPT_MS });
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
  }
}

/**
 * Dismisses the pop-ups that can cover the form, whatever their order or stacking: each round
 * clicks the one on top (clickFirstClickable), so a stack takes a round per layer.
 */
async function dismissPopups(page: Page, note: JoinNote): Promise<void> {
  const popups = buttonsNamed(page, MEET_HOOKS.dismissButtonTexts);
  for (let round = 0; round < MAX_POPUP_ROUNDS; round++) {
    const dismissed = await clickFirstClickable(popups);
    if (dismissed === null) return;
    note("popup", dismissed);
  }
}
