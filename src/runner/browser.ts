import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright";
import { chromium } from "playwright-extra";
import StealthPlugin from "puppeteer-extra-plugin-stealth";
import { childEnv } from "../media/processes.js";
import { lowerBrowserPriority } from "./browser-priority.js";
import { PageCamera } from "./camera/page-camera.js";
import { FEATURE_ARGS } from "./chromium-features.js";
import { BotFailure } from "./errors.js";

/**
 * Flags that matter: the network ones keep Chromium from flooding a closed network with
 * background requests; the permission prompt for microphone and camera is answered yes; the
 * autoplay policy lets the meeting's audio play without a user gesture. No fake capture devices:
 * the microphone is the bot's own PulseAudio source (media-env.ts), which carries only what the
 * bot says (Chromium's fake device would beep into the call), and the camera a canvas the runner
 * paints (camera/page-camera.ts).
 */
const CHROMIUM_ARGS = [
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
  "--autoplay-policy=no-user-gesture-required",
  "--use-fake-ui-for-media-stream",
  "--window-position=0,0",
  // Fewer processes, less memory: one bot shows one page, so the GPU process (software here
  // anyway) and per-site renderers buy nothing.
  "--in-process-gpu",
  "--disable-site-isolation-trials",
  "--renderer-process-limit=1",
  ...FEATURE_ARGS,
];

/**
 * Chromium's sandbox (user namespaces and seccomp) confines the renderer that runs the meeting's
 * third-party code; it stays on whenever the runner is not root, as in the Docker image. Chromium
 * refuses to start as root with it, so only a root runner gets --no-sandbox, and with it
 * --no-zygote (one process fewer; Chromium allows that only without the sandbox).
 */
export function chromiumArgs(asRoot: boolean): string[] {
  return asRoot ? ["--no-sandbox", "--no-zygote", ...CHROMIUM_ARGS] : CHROMIUM_ARGS;
}

export const runsAsRoot = (): boolean => process.getuid?.() === 0;

let stealthInstalled = false;

/**
 * Playwright's Chromium with the stealth evasions installed (once): sites that refuse automated
 * browsers (Google's sign-in among them) see an ordinary one.
 */
export function stealthChromium(): typeof chromium {
  if (!stealthInstalled) {
    chromium.use(StealthPlugin());
    stealthInstalled = true;
  }
  return chromium;
}

export interface BotBrowser {
  context: BrowserContext;
  page: Page;
  /** The camera the pages get (camera/page-camera.ts): black until the bot shows a picture. */
  camera: PageCamera;
  close(): Promise<void>;
}

/**
 * A fresh Chromium profile per bot, full screen (kiosk) on the given display so the recording
 * shows the meeting and no browser chrome. Kiosk only applies to the window of a persistent
 * context, which is why we launch one instead of launch() + newContext(). The window is an app
 * window (`--app`): a normal window, even in kiosk, keeps an omnibox whose popup Chromium
 * preloads as a page of its own, in a second renderer (~75 MB PSS, measured).
 */
export async function launchBrowser(opts: BrowserOptions): Promise<BotBrowser> {
  let crashed: string | null = null;
  for (;;) {
    const profileDir = await mkdtemp(join(tmpdir(), "meetbot-profile-"));
    try {
      return await withCamera(await startChromium(profileDir, opts), profileDir);
    } catch (error) {
      await rm(profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
      if (error instanceof BotFailure) throw error;
      const signal = deathSignal(error as Error);
      if (signal && !crashed) {
        crashed = signal;
        opts.onCrash?.(signal);
        continue;
      }
      const again = crashed ? `, again (the first time it died of ${crashed})` : "";
      throw new BotFailure(
        "BROWSER_LAUNCH_FAILED",
        `Chromium failed to start${again}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}

interface BrowserOptions {
  /** The Chromium binary (BotConfig browser.executablePath); browsers are never downloaded. */
  executablePath: string;
  display: string;
  width: number;
  height: number;
  env: Record<string, string>;
  /** Chromium's sound flags (media-env.ts browserSound). */
  soundArgs?: string[];
  /** Chromium died of `signal` while starting, and is started once more. */
  onCrash?(signal: string): void;
}

/**
 * The signal Playwright's launch log says the browser died of, if it did. Chromium once died of
 * SIGSEGV while starting, before its first page (2026-11-28, a bench's fourth bot; not reproduced
 * since), and that failed a bot whose meeting was waiting: a browser that dies of a signal gets
 * one more start, with a fresh profile. A missing binary, a flag it refuses (a non-zero exit) or a
 * timeout would fail again the same way, and do not.
 */
const deathSignal = (error: Error) =>
  /process did exit: exitCode=null, signal=(SIG[A-Z]+)/.exec(error.message)?.[1] ?? null;

function startChromium(profileDir: string, opts: BrowserOptions): Promise<BrowserContext> {
  return stealthChromium().launchPersistentContext(profileDir, {
    executablePath: opts.executablePath,
    headless: false,
    viewport: null,
    // Playwright mutes audio only when headless, but say so: a muted bot records silence.
    ignoreDefaultArgs: ["--mute-audio", "--enable-automation"],
    // One pixel wider and taller than the display: Chromium shrinks a window exactly the size of
    // the screen by a pixel (a window-manager workaround), which left a black line on the right
    // and bottom of every recording. The extra pixel lies off screen and is not recorded.
    args: [
      ...chromiumArgs(runsAsRoot()),
      `--window-size=${opts.width + 1},${opts.height + 1}`,
      "--kiosk",
      "--app=data:,",
      ...(opts.soundArgs ?? []),
    ],
    env: childEnv({ ...opts.env, DISPLAY: opts.display }),
    timeout: 30_000,
    // The runner's own SIGTERM/SIGINT handler leaves the meeting (clicks Leave, finalizes the
    // recording) and closes the browser after. Playwright's would close the browser at once, so
    // a stopped bot vanished from the call instead of leaving it.
    handleSIGTERM: false,
    handleSIGINT: false,
  });
}

/** The started browser, its priority lowered, its camera installed and its page open; closed on failure. */
async function withCamera(context: BrowserContext, profileDir: string): Promise<BotBrowser> {
  lowerBrowserPriority();
  let camera: PageCamera;
  let page: Page;
  try {
    camera = await PageCamera.install(context);
    page = context.pages()[0] ?? (await context.newPage());
  } catch (error) {
    await context.close().catch(() => {});
    throw new BotFailure(
      "BROWSER_LAUNCH_FAILED",
      `Chromium's camera or first page could not be set up: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return {
    context,
    page,
    camera,
    close: async () => {
      await context.close().catch(() => {});
      await rm(profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
    },
  };
}
