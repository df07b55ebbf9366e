import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { type MockHost, startMockHost } from "../../fixtures/host/server.js";
import { DEFAULT_CHROMIUM_PATH } from "../../src/core/index.js";
import { type BotBrowser, launchBrowser } from "../../src/runner/browser.js";
import { type MediaEnvironment, startMediaEnvironment } from "../../src/runner/media-env.js";

/**
 * The bot's Chromium shows one page and nothing else. A normal window, even in kiosk mode, keeps
 * an omnibox whose popup Chromium preloads as a WebUI page in a renderer of its own (~75 MB).
 */

/** The mock Meet page's background (fixtures/meet/page.css, --page-background). */
const PAGE_BACKGROUND = [0x20, 0x21, 0x24];

let mock: MockHost;
let media: MediaEnvironment;
let browser: BotBrowser;
beforeAll(async () => {
  mock = await startMockHost({ port: 0 });
  media = await startMediaEnvironment({ width: 1280, height: 720 });
  browser = await launchBrowser({
    executablePath: DEFAULT_CHROMIUM_PATH,
    display: media.display,
    width: 1280,
    height: 720,
    env: media.pulseEnv,
  });
  await browser.page.goto(`${mock.url}/meet/one-page-only?admit=open&participants=2`);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await media?.close();
  await mock?.close();
});

function chromiumProcessTypes(): string[] {
  return processTree(process.pid).flatMap((pid) => {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      return []; // exited meanwhile
    }
    if (!cmdline.includes("chromium")) return [];
    return [/--type=([a-z-]+)/.exec(cmdline)?.[1] ?? "browser"];
  });
}

it("runs the meeting page in the only renderer process", () => {
  const types = chromiumProcessTypes();
  expect(types).toContain("browser");
  expect(types.filter((type) => type === "renderer")).toHaveLength(1);
});

it("has no page but the meeting's: no omnibox popup or other browser UI", async () => {
  const cdp = await browser.context.newCDPSession(browser.page);
  const { targetInfos } = await cdp.send("Target.getTargets");
  await cdp.detach();
  expect(targetInfos.map((target) => `${target.type} ${new URL(target.url).pathname}`)).toEqual([
    "page /meet/one-page-only",
  ]);
});

it("shows the page on the whole display, to the last row and column of pixels", async () => {
  const [width, height] = await browser.page.evaluate(() => [window.innerWidth, window.innerHeight]);
  expect(width).toBeGreaterThanOrEqual(1280);
  expect(height).toBeGreaterThanOrEqual(720);
  // What the recorder sees: the display's bottom-right pixel is the page's background, not black.
  const frame = execFileSync("ffmpeg", [
    ...["-loglevel", "error", "-f", "x11grab", "-video_size", "1280x720", "-i", media.display],
    ...["-frames:v", "1", "-vf", "crop=1:1:1279:719", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
  ]);
  expect([...frame]).toEqual(PAGE_BACKGROUND);
});
