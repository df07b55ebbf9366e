import { embeddedSummarizer, embeddedTranscriber } from "../../intelligence/index.js";
import {
  type AssemblyAiSettings,
  createProviderSummarizer,
  createProviderTranscriber,
  type DeepgramSettings,
  type OpenAiSummarizerSettings,
  type OpenAiTranscriberSettings,
} from "../../intelligence/providers.js";
import {
  EngineError,
  type SummaryEngineName,
  type Summarizer,
  type Transcriber,
  type TranscriptionEngineName,
} from "../../intelligence/types.js";

/** Which engines this server may use and how to reach them (config.ts builds it from the environment). */
export interface EnginesConfig {
  defaultTranscription: TranscriptionEngineName;
  defaultSummary: SummaryEngineName;
  pocketsphinxModelDir: string;
  /** Present when MEETBOT_OPENAI_BASE_URL or MEETBOT_OPENAI_API_KEY is set. */
  openaiTranscription?: OpenAiTranscriberSettings;
  /** Present when MEETBOT_DEEPGRAM_API_KEY is set. */
  deepgram?: DeepgramSettings;
  /** Present when MEETBOT_ASSEMBLYAI_API_KEY is set. */
  assemblyai?: AssemblyAiSettings;
  /** Present when a summary or general OpenAI base URL or key is set. */
  openaiSummary?: OpenAiSummarizerSettings;
}

/** What a provider engine needs set before it can be chosen: said in the 422 of a request naming it. */
const MISSING: Record<Exclude<TranscriptionEngineName, "pocketsphinx" | "live"> | "openai-summary", string> =
  {
    openai: "set MEETBOT_OPENAI_BASE_URL (an OpenAI-compatible server) or MEETBOT_OPENAI_API_KEY",
    deepgram: "set MEETBOT_DEEPGRAM_API_KEY",
    assemblyai: "set MEETBOT_ASSEMBLYAI_API_KEY",
    "openai-summary": "set MEETBOT_OPENAI_SUMMARY_BASE_URL, MEETBOT_OPENAI_BASE_URL or an OpenAI API key",
  };

/**
 * The engines by name. Provider engines are made once and reused: the OpenAI summarizer remembers
 * a server that refuses JSON-schema answers.
 */
export class Engines {
  private readonly transcribers = new Map<TranscriptionEngineName, Transcriber>();
  private readonly summarizers = new Map<SummaryEngineName, Summarizer>();

  constructor(readonly config: EnginesConfig) {}

  /** Why `name` cannot transcribe on this server, or null when it can. */
  transcriptionUnavailable(name: TranscriptionEngineName): string | null {
    switch (name) {
      case "pocketsphinx":
      case "live":
        return null;
      case "openai":
        return this.config.openaiTranscription
          ? null
          : `engine "openai" is not configured: ${MISSING.openai}`;
      case "deepgram":
      case "assemblyai":
        return this.config[name] ? null : `engine "${name}" is not configured: ${MISSING[name]}`;
    }
  }

  summaryUnavailable(name: SummaryEngineName): string | null {
    if (name === "extractive" || this.config.openaiSummary) return null;
    return `engine "openai" is not configured: ${MISSING["openai-summary"]}`;
  }

  transcriber(name: TranscriptionEngineName): Transcriber {
    // The live transcript is read from the database (transcript-job.ts), never recognized.
    if (name === "live")
      throw new EngineError("engine_unavailable", "the live transcript has no recognizer", false);
    const why = this.transcriptionUnavailable(name);
    // The server's settings changed since the job was queued.
    if (why) throw new EngineError("engine_unavailable", why, false);
    let engine = this.transcribers.get(name);
    if (!engine) {
      engine =
        name === "pocketsphinx"
          ? embeddedTranscriber({ modelDir: this.config.pocketsphinxModelDir })
          : createProviderTranscriber(name, this.providerSettings(name));
      this.transcribers.set(name, engine);
    }
    return engine;
  }

  summarizer(name: SummaryEngineName): Summarizer {
    const why = this.summaryUnavailable(name);
    if (why) throw new EngineError("engine_unavailable", why, false);
    let engine = this.summarizers.get(name);
    if (!engine) {
      engine =
        name === "extractive"
          ? embeddedSummarizer()
          : createProviderSummarizer(name, this.config.openaiSummary);
      this.summarizers.set(name, engine);
    }
    return engine;
  }

  private providerSettings(name: "openai" | "deepgram" | "assemblyai"): unknown {
    return name === "openai" ? this.config.openaiTranscription : this.config[name];
  }
}
