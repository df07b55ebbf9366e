import type { Page } from "playwright";
import type { MeetingInfo } from "../../src/core/index.js";
import type { PlatformAdapter } from "../adapter.js";
import { MEET_HOOKS } from "./selectors.js";
import { meetSnapshot } from "./snapshot.js";

export const meetAdapter: PlatformAdapter = {
  platform: "google",
  hooks: MEET_HOOKS,
  snapshot: meetSnapshot,

  meetingUrl(info: MeetingInfo): string {
    if (!info.meetingUrl) throw new Error("a Google Meet bot needs meetingInfo.meetingUrl");
    return info.meetingUrl;
  },

  async join(page: Page, { displayName }): Promise<void> {
    await dismissPopups(page);
    const name = page.locator(MEET_HOOKS.nameInput);
    await name.fill(displayName, { timeout: 15_000 });
    // Joining muted and camera-off: the bot only listens. The buttons flip their label once
    // clicked, so a missing "Turn off" button means it is already off.
    for (const selector of [MEET_HOOKS.microphoneOff, MEET_HOOKS.cameraOff]) {
      const toggle = page.locator(selector).first();
      if (await toggle.isVisible()) await toggle.click();
    }
    const cta = page.getByRole("button", { name: exactly(MEET_HOOKS.joinButtonTexts) }).first();
    await cta.click({ timeout: 15_000 });
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

async function dismissPopups(page: Page): Promise<void> {
  const popup = page.getByRole("button", { name: exactly(MEET_HOOKS.dismissButtonTexts) });
  for (const button of await popup.all()) {
    if (await button.isVisible()) await button.click().catch(() => {});
  }
}

function exactly(texts: readonly string[]): RegExp {
  return new RegExp(`^(${texts.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})$`);
}
