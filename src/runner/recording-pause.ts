import type { Logger } from "pino";
import type { CallbackEventBody, RecordingPauseResult } from "../core/index.js";
import { CommandRefusal } from "./commands.js";
import { BotFailure } from "./errors.js";
import type { RecorderPort } from "./ports.js";
import type { RecordingClock } from "./recording-clock.js";

/**
 * The pause_recording and resume_recording commands: ffmpeg stops, then the recording's clock
 * stops where the file does (what ffmpeg recorded while stopping, a few hundred ms, is in the file,
 * and so on the clock: the live transcript and the speaker timeline keep it too); a resume lets
 * the clock run again and starts ffmpeg on it (recorder.ts). Both are idempotent: a pause of a
 * paused recording is done and changes nothing. The commands share one lane (core
 * COMMAND_LANES), so they never overlap.
 */
export class RecordingPause {
  constructor(
    private readonly opts: {
      clock: RecordingClock;
      recorder: RecorderPort;
      report(body: CallbackEventBody): void;
      /** ffmpeg would not start again: the recorder's failure (the bot ends FATAL RECORDING_FAILED). */
      onFailure(failure: BotFailure): void;
      log: Logger;
    },
  ) {}

  async pause(): Promise<RecordingPauseResult> {
    const { clock, recorder, report, log } = this.opts;
    if (clock.paused) return { paused: true, changed: false, recordingMs: clock.now() };
    await recorder.pause();
    const pausedAt = clock.pause();
    const recordingMs = clock.at(pausedAt);
    log.info({ recordingMs }, "recording paused");
    report({ type: "recording.paused", data: { recordingMs, pausedAt: new Date(pausedAt).toISOString() } });
    return { paused: true, changed: true, recordingMs };
  }

  async resume(): Promise<RecordingPauseResult> {
    const { clock, recorder, report, log, onFailure } = this.opts;
    if (!clock.paused) return { paused: false, changed: false, recordingMs: clock.now() };
    const recordingMs = clock.now();
    const pausedMs = clock.resume();
    const resumedAt = new Date(clock.startedAt.getTime() + recordingMs + clock.pausedMs).toISOString();
    try {
      await recorder.resume(clock.pausedMs);
    } catch (error) {
      const failure = error instanceof BotFailure ? error : new BotFailure("RECORDING_FAILED", String(error));
      onFailure(failure);
      throw new CommandRefusal("COMMAND_FAILED", `the recording could not resume: ${failure.message}`);
    }
    log.info({ recordingMs, pausedMs }, "recording resumed");
    report({ type: "recording.resumed", data: { recordingMs, resumedAt, pausedMs: Math.round(pausedMs) } });
    return { paused: false, changed: true, recordingMs };
  }
}
