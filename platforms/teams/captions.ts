import type { Page } from "playwright";
import type { CaptionsOutcome, LiveNote } from "../live.js";
import {
  appears,
  isDisabled,
  isPresent,
  isVisible,
  menuItem,
  preferredItem,
  READ_MS,
  shown,
} from "../live-actions.js";
import { TEAMS_LIVE_HOOKS } from "./selectors.js";

const { captions } = TEAMS_LIVE_HOOKS;
/** From a click to the menu, submenu or captions it shows. */
const STEP_MS = 4_000;
/** More, the submenu, the item: a few clicks at most. */
const MAX_STEPS = 5;

/**
 * Teams: More → "Language and speech" → "Show live captions" (an anonymous guest: More →
 * "Captions", a checkbox item), or a toolbar captions button where the build has one; confirmed by
 * the captions wrapper. Captions are per user, so the bot can turn its own on unless the host or
 * tenant switched them off (the item is disabled). `language` is not used: the spoken language is
 * the meeting's.
 */
export async function turnOnTeamsCaptions(
  page: Page,
  { note }: { note: LiveNote },
): Promise<CaptionsOutcome> {
  const region = page.locator(captions.region);
  const shownNow = () => appears(region, STEP_MS);
  const on: CaptionsOutcome = { on: true, language: null };
  if (await isPresent(region)) return on;
  const button = shown(page, captions.captionsButton);
  if ((await isVisible(button)) && !(await isDisabled(button))) {
    await button.click({ timeout: STEP_MS });
    note("captionsButton", captions.captionsButton);
    if (await shownNow()) return on;
  }
  const more = shown(page, captions.moreButton);
  if (!(await isVisible(more))) return { on: false, reason: "Teams' toolbar shows no More button" };
  const show = menuItem(page, ["menuitem", "menuitemcheckbox"], captions.showItemTexts);
  const hide = menuItem(page, ["menuitem", "menuitemcheckbox"], captions.shownItemTexts);
  const submenu = menuItem(page, ["menuitem"], captions.languageMenuTexts);
  const anyItem = show.or(hide).or(submenu).first();
  const off = async (reason: string): Promise<CaptionsOutcome> => {
    await closeMenus(page, more);
    return { on: false, reason };
  };
  for (let step = 0; step < MAX_STEPS; step++) {
    if (await isPresent(region)) break;
    if (await isVisible(hide)) {
      await closeMenus(page, more);
      break;
    }
    const item = await preferredItem(page, ["menuitem", "menuitemcheckbox"], captions.showItemTexts);
    if (item) {
      if (await isDisabled(item.locator))
        return off("Teams' captions item is disabled: captions are off for this meeting");
      if ((await item.locator.getAttribute("aria-checked", { timeout: READ_MS })) === "true") {
        await closeMenus(page, more);
        break;
      }
      await item.locator.click({ timeout: STEP_MS });
      note("captionsItem", item.label);
      if (await shownNow()) return on;
      continue;
    }
    if (await isVisible(submenu)) {
      await submenu.click({ timeout: STEP_MS });
      note("captionsMenu", captions.languageMenuTexts.join(" / "));
      await show
        .or(hide)
        .first()
        .waitFor({ state: "visible", timeout: STEP_MS })
        .catch(() => {});
      continue;
    }
    await more.click({ timeout: STEP_MS });
    const offered = await anyItem.waitFor({ state: "visible", timeout: STEP_MS }).then(
      () => true,
      () => false,
    );
    if (!offered) return off("Teams' More menu has no captions item");
  }
  return (await shownNow()) ? on : off(`Teams' captions did not show (no ${captions.region})`);
}

/** Closes a More menu left open (the button toggles it). */
async function closeMenus(page: Page, more: ReturnType<typeof shown>): Promise<void> {
  if (await isVisible(page.getByRole("menu").filter({ visible: true }).first())) {
    await more.click({ timeout: STEP_MS }).catch(() => {});
  }
}
