import type { Locator, Page } from "playwright";
import type { LiveNote } from "./live.js";
import { isVisible, menuItem, shown } from "./live-actions.js";

/** From a click to the menu it opens. */
const STEP_MS = 4_000;

/** A platform's menu switch for the other participants' video (the user's own view only). */
export interface IncomingVideoMenuHooks {
  /** The buttons whose menus may hold the switch, in the order tried (builds place it differently). */
  menuButtons: readonly string[];
  /** The item that turns incoming video off. */
  offItemTexts: readonly string[];
  /** The same item once incoming video is off: nothing to do. */
  offAlreadyTexts: readonly string[];
}

/**
 * The adapter step "turn off incoming video" for platforms that have it as a menu item (Teams'
 * More, Zoom's More or View): opens each menu in turn until one shows the item, clicks it, and
 * closes a menu it opened for nothing. Answers null when done (or off already), else why not.
 */
export function incomingVideoByMenu(hooks: IncomingVideoMenuHooks, platform: string) {
  return async (page: Page, { note }: { note: LiveNote }): Promise<string | null> => {
    const off = menuItem(page, ["menuitem"], hooks.offItemTexts);
    const already = menuItem(page, ["menuitem"], hooks.offAlreadyTexts);
    const misses: string[] = [];
    for (const selector of hooks.menuButtons) {
      const button = shown(page, selector);
      if (!(await isVisible(button))) {
        misses.push(`no ${selector}`);
        continue;
      }
      try {
        await press(button);
        // A menu without the item is told at once: its items come with it.
        const menu = page.getByRole("menu").filter({ visible: true });
        await off.or(already).or(menu).first().waitFor({ state: "visible", timeout: STEP_MS });
        if (await isVisible(off)) {
          await press(off);
          note("incomingVideoItem", hooks.offItemTexts.join(" / "));
          return null;
        }
        // Off already, or not in this menu: close the menu the click opened.
        const offAlready = await isVisible(already);
        await press(button);
        if (offAlready) return null;
        misses.push(`${selector}'s menu has no ${hooks.offItemTexts.join(" / ")}`);
      } catch (error) {
        misses.push(`${selector}: ${(error as Error).message.split("\n")[0]}`);
        // A menu left open would cover the toolbar (Leave among it).
        if (await isVisible(page.getByRole("menu").filter({ visible: true }).first())) {
          await page.keyboard.press("Escape").catch(() => {});
        }
      }
    }
    return `${platform}: no incoming video switch (${misses.join("; ")})`;
  };
}

/**
 * A click, or where something lies over the control (on the small window of an audio-only bot
 * Zoom's side panel overlaps the footer) the click event alone, which the menus answer the same.
 */
async function press(locator: Locator): Promise<void> {
  await locator
    .click({ timeout: STEP_MS })
    .catch(() => locator.dispatchEvent("click", undefined, { timeout: STEP_MS }));
}
