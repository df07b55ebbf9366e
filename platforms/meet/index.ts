import type { Locator, Page } from "playwright";
import type { MeetingInfo } from "../../src/core/index.js";
import type { JoinNote, PlatformAdapter } from "../adapter.js";
import { exactly, ignoreNote } from "../variants.js";
import { MEET_HOOKS } from "./selectors.js";
import { meetSnapshot } from "./snapshot.js";

const FORM_TIMEOUT_MS = 15_000;

export const meetAdapter: PlatformAdapter = {
  platform: "google",
  hooks: MEET_HOOKS,
  snapshot: meetSnapshot,

  meetingUrl(info: MeetingInfo): string {
    if (!info.meetingUrl) throw new Error("a Google Meet bot needs meetingInfo.meetingUrl");
    return info.meetingUrl;
  },

  async join(page: Page, { displayName, note = ignoreNote }): Promise<void> {
    await dismissPopups(page, note);
    const name = page.locator(MEET_HOOKS.nameInput);
    await name.fill(displayName, { timeout: FORM_TIMEOUT_MS });
    // Joining muted and camera-off: the bot only listens. The buttons flip their label once
    // clicked, so a missing "Turn off" button means it is already off.
    const toggles = [
      ["microphone", MEET_HOOKS.microphoneOff],
      ["camera", MEET_HOOKS.cameraOff],
    ] as const;
    for (const [hook, selector] of toggles) {
      const toggle = page.locator(selector).first();
      if (await toggle.isVisible()) {
        await toggle.click();
        note(hook, `clicked ${selector}`);
      } else {
        note(hook, `no ${selector}: already off`);
      }
    }
    const cta = page.getByRole("button", { name: exactly(MEET_HOOKS.joinButtonTexts) }).first();
    await cta.waitFor({ timeout: FORM_TIMEOUT_MS });
    note("joinButton", await accessibleText(cta).catch(() => "?"));
    await cta.click({ timeout: FORM_TIMEOUT_MS });
  },

  /** Meet renders the participant list only while the People panel is open. */
  async afterAdmission(page: Page): Promise<void> {
    if (await page.locator(MEET_HOOKS.roster).first().isVisible()) return;
    await page.locator(MEET_HOOKS.peopleButton).first().click({ timeout: 5_000 });
  },

  async leave(page: Page): Promise<void> {
    const leave = page.locator(MEET_HOOKS.leaveCall).first();
    if (await leave.isVisible().catch(() => false)) await leave.click({ timeout: 3_000 }).catch(() => {});
  },
};

async function dismissPopups(page: Page, note: JoinNote): Promise<void> {
  const popup = page.getByRole("button", { name: exactly(MEET_HOOKS.dismissButtonTexts) });
  for (const button of await popup.all()) {
    if (!(await button.isVisible())) continue;
    const text = await accessibleText(button).catch(() => "?");
    await button.click().catch(() => {});
    note("popup", text);
  }
}

/** A button's name as its role locator matched it: its aria-label, else its text. */
async function accessibleText(button: Locator): Promise<string> {
  const timeout = 2_000;
  return (
    (await button.getAttribute("aria-label", { timeout })) ?? (await button.innerText({ timeout })).trim()
  );
}
