import { transform } from "lightningcss";
import { describe, expect, it } from "vitest";
import type { SignInHooks } from "../../platforms/adapter.js";
import * as meet from "../../platforms/meet/selectors.js";
import * as teams from "../../platforms/teams/selectors.js";
import * as zoom from "../../platforms/zoom/selectors.js";

/**
 * Every hook of every platform's selectors.ts, checked without a browser, so that a
 * typo fails here in a second rather than in a customer's meeting. Selectors go through
 * lightningcss, a standards-following CSS parser: a syntax error throws, and a pseudo-class it does
 * not know (a misspelt `:not`, or Playwright-only syntax like `:has-text`, which the in-page
 * snapshots' querySelectorAll would reject) is a warning, which fails too.
 *
 * The convention of the selectors files: a key ending in one of TEXT_KEY's words, or anything under
 * `texts`, holds page text (matched against rendered text or accessible names); every other string,
 * or list of strings, is a CSS selector.
 */
const TEXT_KEY = /(Text|Texts|Label|Labels|Title|Pattern|Prefix|Class|Markers)$/;

interface Hook {
  path: string;
  value: string;
  kind: "selector" | "text" | "pattern" | "class";
}

function collectHooks(value: unknown, path: string, inTexts: boolean): Hook[] {
  if (typeof value === "string") {
    const key =
      path
        .split(".")
        .at(-1)
        ?.replace(/\[\d+\]$/, "") ?? "";
    if (key.endsWith("Pattern")) return [{ path, value, kind: "pattern" }];
    if (key.endsWith("Class")) return [{ path, value, kind: "class" }];
    return [{ path, value, kind: inTexts || TEXT_KEY.test(key) ? "text" : "selector" }];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => collectHooks(item, `${path}[${i}]`, inTexts));
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, item]) =>
      collectHooks(item, path ? `${path}.${key}` : key, inTexts || key === "texts"),
    );
  }
  return [];
}

/** Throws with the parser's words when `selector` is not a selector list a browser accepts. */
function checkSelector(selector: string): void {
  const result = transform({
    filename: "selector.css",
    code: Buffer.from(`${selector} {}`),
    errorRecovery: false,
  });
  if (result.warnings.length > 0) throw new Error(result.warnings.map((w) => w.message).join("; "));
}

function checkHook(hook: Hook): void {
  if (hook.value.trim() === "") throw new Error("empty");
  switch (hook.kind) {
    case "selector":
      return checkSelector(hook.value);
    case "pattern":
      new RegExp(hook.value, "i");
      return;
    case "class":
      if (!/^-?[_a-zA-Z][\w-]*$/.test(hook.value)) throw new Error("not a class name");
      return;
    case "text":
      if (hook.value !== hook.value.trim()) throw new Error("leading or trailing space");
  }
}

const PLATFORMS = { meet, zoom, teams };

/** The sign-in hooks (`*_SIGN_IN`: a page address and cookie names) are no page hooks: checked apart. */
const isSignIn = (name: string) => name.endsWith("_SIGN_IN");

describe.each(Object.entries(PLATFORMS))("%s selectors.ts", (_platform, module) => {
  const hooks = collectHooks(
    Object.fromEntries(Object.entries(module).filter(([name]) => !isSignIn(name))),
    "",
    false,
  );

  it("has sign-in hooks: an https page, a domain, cookie names a browser accepts", () => {
    const signIns = Object.entries(module).filter(([name]) => isSignIn(name));
    expect(signIns).toHaveLength(1);
    const [, signIn] = signIns[0] as [string, SignInHooks];
    expect(new URL(signIn.url).protocol).toBe("https:");
    expect(signIn.cookieDomain).toMatch(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/);
    expect(signIn.sessionCookies.length).toBeGreaterThan(0);
    // RFC 6265 cookie names: tokens, no separators.
    for (const name of signIn.sessionCookies) expect(name).toMatch(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/);
  });

  it("has hooks of both kinds to check", () => {
    expect(hooks.filter((h) => h.kind === "selector").length).toBeGreaterThan(8);
    expect(hooks.filter((h) => h.kind === "text").length).toBeGreaterThan(3);
  });

  it.each(hooks.map((hook) => [hook.path, hook] as const))("%s", (_path, hook) => {
    checkHook(hook);
  });
});

describe("the selector check", () => {
  it.each([
    ["an unclosed attribute", 'button[aria-label="Leave"'],
    ["a misspelt pseudo-class", "button:nott(.disabled)"],
    ["Playwright-only syntax", 'button:has-text("Join")'],
    ["Playwright's text engine", "text=Join now"],
    ["a dangling combinator", "#wc-footer >"],
    ["an id that starts with a digit", "#1-participant"],
  ])("refuses %s", (_what, selector) => {
    expect(() => checkSelector(selector)).toThrow();
  });

  it("accepts what the adapters use", () => {
    expect(() =>
      checkSelector('input[placeholder*="passcode" i], [data-tid^="participantsInCall-"] span[title]'),
    ).not.toThrow();
  });

  it("tells texts from selectors by key", () => {
    const kinds = collectHooks(
      { joinButtonTexts: ["Join now"], texts: { ended: ["x"] }, leave: "a" },
      "",
      false,
    );
    expect(kinds.map((h) => `${h.path}:${h.kind}`)).toEqual([
      "joinButtonTexts[0]:text",
      "texts.ended[0]:text",
      "leave:selector",
    ]);
  });
});
