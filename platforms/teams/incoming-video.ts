import type { Page } from "playwright";
import type { LiveNote } from "../live.js";
import { isVisible, menuItem, shown } from "../live-actions.js";
import { TEAMS_LIVE_HOOKS } from "./selectors.js";

const { captions, incomingVideo } = TEAMS_LIVE_HOOKS;
/** From a click to the menu it opens. */
const STEP_MS = 4_000;

/**
 * Teams: More → "Turn off incoming video", for an audio-only bot: the client then decodes and
 * draws no participant's video. The menu offers "Turn on incoming video" once it is off, which
 * leaves it as it is.
 */
export async function turnOffTeamsIncomingVideo(
  page: Page,
  { note }: { note: LiveNote },
): Promise<string | null> {
  const more = shown(page, captions.moreButton);
  if (!(await isVisible(more))) return "Teams' toolbar shows no More button";
  const off = menuItem(page, ["menuitem"], incomingVideo.offItemTexts);
  const already = menuItem(page, ["menuitem"], incomingVideo.offAlreadyTexts);
  try {
    await more.click({ timeout: STEP_MS });
    const item = off.or(already).first();
    await item.waitFor({ state: "visible", timeout: STEP_MS });
    if (await isVisible(off)) {
      await off.click({ timeout: STEP_MS });
      note("incomingVideoItem", incomingVideo.offItemTexts.join(" / "));
      return null;
    }
    // Already off: close the menu the click opened.
    await more.click({ timeout: STEP_MS });
    return null;
  } catch (error) {
    return `Teams' More menu has no incoming video item (${(error as Error).message.split("\n")[0]})`;
  }
}
