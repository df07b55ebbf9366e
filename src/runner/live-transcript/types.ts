import type { Logger } from "pino";
import type { CallbackEventBody, LiveTranscriptOptions } from "../../core/index.js";
import type { RecordingClock } from "../recording-clock.js";
import type { SpeakerTimeline } from "./speakers.js";

/**
 * A live transcript of the call while it happens (BotConfig.liveTranscript): one source, started
 * by the lifecycle once the recording runs and stopped when the call ends. A source reports
 * `transcript.partial` / `transcript.final` / `transcript.source` events itself; the lifecycle only
 * starts and stops it.
 */
export interface LiveTranscriber {
  /**
   * Stops listening (the call is over) and settles every utterance: each one that had a partial
   * gets its final before this resolves. Never throws; calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

/** What a source gets from the lifecycle. */
export interface LiveTranscriptContext {
  options: LiveTranscriptOptions;
  /** The recording's clock (paused time left out): every time reported is on it. */
  clock: RecordingClock;
  /** Who the platform's speaking indicator showed, when: for the utterances' speakers. */
  speakers: SpeakerTimeline;
  report(body: CallbackEventBody): void;
  /** A folder the source may use for scratch files (removed by the source when it stops). */
  workDir: string;
  log: Logger;
}
