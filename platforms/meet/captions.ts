import type { Page } from "playwright";
import type { CaptionsOutcome, LiveNote } from "../live.js";
import { appears, isDisabled, isPresent, isVisible, shown } from "../live-actions.js";
import { MEET_LIVE_HOOKS } from "./selectors.js";

const { captions } = MEET_LIVE_HOOKS;
/** From the click (or the shortcut) to the button's label flipping. */
const CONFIRM_MS = 5_000;

/**
 * Meet: "Turn on captions" in the toolbar, confirmed by "Turn off captions" (or the captions
 * region); the shortcut `c` where the toolbar shows no button. A disabled button means the host
 * switched captions off. With `language`, the caption language is picked from Meet's list.
 */
export async function turnOnMeetCaptions(
  page: Page,
  { language, note }: { language?: string; note: LiveNote },
): Promise<CaptionsOutcome> {
  // "Turn off captions" anywhere (a folded toolbar hides it), or the region: captions are on.
  const on = page.locator(captions.turnOffButton).or(page.locator(captions.region));
  if (!(await isPresent(on))) {
    const button = shown(page, captions.turnOnButton);
    if (await isVisible(button)) {
      if (await isDisabled(button)) {
        return { on: false, reason: "Meet's captions button is disabled: captions are off for this meeting" };
      }
      await button.click({ timeout: CONFIRM_MS });
      note("captionsButton", "clicked turnOnButton");
    } else {
      // Pressed on the page itself, never in a text field (it would type there).
      await page.locator("body").press(captions.shortcutText);
      note("captionsButton", `none shown: pressed "${captions.shortcutText}"`);
    }
    if (!(await appears(on, CONFIRM_MS)))
      return { on: false, reason: 'Meet\'s captions did not turn on (no "Turn off captions")' };
  } else {
    note("captionsButton", "already on");
  }
  return { on: true, language: language ? await pickLanguage(page, language, note) : null };
}

/**
 * Picks `language` in Meet's caption language list: the option of that very code, else the first
 * of that language (`en` → `en-US`). Answers the code chosen, or null when the list does not offer it.
 */
async function pickLanguage(page: Page, language: string, note: LiveNote): Promise<string | null> {
  const options = page.locator(captions.languageOption);
  const codes = await options.evaluateAll((items) =>
    items.map((item) => item.getAttribute("data-value") ?? ""),
  );
  const wanted = language.toLowerCase();
  const exact = codes.findIndex((code) => code.toLowerCase() === wanted);
  const index =
    exact >= 0 ? exact : codes.findIndex((code) => code.toLowerCase().split("-")[0] === wanted.split("-")[0]);
  const code = codes[index];
  if (code === undefined) {
    note("captionsLanguage", `"${language}" not offered (${codes.join(", ") || "no list"})`);
    return null;
  }
  await options.nth(index).click({ timeout: CONFIRM_MS });
  note("captionsLanguage", code);
  return code;
}
