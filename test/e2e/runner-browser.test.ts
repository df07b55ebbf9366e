import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { type MockHost, startMockHost } from "../../fixtures/host/server.js";
import { DEFAULT_CHROMIUM_PATH } from "../../src/core/index.js";
import pino from "pino";
import type { BotBrowser } from "../../src/runner/browser.js";
import { BROWSER_NICENESS } from "../../src/runner/browser-priority.js";
import type { MediaEnvironment } from "../../src/runner/media-env.js";
import { prepareStage, type Stage } from "../../src/runner/stage.js";

/**
 * The bot's Chromium shows one page and nothing else. A normal window, even in kiosk mode, keeps
 * an omnibox whose popup Chromium preloads as a WebUI page in a renderer of its own (~75 MB).
 */

/** The mock Meet page's background (fixtures/meet/page.css, --page-background). */
const PAGE_BACKGROUND = [0x20, 0x21, 0x24];

let mock: MockHost;
let stage: Stage;
let media: MediaEnvironment;
let browser: BotBrowser;
beforeAll(async () => {
  mock = await startMockHost({ port: 0 });
  // A video bot's stage without a live agent, as a deploy prepares it.
  stage = await prepareStage(
    { width: 1280, height: 720, executablePath: DEFAULT_CHROMIUM_PATH },
    pino({ level: "silent" }),
  );
  ({ media, browser } = stage);
  await browser.page.goto(`${mock.url}/meet/one-page-only?admit=open&participants=2`);
}, 60_000);
afterAll(async () => {
  await stage?.close();
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

/** The pid of Chromium's browser process (the one without a --type). */
function chromiumBrowserPid(): number {
  const browserPid = processTree(process.pid).find((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      return cmdline.includes("chromium") && !cmdline.includes("--type=");
    } catch {
      return false;
    }
  });
  if (browserPid === undefined) throw new Error("no Chromium browser process");
  return browserPid;
}

/** Each value of a `--name=a,b` switch on Chromium's browser process's command line, in order. */
function browserSwitchValues(name: string): string[][] {
  return readFileSync(`/proc/${chromiumBrowserPid()}/cmdline`, "utf8")
    .split("\0")
    .filter((arg) => arg.startsWith(`--${name}=`))
    .map((arg) => arg.slice(name.length + 3).split(","));
}

it("plays and captures sound in the sound path's big blocks (no live agent: no own latency)", () => {
  const environment = readFileSync(`/proc/${chromiumBrowserPid()}/environ`, "utf8").split("\0");
  expect(environment).toContain(`PULSE_LATENCY_MSEC=${media.pulseEnv.PULSE_LATENCY_MSEC}`);
  expect(media.pulseEnv.PULSE_LATENCY_MSEC).toBe("100");
});

it("runs the network service in the browser process, not in a utility of its own", () => {
  const subTypes = processTree(process.pid).flatMap((pid) => {
    try {
      return (
        /--utility-sub-type=(\S+?)(?:\0|\s)/.exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1] ?? []
      );
    } catch {
      return [];
    }
  });
  expect(subTypes.length).toBeGreaterThan(0); // the storage service, at least: the reading works
  expect(subTypes).not.toContain("network.mojom.NetworkService");
});

it("keeps every feature switch Playwright passes: Chromium takes only the last list", () => {
  for (const name of ["enable-features", "disable-features"]) {
    const lists = browserSwitchValues(name);
    expect(lists.length).toBeGreaterThan(0);
    const last = lists.at(-1) ?? [];
    for (const earlier of lists.slice(0, -1)) expect(last).toEqual(expect.arrayContaining(earlier));
  }
  expect(browserSwitchValues("enable-features").at(-1)).toContain("NetworkServiceInProcess2");
  expect(browserSwitchValues("disable-features").at(-1)).toContain("AudioServiceOutOfProcess");
});

it("schedules Chromium below the recorder: its session's group runs at a lower priority", () => {
  const groups = processTree(process.pid).flatMap((pid) => {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("chromium")) return [];
      return [readFileSync(`/proc/${pid}/autogroup`, "utf8").trim()];
    } catch {
      return [];
    }
  });
  expect(groups.length).toBeGreaterThan(1);
  // One group for the browser and every process it started, at BROWSER_NICENESS.
  expect(new Set(groups).size).toBe(1);
  expect(groups[0]).toMatch(new RegExp(`^/autogroup-\\d+ nice ${BROWSER_NICENESS}$`));
  expect(readFileSync("/proc/self/autogroup", "utf8")).not.toBe(groups[0]);
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
