/**
 * The contract of the intelligence engines (docs/design.md: "pure functions of audio/transcript in,
 * result out: no database, no HTTP server"). The server's job worker picks an engine by name, hands
 * it a file and settings, and stores what comes back. Times are milliseconds from the recording's
 * start: the clock of the recording's `speakerTimeline`.
 */

/**
 * `live`: not a recognizer but the bot's live transcript (its settled utterances, captions or
 * pocketsphinx during the call), stored as its transcript once its runner is done.
 */
export const TRANSCRIPTION_ENGINES = ["pocketsphinx", "openai", "deepgram", "assemblyai", "live"] as const;
export type TranscriptionEngineName = (typeof TRANSCRIPTION_ENGINES)[number];

export const SUMMARY_ENGINES = ["extractive", "openai"] as const;
export type SummaryEngineName = (typeof SUMMARY_ENGINES)[number];

export interface RecognizedWord {
  text: string;
  startMs: number;
  endMs: number;
  /** 0..1, or null when the engine gives none. */
  confidence: number | null;
  /** A provider's own diarization label ("A", "speaker_0"): a hint only, never a name. */
  speakerHint?: string | null;
}

/** What a transcriber recognized: the words in time order (segments are made from them later). */
export interface Recognition {
  /** The language actually used (the requested one, or what the engine detected), e.g. "en". */
  language: string;
  durationMs: number;
  words: RecognizedWord[];
  /** The whole text as the engine wrote it (punctuated where it punctuates). */
  text: string;
}

export interface TranscribeRequest {
  /** The recording (MP4) or already-extracted audio; engines extract what they need with ffmpeg. */
  mediaPath: string;
  language?: string;
  model?: string;
  /** Aborts the work (a lease lost, a shutdown); the engine rejects with the signal's reason. */
  signal?: AbortSignal;
  /** 0..1, called as the work goes on (at most a few times per second). */
  onProgress?: (fraction: number) => void;
}

export interface Transcriber {
  readonly engine: TranscriptionEngineName;
  transcribe(request: TranscribeRequest): Promise<Recognition>;
}

/** One person's turn: consecutive words of one speaker (or of nobody known). */
export interface Utterance {
  speaker: { participantId: string; name: string } | null;
  startMs: number;
  endMs: number;
  text: string;
  confidence: number | null;
  words: Array<{ text: string; startMs: number; endMs: number; confidence: number | null }>;
}

/** The recording's speaker timeline, as GET /v1/recordings/{bot_id} gives it. */
export interface SpeakerTurn {
  participantId: string;
  name: string;
  startMs: number;
  endMs: number;
}

export interface ActionItem {
  text: string;
  /** The person named, else the speaker; null when neither is known. */
  owner: string | null;
  /** The due phrase as said ("tomorrow", "by Friday"), or null. */
  due: string | null;
  /** Where it was said in the recording, or null. */
  startMs: number | null;
}

export interface Summary {
  overview: string;
  keyPoints: string[];
  actionItems: ActionItem[];
  decisions: string[];
}

export interface SummarizeRequest {
  utterances: Utterance[];
  meetingTitle?: string;
  signal?: AbortSignal;
}

export interface Summarizer {
  readonly engine: SummaryEngineName;
  summarize(request: SummarizeRequest): Promise<Summary>;
}

/**
 * A failure an engine reports. `retryable`: worth another try later (a provider's 429 or 5xx, a
 * timeout, a connection refused); otherwise final (bad credentials, unreadable media, an answer
 * that never validates). `code` is stable and documented (e.g. `rate_limited`, `provider_error`,
 * `timeout`, `credentials_invalid`, `media_unreadable`, `invalid_answer`).
 */
export class EngineError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    /** How long the provider asked us to wait (its Retry-After), when it said. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "EngineError";
  }
}
