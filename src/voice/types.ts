/**
 * The contract of the speech engines: text and a voice in, a clip (clip.ts) out. Like the
 * transcribers in src/intelligence, they know nothing of the database or the HTTP server; the
 * server's VoiceService picks the one the operator configured (MEETBOT_TTS_ENGINE) and queues
 * what it renders for the bot to play.
 */

/** `flite`: offline, in Debian's ffmpeg (the default); `openai`: any OpenAI-compatible /audio/speech. */
export const SPEECH_ENGINES = ["flite", "openai"] as const;
export type SpeechEngineName = (typeof SPEECH_ENGINES)[number];

/** What the server was configured with (config.ts builds it from MEETBOT_TTS_*). */
export type SpeechConfig = { engine: "flite" } | { engine: "openai"; openai: OpenAiSpeechSettings };

export interface OpenAiSpeechSettings {
  /** e.g. https://api.openai.com/v1; `/audio/speech` is added. */
  baseUrl: string;
  /** Optional: OpenAI-compatible servers on a private network often take none. */
  apiKey?: string | undefined;
  model: string;
}

export interface SpeechEngine {
  readonly name: SpeechEngineName;
  /** The voice of a request that names none. */
  readonly defaultVoice: string;
  /** Why `voice` cannot be asked of this engine (naming those it has), or null when it can. */
  voiceProblem(voice: string): string | null;
  /**
   * Renders `text` said by `voice` as a clip at `output` and answers its length in ms. Rejects with
   * SpeechEngineError when the engine fails.
   */
  synthesize(text: string, voice: string, output: string): Promise<number>;
}

/**
 * The engine could not render the speech: its status or what went wrong, fit to answer (a 502),
 * never a key. `logDetail` (the engine's own answer, cut short) goes to the server's log only.
 */
export class SpeechEngineError extends Error {
  constructor(
    message: string,
    readonly logDetail?: string,
  ) {
    super(message);
  }
}
