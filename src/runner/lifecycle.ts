import { EventEmitter } from "node:events";
import { join } from "node:path";
import type { Logger } from "pino";
import type { Page } from "playwright";
import {
  END_PHASES,
  FAILURE_PHASES,
  JoinRefused,
  type Phase,
  type PlatformAdapter,
  WAITING_PHASES,
} from "../../platforms/adapter.js";
import type { BotConfig, SubCode } from "../core/index.js";
import { BotFailure } from "./errors.js";
import { PageWatcher, PhaseTimeout } from "./page-watcher.js";
import { Recorder, type RecordingResult } from "./recorder.js";
import type { Reporter } from "./reporter.js";
import { prepareStage, type Stage } from "./stage.js";
import { keepFailureArtifacts } from "./artifacts.js";
import type { AudioLevels } from "./silence.js";
import { uploadRecording } from "./upload.js";
import { watchCall } from "./watch-call.js";

const PAGE_LOAD_TIMEOUT_MS = 30_000;
const JOIN_RESPONSE_TIMEOUT_MS = 30_000;

/** Why the runner was asked to stop (SIGTERM/SIGINT): not a failure of the bot. */
export class StopRequested extends Error {
  constructor() {
    super("stop requested");
  }
}

export type Outcome = { status: "DONE" } | { status: "FATAL"; subCode: SubCode; message: string };

/**
 * One bot's life, start to finish: media environment, browser, join, admission, call,
 * recording, upload, and the status reports along the way. It never throws: every path ends in
 * DONE or FATAL, with whatever was recorded finalized and uploaded.
 */
export class BotLifecycle {
  private readonly interrupt = new AbortController();
  private stage: Stage | null = null;
  private recorder: Recorder | null = null;
  /** The recorded sound's level, from the recorder to the silence clock. */
  private readonly levels: AudioLevels = new EventEmitter();

  constructor(
    private readonly config: BotConfig,
    private readonly workDir: string,
    private readonly adapter: PlatformAdapter,
    private readonly reporter: Reporter,
    private readonly log: Logger,
    /** `stage`: one a warm runner prepared before it got its config; else the bot makes its own. */
    private readonly opts: { headedDisplay?: string; stage?: Stage },
  ) {}

  /** Asks the bot to leave now; the run still finalizes, uploads and reports. */
  requestStop(): void {
    if (!this.interrupt.signal.aborted) this.interrupt.abort(new StopRequested());
  }

  async run(): Promise<Outcome> {
    try {
      const endedBy = await this.joinAndAttend();
      await this.finishRecording();
      this.reporter.report({ type: "status", data: { status: "DONE" } });
      this.log.info({ endedBy }, "done");
      return { status: "DONE" };
    } catch (error) {
      // `await`, so that the failure is handled (screenshot, partial upload) before cleanUp closes the browser.
      return await this.fail(error);
    } finally {
      await this.cleanUp();
    }
  }

  private async joinAndAttend(): Promise<SubCode> {
    const { recording } = this.config;
    const stage =
      this.opts.stage ??
      (await prepareStage(
        {
          width: recording.width,
          height: recording.height,
          ...(this.opts.headedDisplay ? { headedDisplay: this.opts.headedDisplay } : {}),
        },
        this.log,
      ));
    this.stage = stage;
    const { page, context } = stage.browser;
    // A Playwright trace of the join (actions, DOM snapshots, console, network) is kept only if
    // the bot fails; page screenshots are off, so it costs next to nothing during the call.
    await context.tracing.start({ snapshots: true, screenshots: false }).catch((error: Error) => {
      this.log.warn({ err: error.message }, "could not start the Playwright trace");
    });
    page.on("crash", () => this.interrupt.abort(new BotFailure("BROWSER_CRASHED", "the page crashed")));
    context.on("close", () =>
      this.interrupt.abort(new BotFailure("BROWSER_CRASHED", "the browser closed unexpectedly")),
    );
    const watcher = await PageWatcher.attach(page, this.adapter.snapshot, {
      ...this.adapter.hooks,
      selfName: this.config.botDisplayName,
    });
    // Which hook decided each phase, and which variant of each join hook matched: a UI change on
    // a real platform shows here before joins fail.
    let lastPhase: Phase | undefined;
    watcher.on("change", ({ phase, evidence }) => {
      if (phase !== lastPhase) this.log.info({ phase, evidence }, "page phase");
      lastPhase = phase;
    });
    const note = (hook: string, variant: string) => this.log.info({ hook, variant }, "join hook matched");

    this.status("JOINING_CALL");
    await this.open(page);
    const waiting = Object.keys(WAITING_PHASES) as Phase[];
    await this.waitFor(watcher, ["prejoin", ...waiting, "in_call"], PAGE_LOAD_TIMEOUT_MS, "JOIN_FAILED");
    if (watcher.current.phase === "prejoin") {
      this.throwIfInterrupted();
      await this.adapter
        .join(page, { displayName: this.config.botDisplayName, info: this.config.meetingInfo, note })
        .catch((error: Error) => {
          this.throwIfInterrupted();
          if (error instanceof JoinRefused) throw new BotFailure(error.subCode, error.message);
          throw new BotFailure("JOIN_FAILED", `could not complete the join form: ${error.message}`);
        });
    }
    await this.admission(watcher);

    this.status("IN_CALL");
    await this.adapter.afterAdmission?.(page, { note }).catch((error: Error) => {
      this.log.warn({ err: error.message }, "after-admission step failed; the roster may be incomplete");
    });
    this.recorder = new Recorder(
      {
        ...recording,
        display: stage.media.display,
        audioSource: stage.media.audioSource,
        pulseEnv: stage.media.pulseEnv,
        onFailure: (failure) => this.interrupt.abort(failure),
        onLevel: (dbfs) => this.levels.emit("level", dbfs),
      },
      join(this.workDir, "recording.mp4"),
      this.log,
    );
    await this.recorder.start();
    this.reporter.report({
      type: "recording.started",
      data: { ...recording, startedAt: (this.recorder.startedAt as Date).toISOString() },
    });

    const endedBy = await watchCall({
      watcher,
      reporter: this.reporter,
      automaticLeave: this.config.automaticLeave,
      levels: this.levels,
      signal: this.interrupt.signal,
      log: this.log,
    });
    if (!(endedBy in END_PHASES_BY_CODE)) await this.adapter.leave(page);
    this.status("CALL_ENDED", endedBy);
    return endedBy;
  }

  private async open(page: Page): Promise<void> {
    let url: string;
    try {
      url = this.adapter.meetingUrl(this.config.meetingInfo);
    } catch (error) {
      throw new BotFailure(
        "MEETING_NOT_FOUND",
        `not a meeting this bot can open: ${(error as Error).message}`,
      );
    }
    try {
      const response = await page.goto(url, { waitUntil: "domcontentloaded", timeout: PAGE_LOAD_TIMEOUT_MS });
      if (response && response.status() === 404) {
        throw new BotFailure("MEETING_NOT_FOUND", `the meeting page answered 404 (${url})`);
      }
    } catch (error) {
      if (error instanceof BotFailure) throw error;
      this.throwIfInterrupted();
      throw new BotFailure("JOIN_FAILED", `could not open ${url}: ${(error as Error).message}`);
    }
  }

  /** From the click on "Ask to join" to being in the call, through the lobby if there is one. */
  private async admission(watcher: PageWatcher): Promise<void> {
    const waiting = Object.keys(WAITING_PHASES) as Phase[];
    await this.waitFor(watcher, [...waiting, "in_call"], JOIN_RESPONSE_TIMEOUT_MS, "JOIN_FAILED");
    if (watcher.current.phase === "in_call") return;
    this.status("IN_WAITING_ROOM");
    const timeout = this.config.automaticLeave.waitingRoomTimeout;
    try {
      await this.waitFor(watcher, ["in_call"], timeout, "WAITING_ROOM_TIMEOUT");
    } catch (error) {
      if (!(error instanceof BotFailure && error.subCode === "WAITING_ROOM_TIMEOUT")) throw error;
      // Waited too long: in a lobby that is WAITING_ROOM_TIMEOUT, for a host HOST_NOT_STARTED.
      const subCode = WAITING_PHASES[watcher.current.phase] ?? "WAITING_ROOM_TIMEOUT";
      await this.adapter.leave(this.page());
      throw new BotFailure(subCode, error.message);
    }
  }

  /**
   * Waits for one of `phases`; a failure phase on the way becomes its FATAL subCode, a timeout
   * becomes `onTimeout`, and an interrupt (SIGTERM, crash) is rethrown as is.
   */
  private async waitFor(watcher: PageWatcher, phases: Phase[], timeoutMs: number, onTimeout: SubCode) {
    const failures = Object.keys(FAILURE_PHASES) as Phase[];
    const ends = Object.keys(END_PHASES) as Phase[];
    try {
      const snap = await watcher.waitForPhase(
        [...phases, ...failures, ...ends],
        timeoutMs,
        this.interrupt.signal,
      );
      const failure = FAILURE_PHASES[snap.phase];
      if (failure) throw new BotFailure(failure, `the meeting page says: ${snap.phase.replace("_", " ")}`);
      if (ends.includes(snap.phase)) {
        throw new BotFailure("JOIN_FAILED", `the call ended before the bot got in (${snap.phase})`);
      }
      return snap;
    } catch (error) {
      if (error instanceof PhaseTimeout) throw new BotFailure(onTimeout, error.message);
      throw error;
    }
  }

  private async finishRecording(): Promise<void> {
    const result = await this.stopRecorder();
    if (!result) throw new BotFailure("RECORDING_FAILED", "the call ended without a recording");
    await this.upload(result);
  }

  private async stopRecorder(): Promise<RecordingResult | null> {
    const recorder = this.recorder;
    if (!recorder) return null;
    this.recorder = null;
    const result = await recorder.stop();
    this.reporter.report({
      type: "recording.stopped",
      data: {
        durationMs: result.durationMs,
        sizeBytes: result.sizeBytes,
        frames: result.frames,
        droppedFrames: result.droppedFrames,
        duplicatedFrames: result.duplicatedFrames,
      },
    });
    return result;
  }

  private async upload(result: RecordingResult): Promise<void> {
    try {
      await uploadRecording(this.config, result, this.log);
    } catch (error) {
      throw new BotFailure("UPLOAD_FAILED", `recording kept at ${result.path}: ${(error as Error).message}`);
    }
  }

  private async fail(error: unknown): Promise<Outcome> {
    const reason = error instanceof StopRequested ? this.interrupt.signal.reason : error;
    const failure =
      reason instanceof BotFailure
        ? reason
        : reason instanceof StopRequested
          ? new BotFailure("KILLED", "stopped on request before the call started")
          : new BotFailure("INTERNAL_ERROR", (reason as Error)?.message ?? String(reason));
    this.log.error({ subCode: failure.subCode, err: failure.message }, "bot failed");
    const artifacts = await this.saveArtifacts();
    // Whatever was recorded is still finalized and delivered.
    try {
      const result = await this.stopRecorder();
      if (result) await this.upload(result);
    } catch (uploadError) {
      this.log.error({ err: (uploadError as Error).message }, "could not deliver the partial recording");
    }
    this.reporter.report({
      type: "status",
      data: {
        status: "FATAL",
        subCode: failure.subCode,
        message: failure.message.slice(0, 2000),
        ...(artifacts.length > 0 ? { artifacts } : {}),
      },
    });
    return { status: "FATAL", subCode: failure.subCode, message: failure.message };
  }

  private async saveArtifacts(): Promise<string[]> {
    const browser = this.stage?.browser;
    return browser
      ? keepFailureArtifacts(browser, join(this.workDir, "artifacts"), this.config, this.log)
      : [];
  }

  /** Never throws: the outcome is already decided and reported; cleanup trouble is only logged. */
  private async cleanUp(): Promise<void> {
    await this.stage?.close().catch((error: Error) => {
      this.log.warn({ err: error.message }, "cleanup after the bot was incomplete");
    });
  }

  private page(): Page {
    if (!this.stage) throw new Error("no browser");
    return this.stage.browser.page;
  }

  private status(status: "JOINING_CALL" | "IN_WAITING_ROOM" | "IN_CALL" | "CALL_ENDED", subCode?: SubCode) {
    this.log.info({ status, subCode, uptimeMs: Math.round(process.uptime() * 1000) }, "status");
    this.reporter.report({ type: "status", data: { status, ...(subCode ? { subCode } : {}) } });
  }

  private throwIfInterrupted(): void {
    if (this.interrupt.signal.aborted) throw this.interrupt.signal.reason;
  }
}

/** CALL_ENDED subCodes for which the platform already took the bot out of the call. */
const END_PHASES_BY_CODE: Partial<Record<SubCode, true>> = { MEETING_ENDED: true, REMOVED: true };
