import type { Page } from "playwright";
import type { CaptionsOutcome, LiveNote } from "../live.js";
import { appears, isPresent, isVisible, menuItem, preferredItem, shown } from "../live-actions.js";
import { ZOOM_LIVE_HOOKS } from "./selectors.js";

const { captions } = ZOOM_LIVE_HOOKS;
/** From a click to the menu or the subtitles it shows. */
const STEP_MS = 4_000;
/** Clicks on captions items: "Captions" may open a submenu whose "Show Captions" shows them. */
const MAX_ITEM_CLICKS = 3;

/**
 * Zoom: More → "Captions" (the first time it enables live captions, with a toast), after that
 * "Show Captions"; confirmed by the subtitles container. No item means the host has not enabled
 * captions. Zoom lets a guest pick no caption language: `language` is not used.
 */
export async function turnOnZoomCaptions(page: Page, { note }: { note: LiveNote }): Promise<CaptionsOutcome> {
  const region = page.locator(captions.region);
  if (await isPresent(region)) {
    note("captions", "already shown");
    return { on: true, language: null };
  }
  const more = shown(page, captions.moreButton);
  if (!(await isVisible(more))) {
    // Zoom hides its footer while the mouse rests: moving it brings the footer back.
    const size = page.viewportSize() ?? { width: 1280, height: 720 };
    await page.mouse.move(size.width / 2, size.height - 40);
    await more.waitFor({ state: "visible", timeout: STEP_MS }).catch(() => {});
    if (!(await isVisible(more))) return { on: false, reason: "Zoom's footer shows no More button" };
  }
  const show = menuItem(page, ["menuitem"], captions.showItemTexts);
  const hide = menuItem(page, ["menuitem"], captions.shownItemTexts);
  const menu = page.getByRole("menu").filter({ visible: true }).first();
  /** Whether the menu that opened offers a captions item (it has none where captions are off). */
  const offered = async () => {
    await menu.waitFor({ state: "visible", timeout: STEP_MS }).catch(() => {});
    return (await isVisible(show)) || (await isVisible(hide));
  };
  for (let click = 0; click < MAX_ITEM_CLICKS; click++) {
    let item = await preferredItem(page, ["menuitem"], captions.showItemTexts);
    if (!item && !(await isVisible(hide))) {
      await more.click({ timeout: STEP_MS });
      if (!(await offered())) {
        await closeMenu(page, more);
        return {
          on: false,
          reason: "Zoom's More menu has no captions item: the host has not enabled captions",
        };
      }
      item = await preferredItem(page, ["menuitem"], captions.showItemTexts);
    }
    if (await isVisible(hide)) {
      // Shown already (the subtitles may be somewhere the bot does not look): leave them so.
      await closeMenu(page, more);
      note("captionsItem", "Hide Captions: already shown");
      return { on: true, language: null };
    }
    if (!item) continue;
    await item.locator.click({ timeout: STEP_MS });
    note("captionsItem", item.label);
    // The subtitles, or a submenu with a more specific item ("Captions" → "Show Captions").
    const further = captions.showItemTexts.slice(0, captions.showItemTexts.indexOf(item.label));
    const next = further.length > 0 ? region.or(menuItem(page, ["menuitem"], further)) : region;
    await appears(next, STEP_MS);
    if (await isPresent(region)) return { on: true, language: null };
  }
  await closeMenu(page, more);
  return { on: false, reason: `Zoom's captions did not show (no ${captions.region})` };
}

/** Closes a More menu left open (the button toggles it). */
async function closeMenu(page: Page, more: ReturnType<typeof shown>): Promise<void> {
  if (await isVisible(page.getByRole("menu").filter({ visible: true }).first())) {
    await more.click({ timeout: STEP_MS }).catch(() => {});
  }
}
