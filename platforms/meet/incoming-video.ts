import type { Locator, Page } from "playwright";
import type { LiveNote } from "../live.js";
import { isVisible, menuItem, shown } from "../live-actions.js";
import { exactly } from "../variants.js";
import { MEET_LIVE_HOOKS } from "./selectors.js";

const hooks = MEET_LIVE_HOOKS.incomingVideo;
/** From a click to what it opens. */
const STEP_MS = 4_000;

/**
 * Meet: More options → Settings → Video → Receive resolution → "Audio only", then closes the
 * dialog. Meet has no menu item for it (unlike Teams and Zoom): the receive resolution is its
 * only switch for all incoming video at once. Answers null when done (or already audio only),
 * else why not; never throws.
 */
export async function turnOffMeetIncomingVideo(
  page: Page,
  { note }: { note: LiveNote },
): Promise<string | null> {
  const more = shown(page, hooks.moreButton);
  if (!(await isVisible(more))) return "Meet's toolbar shows no More options button";
  const dialog = page.locator(hooks.dialog).filter({ visible: true }).last();
  let step = "the More options menu";
  try {
    await more.click({ timeout: STEP_MS });
    step = "its Settings item";
    await menuItem(page, ["menuitem"], hooks.settingsItemTexts).click({ timeout: STEP_MS });
    step = "the settings' Video tab";
    await dialog.getByRole("tab", { name: exactly(hooks.videoTabTexts) }).click({ timeout: STEP_MS });
    step = "the Receive resolution list";
    const resolution = dialog.getByRole("combobox", { name: exactly(hooks.receiveResolutionTexts) });
    const audioOnly = new RegExp(exactly(hooks.audioOnlyTexts).source.replace("$", ""));
    if (!audioOnly.test((await resolution.textContent({ timeout: STEP_MS })) ?? "")) {
      await resolution.click({ timeout: STEP_MS });
      step = "its Audio only choice";
      await page.getByRole("option", { name: exactly(hooks.audioOnlyTexts) }).click({ timeout: STEP_MS });
      note("incomingVideoItem", hooks.audioOnlyTexts.join(" / "));
    }
    step = "the settings' close button";
    await dialog.locator(hooks.closeButton).first().click({ timeout: STEP_MS });
    return null;
  } catch (error) {
    await closeSettings(page, dialog);
    return `Meet: no ${step} (${(error as Error).message.split("\n")[0]})`;
  }
}

/**
 * After a failed step: a menu or the settings dialog left open would cover the toolbar (Leave
 * among it). Its close button where shown, else Escape (a menu or an open list); Escape once more
 * if the dialog is still there.
 */
async function closeSettings(page: Page, dialog: Locator): Promise<void> {
  const close = dialog.locator(hooks.closeButton).first();
  if (await isVisible(close)) await close.click({ timeout: STEP_MS }).catch(() => {});
  else await page.keyboard.press("Escape").catch(() => {});
  if (await isVisible(dialog)) await page.keyboard.press("Escape").catch(() => {});
}
