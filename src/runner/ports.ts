import type { Page } from "playwright";
import type { PageSnapshot, SnapshotHooks } from "../../platforms/adapter.js";
import type { CallbackEventBody, LoginSessionWriteBack, StorageState } from "../core/index.js";
import type { AgentAudioPort } from "./agent-stream/index.js";
import type { BotFailure } from "./errors.js";
import type { LiveTranscriber, LiveTranscriptContext } from "./live-transcript/types.js";
import type { PageWatcher } from "./page-watcher.js";
import type { RecordingResult } from "./recorder.js";

/**
 * What a bot's lifecycle needs from the world, as small interfaces: the browser stage, the
 * recorder, the reporter and the uploader. A real run gets them from live-ports.ts (Chromium,
 * ffmpeg, HTTP); the lifecycle's unit tests drive it through fakes of these, without a browser.
 */
export interface LifecyclePorts {
  /** The stage to perform on: prepared now, or the one a warm runner had ready. */
  prepareStage(): Promise<StagePort>;
  reporter: ReporterPort;
  uploader: UploaderPort;
  /** Fetches a sound the server rendered for a play_audio command; answers the local WAV's path. */
  fetchClip(clipId: string): Promise<string>;
  /** Fetches a picture the server made (show_image, output.image); answers the PNG's bytes. */
  fetchImage(imageId: string): Promise<Buffer>;
}

/** Where the bot performs: a browser page shown on the bot's own display and sound card. */
export interface StagePort {
  /** The page the platform adapter drives (join, leave); the lifecycle only hands it over. */
  readonly page: Page;
  /** Starts reading the adapter's view of the page (phase, roster) on every change of the DOM. */
  watch(snapshot: (hooks: SnapshotHooks) => PageSnapshot, hooks: SnapshotHooks): Promise<PageWatcher>;
  /** Opens `url`; resolves with the HTTP status of the answer, or null if there was none. */
  open(url: string, timeoutMs: number): Promise<number | null>;
  /** `listener` is called if the page crashes or the browser goes away. */
  onCrash(listener: (what: string) => void): void;
  /**
   * Starts the trace kept with the failure artifacts; best effort (never throws). Never for a bot
   * with a secret in the browser (a login's session, a Teams bot token): a trace records them.
   */
  startTrace(): Promise<void>;
  /**
   * Puts a login's session into the browser (Playwright's storage state: cookies, session-only ones
   * included, and localStorage), replacing what it held, before the meeting is opened.
   */
  restoreSession(session: StorageState): Promise<void>;
  /** The browser's current storage state (cookies and localStorage), to write a session back. */
  sessionState(): Promise<StorageState>;
  /** Writes a PNG of what the page shows now to `path`; answers its size. */
  screenshot(path: string): Promise<{ sizeBytes: number }>;
  /** Saves what the page shows (screenshot, HTML, trace) into `dir`; best effort. */
  saveFailureArtifacts(dir: string): Promise<SavedArtifact[]>;
  /** A recorder of this stage's display and sound card, writing to `path`. */
  recorder(path: string, events: RecorderEvents): RecorderPort;
  /**
   * Starts the live transcript `context.options` asks for, from this stage's sound card
   * (pocketsphinx), once the recording runs; `fallback`: pocketsphinx standing in for captions
   * that could not be turned on (it reports `transcript.source` state `fallback`).
   */
  startLiveTranscript(context: LiveTranscriptContext, as?: "fallback"): LiveTranscriber;
  /** Plays a WAV file into the bot's microphone; resolves when it ended or `signal` stopped it. */
  playClip(path: string, signal: AbortSignal): Promise<void>;
  /** What the page's camera shows (a PNG; black once cleared), in every document of the browser. */
  readonly camera: { show(png: Buffer): Promise<void>; clear(): Promise<void> };
  /** The sound card's side of an audio stream (BotConfig.audioStream): the meeting alone, the microphone. */
  readonly agentAudio: AgentAudioPort;
  close(): Promise<void>;
}

export interface SavedArtifact {
  name: string;
  path: string;
}

export interface RecorderPort {
  /** Starts; resolves once the first frame is recorded, with the instant that is 0 s of the recording. */
  start(): Promise<Date>;
  /** Stops and finalizes the file (whatever was recorded, even after a failure). */
  stop(): Promise<RecordingResult>;
  /** Stops recording until resume(); resolves once all that was recorded is in the file. */
  pause(): Promise<void>;
  /**
   * Records again, its timestamps shifted back by `pausedMs`, all the time paused so far, into the
   * same file (recorder.ts).
   */
  resume(pausedMs: number): Promise<void>;
}

export interface RecorderEvents {
  /** The recorder cannot go on (the recording so far is kept); the bot ends FATAL with it. */
  onFailure(failure: BotFailure): void;
  /** The recorded sound's RMS level in dBFS, about twice a second (-Infinity: digital silence). */
  onLevel(dbfs: number): void;
}

export interface ReporterPort {
  /** Queues an event for the control plane; never throws on network trouble. */
  report(body: CallbackEventBody): number;
}

export interface UploaderPort {
  uploadRecording(recording: RecordingResult): Promise<void>;
  uploadArtifact(name: string, path: string): Promise<void>;
  /** PUTs the login's refreshed session to the control plane (retried); answers whether it was kept. */
  writeBackSession(body: LoginSessionWriteBack): Promise<boolean>;
}
