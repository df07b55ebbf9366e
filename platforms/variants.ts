import type { Locator } from "playwright";
import type { JoinNote } from "./adapter.js";

/**
 * Helpers for hooks that come in several variants (texts, selectors), shared by the adapters'
 * Node-side code. The in-page snapshots cannot use them: they must stay self-contained.
 */

/** For adapters called without a `note`. */
export const ignoreNote: JoinNote = () => {};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Never matches anything. */
const NOTHING = /(?!)/;

/**
 * Matches any of `texts`, whole; no texts match nothing. (Joined naively, none would be `^()$`:
 * the empty name, which icon-only buttons on a real page have, so a click would land on any.)
 */
export const exactly = (texts: readonly string[]) =>
  texts.length === 0 ? NOTHING : new RegExp(`^(${texts.map(escapeRegExp).join("|")})$`);

/** Matches what starts with `text` (e.g. an option with a description after its title). */
export const startsWith = (text: string) => new RegExp(`^${escapeRegExp(text)}`);

/**
 * The alternatives of a CSS selector list: `"a, b[x='1,2']"` → `["a", "b[x='1,2']"]`. Commas inside
 * brackets, parentheses or quotes do not split.
 */
export function alternatives(selectorList: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = "";
  let start = 0;
  for (let i = 0; i < selectorList.length; i++) {
    const c = selectorList[i];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "[" || c === "(") depth++;
    else if (c === "]" || c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(selectorList.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(selectorList.slice(start).trim());
  return parts.filter((part) => part !== "");
}

/** One hook's variants, each named for the logs. */
export type Variants = ReadonlyArray<readonly [variant: string, locator: Locator]>;

/** The first variant with a visible element now (its name and that element), or null. */
export async function firstVisible(
  variants: Variants,
): Promise<{ variant: string; locator: Locator } | null> {
  for (const [variant, locator] of variants) {
    const first = locator.first();
    if (await first.isVisible().catch(() => false)) return { variant, locator: first };
  }
  return null;
}

/**
 * Where a click at the element's centre lands once it is scrolled into view: on the element
 * ("top"), on a dialog, banner or toast drawn over it ("covered"), or nowhere because the centre
 * stays outside the window ("outside": a dialog taller than a small window, fixed in place, has
 * its buttons below the fold where no pointer reaches).
 */
export type Placement = "top" | "covered" | "outside";

export async function placementOf(locator: Locator): Promise<Placement> {
  return locator
    .evaluate((element): Placement => {
      element.scrollIntoView({ block: "center", inline: "center" });
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) return "covered";
      const x = box.left + box.width / 2;
      const y = box.top + box.height / 2;
      if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) return "outside";
      const hit = document.elementFromPoint(x, y);
      return hit !== null && (hit === element || element.contains(hit)) ? "top" : "covered";
    })
    .catch((): Placement => "covered");
}

/** Whether a click at the element's centre reaches it (see placementOf). */
export async function isOnTop(locator: Locator): Promise<boolean> {
  return (await placementOf(locator)) === "top";
}

/** How long one click may wait for its target to become clickable before the next candidate is tried. */
const CANDIDATE_CLICK_MS = 1_000;

/**
 * Clicks one of `variants`: the visible ones that are on top first (in list order), then those
 * outside the window, then the covered ones (what covers them may go away). A click that is
 * intercepted or times out moves on to the next candidate instead of retrying the same covered
 * element. A button outside the window is pressed with Enter instead: the keyboard needs no
 * pointer to reach it, and only what is not under something else is pressed, so a modal's
 * backdrop still keeps the page behind it out of reach. Returns the variant clicked, or null when
 * none is visible or none could be clicked.
 */
export async function clickFirstClickable(
  variants: Variants,
  { clickTimeoutMs = CANDIDATE_CLICK_MS }: { clickTimeoutMs?: number } = {},
): Promise<string | null> {
  const visible: Array<{ variant: string; locator: Locator; placement: Placement }> = [];
  for (const [variant, locator] of variants) {
    const first = locator.first();
    if (await first.isVisible().catch(() => false)) {
      visible.push({ variant, locator: first, placement: await placementOf(first) });
    }
  }
  const order: Placement[] = ["top", "outside", "covered"];
  const ordered = order.flatMap((placement) => visible.filter((v) => v.placement === placement));
  for (const candidate of ordered) {
    try {
      if (candidate.placement === "outside" && (await isButton(candidate.locator))) {
        await candidate.locator.press("Enter", { timeout: clickTimeoutMs });
      } else {
        await candidate.locator.click({ timeout: clickTimeoutMs });
      }
      return candidate.variant;
    } catch {
      if (await landedAnyway(candidate.locator)) return candidate.variant;
      // Covered or disabled meanwhile: the next candidate may be what covers it.
    }
  }
  return null;
}

/**
 * After a click on `target` (shown before it) threw: whether it landed all the same, as `target`
 * is gone now. On a starved page a click's own handler can hold the page past the click's timeout
 * (answering "Allow" by starting the devices; Zoom's Join disabling itself and preparing audio),
 * and Playwright throws although the page went on.
 */
export async function landedAnyway(target: Locator): Promise<boolean> {
  return !(await target.isVisible().catch(() => false));
}

/** A button Enter activates: a <button> or an element with the button role. */
async function isButton(locator: Locator): Promise<boolean> {
  return locator
    .evaluate((element) => element.tagName === "BUTTON" || element.getAttribute("role") === "button")
    .catch(() => false);
}

/** What a Playwright error says in short: its first line, and what covered the target if anything did. */
export function shortReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const summary = (message.split("\n")[0] ?? "").replace(/\.$/, "");
  const cover = /(<[^\n]*?) intercepts pointer events/.exec(message)?.[1];
  return cover ? `${summary}; ${cover} covers it` : summary;
}
