import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Logger } from "pino";
import { type BotConfig, screenOf, StorageState } from "../core/index.js";
import { AgentPlayer, listenToMeeting } from "./agent-stream/audio.js";
import type { AgentAudioPort } from "./agent-stream/index.js";
import { saveFailureArtifacts } from "./artifacts.js";
import { startPocketsphinx } from "./live-transcript/pocketsphinx.js";
import { startLiveTranscript } from "./live-transcript/start.js";
import type { LiveTranscriber, LiveTranscriptContext } from "./live-transcript/types.js";
import { PageWatcher } from "./page-watcher.js";
import type { LifecyclePorts, RecorderEvents, RecorderPort, ReporterPort, StagePort } from "./ports.js";
import { Recorder } from "./recorder.js";
import { SegmentUploader } from "./segment-upload.js";
import { prepareStage, type Stage } from "./stage.js";
import { uploadArtifact, uploadRecording, writeBackSession } from "./upload.js";
import { fetchClip, playWav } from "./voice/clips.js";
import { fetchImage } from "./camera/images.js";

/**
 * A screenshot of a busy page takes a few hundred ms; far longer means the page is stuck. 10 s:
 * a recording bot on two starved cores once took over 5 s (the dashboard's live view then showed
 * a 502); the command's own deadline is 15 s (COMMAND_DEADLINE_MS.screenshot).
 */
const SCREENSHOT_TIMEOUT_MS = 10_000;

/**
 * The lifecycle's ports as a real run has them: Chromium on Xvfb and PulseAudio, ffmpeg, and the
 * control plane over HTTP. `stage`: one a warm runner prepared before it got its config; without
 * it the bot prepares its own.
 */
export function livePorts(opts: {
  config: BotConfig;
  reporter: ReporterPort;
  log: Logger;
  /** Where the bot keeps its files (the sounds it fetches among them). */
  workDir: string;
  headedDisplay?: string;
  stage?: Stage;
}): LifecyclePorts {
  const { config, reporter, log, workDir } = opts;
  return {
    prepareStage: async () => {
      const stage =
        opts.stage ??
        (await prepareStage(
          {
            ...screenOf(config.recording),
            video: config.recording.video,
            promptMicrophone: config.audioStream !== undefined,
            executablePath: config.browser.executablePath,
            ...(opts.headedDisplay ? { headedDisplay: opts.headedDisplay } : {}),
          },
          log,
        ));
      return new LiveStage(stage, config, log);
    },
    reporter,
    uploader: {
      uploadRecording: (recording) => uploadRecording(config, recording, log),
      uploadArtifact: (name, path) => uploadArtifact(config, name, path, log),
      writeBackSession: (body) => writeBackSession(config, body, log),
    },
    fetchClip: (clipId) => fetchClip(config, clipId, join(workDir, "outputs"), log),
    fetchImage: (imageId) => fetchImage(config, imageId, join(workDir, "outputs"), log),
  };
}

class LiveStage implements StagePort {
  private tracing = false;
  /** Whether a meeting page was opened in this browser (a restore then has something to replace). */
  private opened = false;

  constructor(
    private readonly stage: Stage,
    private readonly config: BotConfig,
    private readonly log: Logger,
  ) {}

  get page() {
    return this.stage.browser.page;
  }

  get camera() {
    return this.stage.browser.camera;
  }

  watch: StagePort["watch"] = (snapshot, hooks) => PageWatcher.attach(this.page, snapshot, hooks);

  async open(url: string, timeoutMs: number): Promise<number | null> {
    this.opened = true;
    const response = await this.page.goto(url, { waitUntil: "domcontentloaded", timeout: timeoutMs });
    return response ? response.status() : null;
  }

  onCrash(listener: (what: string) => void): void {
    this.page.on("crash", () => listener("the page crashed"));
    this.stage.browser.context.on("close", () => listener("the browser closed unexpectedly"));
  }

  async startTrace(): Promise<void> {
    // Actions, DOM snapshots, console and network; page screenshots are off, so it costs next to
    // nothing during the call. It is kept only if the bot fails.
    await this.stage.browser.context.tracing.start({ snapshots: true, screenshots: false }).then(
      () => {
        this.tracing = true;
      },
      (error: Error) => {
        this.log.warn({ err: error.message }, "could not start the Playwright trace");
      },
    );
  }

  async restoreSession(session: StorageState): Promise<void> {
    const { context } = this.stage.browser;
    // Session-only cookies (expires -1) go in as they are: they live as long as this browser, as
    // they would in the profile that saved them.
    if (this.opened) {
      // A second try (only_if_required, after an anonymous one): replace all the first one left.
      await context.setStorageState(session);
      return;
    }
    // A fresh browser: Playwright's setStorageState opens a page per origin to write localStorage
    // (150 ms measured, a fifth of a signed-in join's extra time). Cookies go in directly, and
    // each origin's localStorage is written by the first document of that origin the meeting
    // opens, before the page's own scripts run, once per tab (a page may rotate its tokens
    // before the next navigation: the restored values must not come back over them).
    await context.clearCookies();
    await context.addCookies(session.cookies);
    if (session.origins.length === 0) return;
    const items = Object.fromEntries(session.origins.map((o) => [o.origin, o.localStorage]));
    await this.page.addInitScript(restoreLocalStorageOnce, {
      items,
      marker: `r${randomBytes(6).toString("hex")}`,
    });
  }

  async sessionState(): Promise<StorageState> {
    const state = await this.stage.browser.context.storageState();
    // Only cookies and localStorage travel (src/core/login.ts): the schema drops the rest.
    return StorageState.parse({ cookies: state.cookies, origins: state.origins });
  }

  async screenshot(path: string): Promise<{ sizeBytes: number }> {
    const png = await this.page.screenshot({ path, type: "png", timeout: SCREENSHOT_TIMEOUT_MS });
    return { sizeBytes: png.length };
  }

  saveFailureArtifacts(dir: string) {
    return saveFailureArtifacts(this.stage.browser, dir, this.log, { trace: this.tracing });
  }

  recorder(path: string, events: RecorderEvents): RecorderPort {
    const { media } = this.stage;
    const recorder = new Recorder(
      {
        ...this.config.recording,
        display: media.display,
        audioSource: media.audioSource,
        pulseEnv: media.pulseEnv,
        onFailure: events.onFailure,
        onLevel: events.onLevel,
      },
      path,
      this.log,
    );
    const interval = this.config.recordingSegmentInterval;
    const segments = interval > 0 ? new SegmentUploader(this.config, path, interval, this.log) : null;
    return {
      start: async () => {
        await recorder.start();
        await segments?.start();
        return recorder.startedAt as Date;
      },
      // A resumed recording goes on in the same file: the segment uploader keeps following it.
      pause: () => recorder.pause(),
      resume: (pausedMs) => recorder.resume(pausedMs),
      stop: async () => {
        const result = await recorder.stop();
        if (!segments) return result;
        // A restarted ffmpeg wrote more than the file the segments follow: that one goes whole.
        if (recorder.parts > 1) {
          await segments.abandon();
          return result;
        }
        const uploadedSegments = await segments.finish();
        return uploadedSegments === null ? result : { ...result, uploadedSegments };
      },
    };
  }

  startLiveTranscript(context: LiveTranscriptContext, as?: "fallback"): LiveTranscriber {
    const { media } = this.stage;
    if (as === "fallback") return startPocketsphinx(context, media, "fallback");
    return startLiveTranscript(context, {
      pocketsphinx: (ctx, state) => startPocketsphinx(ctx, media, state),
    });
  }

  playClip(path: string, signal: AbortSignal): Promise<void> {
    const { media } = this.stage;
    return playWav(media.pulseEnv, media.voiceSink, path, signal);
  }

  get agentAudio(): AgentAudioPort {
    const { media } = this.stage;
    return {
      listen: (sampleRate, onFrame, onLost) =>
        listenToMeeting({ source: media.callSource, pulseEnv: media.pulseEnv, sampleRate, onFrame, onLost }),
      player: (sampleRate) =>
        new AgentPlayer({ sink: media.voiceSink, pulseEnv: media.pulseEnv, sampleRate }),
    };
  }

  close(): Promise<void> {
    return this.stage.close();
  }
}

/**
 * Runs in the page before its scripts (an init script): writes the restored localStorage of this
 * document's origin, the first time the tab shows that origin. The marker (a random sessionStorage
 * key) is what makes it once: sessionStorage lives exactly as long as the tab's visit to the origin.
 */
function restoreLocalStorageOnce(arg: {
  items: Record<string, { name: string; value: string }[]>;
  marker: string;
}): void {
  const items = arg.items[location.origin];
  if (!items) return;
  try {
    if (sessionStorage.getItem(arg.marker) !== null) return;
    sessionStorage.setItem(arg.marker, "1");
    localStorage.clear();
    for (const { name, value } of items) localStorage.setItem(name, value);
  } catch {
    // Storage switched off for this document (a sandboxed frame): nothing to restore into.
  }
}
