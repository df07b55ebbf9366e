import type { Locator, Page } from "playwright";
import type { LiveNote } from "./live.js";
import { isVisible, menuItem, shown } from "./live-actions.js";

/** From a click to the menu it opens. */
const STEP_MS = 4_000;
/**
 * Rounds over the menus while a button could not be clicked: just after admission a dialog may
 * still lie over the toolbar (Zoom's "Join Audio by Computer" comes up to 15 s late).
 */
const ROUNDS = 3;

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
    let misses: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const outcome = await tryMenus(page, hooks, note);
      if (outcome.done) return null;
      misses = outcome.misses;
      if (!outcome.covered) break;
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

/** One round over the menus: done, or what each lacked (`covered`: a click did not go through). */
async function tryMenus(page: Page, hooks: IncomingVideoMenuHooks, note: LiveNote) {
  const off = menuItem(page, ["menuitem"], hooks.offItemTexts);
  const already = menuItem(page, ["menuitem"], hooks.offAlreadyTexts);
  const misses: string[] = [];
  let covered = false;
  for (const selector of hooks.menuButtons) {
    const button = shown(page, selector);
    if (!(await isVisible(button))) {
      misses.push(`no ${selector}`);
      continue;
    }
    try {
      await press(button);
    } catch (error) {
      covered = true;
      misses.push(`${selector}: ${(error as Error).message.split("\n")[0]}`);
      continue;
    }
    try {
      // A menu without the item is told at once: its items come with it.
      const menu = page.getByRole("menu").filter({ visible: true });
      await off.or(already).or(menu).first().waitFor({ state: "visible", timeout: STEP_MS });
      if (await isVisible(off)) {
        await press(off);
        note("incomingVideoItem", hooks.offItemTexts.join(" / "));
        return { done: true, misses, covered };
      }
      // Off already, or not in this menu: close the menu the click opened.
      const offAlready = await isVisible(already);
      await press(button);
      if (offAlready) return { done: true, misses, covered };
      misses.push(`${selector}'s menu has no ${hooks.offItemTexts.join(" / ")}`);
    } catch (error) {
      misses.push(`${selector}: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  return { done: false, misses, covered };
}
