import { EventEmitter } from "node:events";
import { join } from "node:path";
import type { Logger } from "pino";
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
import { type PageWatcher, PhaseTimeout } from "./page-watcher.js";
import type { LifecyclePorts, RecorderPort, StagePort } from "./ports.js";
import type { RecordingResult } from "./recorder.js";
import type { AudioLevels } from "./silence.js";
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
 * DONE or FATAL, with whatever was recorded finalized and uploaded. Everything outside it (the
 * browser stage, the recorder, the reporter, the uploader) comes through its ports.
 */
export class BotLifecycle {
  private readonly interrupt = new AbortController();
  private stage: StagePort | null = null;
  private recorder: RecorderPort | null = null;
  /** The recorded sound's level, from the recorder to the silence clock. */
  private readonly levels: AudioLevels = new EventEmitter();
  private readonly reporter: LifecyclePorts["reporter"];

  constructor(
    private readonly config: BotConfig,
    private readonly workDir: string,
    private readonly adapter: PlatformAdapter,
    private readonly ports: LifecyclePorts,
    private readonly log: Logger,
  ) {
    this.reporter = ports.reporter;
  }

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
    const stage = await this.ports.prepareStage();
    this.stage = stage;
    const { page } = stage;
    // A trace of the join, kept only if the bot fails.
    await stage.startTrace();
    stage.onCrash((what) => this.interrupt.abort(new BotFailure("BROWSER_CRASHED", what)));
    const watcher = await stage.watch(this.adapter.snapshot, {
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
    await this.open(stage);
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
    // The recording starts at once; opening the roster (which a toast or a slow page can hold up
    // for seconds) goes on beside it, and the call is watched once the roster is as open as it gets.
    const afterAdmission = Promise.resolve(this.adapter.afterAdmission?.(page, { note })).catch(
      (error: Error) => {
        this.log.warn({ err: error.message }, "after-admission step failed; the roster may be incomplete");
      },
    );
    this.recorder = stage.recorder(join(this.workDir, "recording.mp4"), {
      onFailure: (failure) => this.interrupt.abort(failure),
      onLevel: (dbfs) => this.levels.emit("level", dbfs),
    });
    const startedAt = await this.recorder.start();
    this.reporter.report({
      type: "recording.started",
      data: { ...recording, startedAt: startedAt.toISOString() },
    });
    await afterAdmission;

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

  private async open(stage: StagePort): Promise<void> {
    let url: string;
    try {
      url = this.adapter.meetingUrl(this.config.meetingInfo, this.config.platformUrls);
    } catch (error) {
      throw new BotFailure(
        "MEETING_NOT_FOUND",
        `not a meeting this bot can open: ${(error as Error).message}`,
      );
    }
    try {
      const status = await stage.open(url, PAGE_LOAD_TIMEOUT_MS);
      if (status === 404) {
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
      await this.adapter.leave((this.stage as StagePort).page);
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
      await this.ports.uploader.uploadRecording(result);
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

  /** Saves what the page showed and uploads it; returns the names the control plane has. */
  private async saveArtifacts(): Promise<string[]> {
    if (!this.stage) return [];
    const saved = await this.stage.saveFailureArtifacts(join(this.workDir, "artifacts"));
    const uploaded: string[] = [];
    for (const { name, path } of saved) {
      try {
        await this.ports.uploader.uploadArtifact(name, path);
        uploaded.push(name);
      } catch (error) {
        this.log.warn(
          { err: (error as Error).message, artifact: path },
          "failure artifact kept locally only",
        );
      }
    }
    return uploaded;
  }

  /** Never throws: the outcome is already decided and reported; cleanup trouble is only logged. */
  private async cleanUp(): Promise<void> {
    await this.stage?.close().catch((error: Error) => {
      this.log.warn({ err: error.message }, "cleanup after the bot was incomplete");
    });
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
