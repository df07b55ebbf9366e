import type { Locator } from "playwright";
import type { JoinNote } from "./adapter.js";

/**
 * Helpers for hooks that come in several variants (texts, selectors), shared by the adapters'
 * Node-side code. The in-page snapshots cannot use them: they must stay self-contained.
 */

/** For adapters called without a `note`. */
export const ignoreNote: JoinNote = () => {};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Matches any of `texts`, whole. */
export const exactly = (texts: readonly string[]) => new RegExp(`^(${texts.map(escapeRegExp).join("|")})$`);

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
