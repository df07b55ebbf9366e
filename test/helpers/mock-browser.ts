import { type Browser, chromium, type Locator, type Page } from "playwright";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import type { MeetingState, RemoteParticipant } from "../../fixtures/host/meetings.js";
import { type MockHost, startMockHost } from "../../fixtures/host/server.js";
import type { PageSnapshot, PlatformAdapter } from "../../platforms/adapter.js";
import type { Platform } from "../../src/core/index.js";
import { FEATURE_ARGS } from "../../src/runner/chromium-features.js";

/**
 * One headless Chromium against one mock host, for the tests that drive a mock page directly
 * (test/e2e/*-mock-page.test.ts). `useMockBrowser(platform)` registers the hooks: the host and
 * the browser, and one page reset between tests, live for the file. `host` and `page` are live
 * bindings: read them inside tests, where they are set.
 */

/** Bounded waits: the page reacts to pushed events, so these only matter when something is broken. */
export const WAIT = { timeout: 10_000 };

/** Headless and quiet, with fake devices and audio that plays without a user gesture. */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
  "--autoplay-policy=no-user-gesture-required",
  "--use-fake-ui-for-media-stream",
  "--use-fake-device-for-media-stream",
  // Fewer processes, as the runner's browser has: a page file opens ~36 contexts, and a renderer
  // per site and per context cost the zoom page file 122 Chromium processes and 132 core-seconds
  // (83 and 120 with these).
  "--in-process-gpu",
  "--disable-site-isolation-trials",
  ...FEATURE_ARGS,
];

/**
 * Debian's Chromium, headless, with the flags above (never a downloaded browser) and `extraArgs`
 * (e.g. the files the fake devices play).
 */
export function launchTestChromium(
  options: { ignoreDefaultArgs?: string[]; extraArgs?: string[] } = {},
): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.MEETBOT_CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: [...CHROMIUM_ARGS, ...(options.extraArgs ?? [])],
    ignoreDefaultArgs: options.ignoreDefaultArgs,
  });
}

export let host: MockHost;
export let page: Page;
let browser: Browser;

/** Registers the file's hooks; answers the control API of the platform's meetings on the host. */
export function useMockBrowser(platform: Platform) {
  let shared: SharedPage;
  beforeAll(async () => {
    host = await startMockHost();
    browser = await launchTestChromium();
    shared = await sharedPage(browser);
    page = shared.page;
  });

  afterAll(async () => {
    await browser?.close();
    await host?.close();
  });

  afterEach(async () => {
    page = await shared.reset();
  });

  return { control: controlFor(platform) };
}

const VIEWPORT = { width: 1280, height: 720 };

/** A file's one page (see sharedPage); `reset` answers the page to use from then on. */
export interface SharedPage {
  readonly page: Page;
  reset(): Promise<Page>;
}

/**
 * One context and page for all of a file's tests, reset after each to what a new one would be: a
 * new context and page cost more than most tests' steps (the four mock-page files: 475 → 289
 * core-seconds with one page each, measured). The reset leaves the test's document for
 * `about:blank` (its media, timers and audio go with it), closes other pages, clears cookies,
 * storage and permissions, and restores the viewport; a page a test broke is replaced.
 */
export async function sharedPage(
  browser: Browser,
  /** Run on the page, and on any page that replaces it (e.g. an init script). */
  prepare: (page: Page) => Promise<unknown> = async () => {},
): Promise<SharedPage> {
  const open = async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    await prepare(page);
    return { context, page };
  };
  let { context, page } = await open();
  const clean = async () => {
    if (page.isClosed()) throw new Error("the page was closed");
    for (const other of context.pages()) if (other !== page) await other.close();
    await page.goto("about:blank");
    await context.setStorageState({ cookies: [], origins: [] });
    await context.clearPermissions();
    await page.setViewportSize(VIEWPORT);
  };
  return {
    get page() {
      return page;
    },
    async reset() {
      await clean().catch(async () => {
        // Unusable (crashed, or closed by the test): a new context and page.
        await context.close().catch(() => {});
        ({ context, page } = await open());
      });
      return page;
    },
  };
}

/** The host's answer, loosely: a meeting's state or a participant. */
export type Answer = MeetingState & RemoteParticipant;

/**
 * The mock host's control API for one platform's meetings: `control(method, id, suffix, body)`
 * calls `/control/meetings/<platform>/<id><suffix>` and expects a 2xx.
 */
function controlFor(platform: Platform) {
  return async (method: string, id: string, suffix = "", body?: unknown): Promise<Answer> => {
    const response = await fetch(`${host.url}/control/meetings/${platform}/${id}${suffix}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.ok, `${method} ${suffix || "meeting"}: ${response.status}`).toBe(true);
    return response.status === 204 ? ({} as Answer) : response.json();
  };
}

/** Text on the page, matched exactly. */
export const text = (value: string) => page.getByText(value, { exact: true });

/**
 * The adapter's own reading of the page, run in it exactly as the runner's PageWatcher runs it
 * (vitest's transform may wrap functions in esbuild's __name helper, as page-watcher.ts notes).
 */
export function snapshotOf(
  adapter: Pick<PlatformAdapter, "snapshot" | "hooks">,
  selfName = "Meetbot",
): Promise<PageSnapshot> {
  const hooks = JSON.stringify({ ...adapter.hooks, selfName });
  return page.evaluate(
    `(() => { var __name = (f) => f; return (${adapter.snapshot.toString()})(${hooks}); })()`,
  );
}

/** What an adapter's join noted (`opts.note`), as [hook, variant] pairs in order. */
export function collectNotes() {
  const notes: Array<[string, string]> = [];
  return { notes, note: (hook: string, variant: string) => void notes.push([hook, variant]) };
}

/** One caption entry as a page showed it: its speaker (a name, or an avatar's src) and every text it had, in order. */
export interface CaptionEntry {
  speaker: string;
  texts: string[];
}

/**
 * Records, from now on, every caption entry `target` shows (`block`: an entry; `speaker` and
 * `text`: inside it) and each distinct text it had, so a test can see an entry grow and be
 * rewritten in place. Read with `captionEntries`.
 */
export function watchCaptions(target: Page, hooks: { block: string; speaker: string; text: string }) {
  return target.evaluate((h) => {
    const entries: CaptionEntry[] = [];
    const known = new Map<Element, CaptionEntry>();
    const look = () => {
      for (const block of document.querySelectorAll(h.block)) {
        let entry = known.get(block);
        if (!entry) {
          const speaker = block.querySelector(h.speaker);
          entry = { speaker: speaker?.getAttribute("src") ?? speaker?.textContent ?? "", texts: [] };
          known.set(block, entry);
          entries.push(entry);
        }
        const text = block.querySelector(h.text)?.textContent ?? "";
        if (text !== "" && entry.texts.at(-1) !== text) entry.texts.push(text);
      }
    };
    new MutationObserver(look).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
    });
    (window as unknown as { captionEntries: CaptionEntry[] }).captionEntries = entries;
  }, hooks);
}

export const captionEntries = (target: Page): Promise<CaptionEntry[]> =>
  target.evaluate(() => (window as unknown as { captionEntries: CaptionEntry[] }).captionEntries);

/**
 * What a caption entry must show of `line`: it grew word by word (each text a prefix of the
 * next, at least three of them) to the whole line, or, `rewritten`, it once showed more than was
 * said and shrank back before it went on.
 */
export function expectCaptionGrew(entry: CaptionEntry | undefined, line: string, rewritten = false) {
  const texts = entry?.texts ?? [];
  expect(texts.at(-1)).toBe(line);
  expect(texts.length).toBeGreaterThanOrEqual(3);
  const shrinks = texts.flatMap((text, i) => {
    const next = texts[i + 1];
    return next !== undefined && !next.startsWith(text) ? [[text, next]] : [];
  });
  if (!rewritten) {
    expect(shrinks).toEqual([]);
    return;
  }
  expect(shrinks).toHaveLength(1);
  const [before = "", after = ""] = shrinks[0] ?? [];
  // Retroactively: the wrong tail goes, at least 20 characters shorter, and the right words stay.
  expect(before.length - after.length).toBeGreaterThanOrEqual(20);
  expect(line.startsWith(after)).toBe(true);
}

/**
 * A tile's picture moves, and after `turnOff` (a platform's incoming video switch) stops: the
 * tile turns to its name card at its next animation frame, then is drawn no more. Answers the
 * still picture, to tell it moving again later.
 */
export async function expectPictureStops(canvas: Locator, turnOff: () => Promise<void>): Promise<string> {
  const picture = () => canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
  const first = await picture();
  await expect.poll(picture, WAIT).not.toBe(first);
  await turnOff();
  const frames = (n: number) =>
    page.evaluate(async (count) => {
      for (let i = 0; i < count; i++) await new Promise((resolve) => requestAnimationFrame(resolve));
    }, n);
  await frames(2);
  const still = await picture();
  // Six animation frames later (a moving tile is redrawn every 40 ms), the picture has not moved.
  await frames(6);
  expect(await picture()).toBe(still);
  return still;
}
