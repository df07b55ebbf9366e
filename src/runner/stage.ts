import type { Logger } from "pino";
import { type BotBrowser, launchBrowser } from "./browser.js";
import { type MediaEnvironment, browserSound, startMediaEnvironment } from "./media-env.js";

/**
 * Where a bot performs: its private display and sound card, and a browser showing on them.
 * Everything about it is independent of the meeting, so a warm runner can prepare one before
 * it knows which bot it will be.
 */
export interface Stage {
  media: MediaEnvironment;
  browser: BotBrowser;
  width: number;
  height: number;
  /** false: an audio-only bot's stage (a small display, a sound path of bigger blocks). */
  video: boolean;
  /** true: Chromium runs on its own small audio latencies, for a bot with a live agent (BotConfig.audioStream). */
  promptMicrophone: boolean;
  /** The Chromium binary the browser runs. */
  executablePath: string;
  close(): Promise<void>;
}

export async function prepareStage(
  opts: {
    width: number;
    height: number;
    video?: boolean;
    promptMicrophone?: boolean;
    executablePath: string;
    headedDisplay?: string;
  },
  log: Logger,
): Promise<Stage> {
  const uptimeMs = () => Math.round(process.uptime() * 1000);
  const video = opts.video ?? true;
  const promptMicrophone = opts.promptMicrophone ?? false;
  const media = await startMediaEnvironment({
    width: opts.width,
    height: opts.height,
    ...(opts.headedDisplay ? { existingDisplay: opts.headedDisplay } : {}),
  });
  log.info({ display: media.display, uptimeMs: uptimeMs() }, "display and sound ready");
  let browser: BotBrowser;
  const sound = browserSound(media.pulseEnv, { promptMicrophone });
  try {
    browser = await launchBrowser({
      executablePath: opts.executablePath,
      display: media.display,
      width: opts.width,
      height: opts.height,
      env: sound.env,
      soundArgs: sound.args,
      onCrash: (signal) => log.warn({ signal }, "Chromium died while starting; starting it once more"),
    });
  } catch (error) {
    await media.close();
    throw error;
  }
  log.info({ uptimeMs: uptimeMs() }, "browser ready");
  return {
    media,
    browser,
    width: opts.width,
    height: opts.height,
    video,
    promptMicrophone,
    executablePath: opts.executablePath,
    close: async () => {
      await browser.close();
      await media.close();
    },
  };
}
