import { AssemblyAiTranscriber } from "./assemblyai.js";
import { DeepgramTranscriber } from "./deepgram.js";
import { OpenAiSummarizer } from "./openai-summarizer.js";
import { OpenAiTranscriber } from "./openai-transcriber.js";
import type { Summarizer, Transcriber } from "./types.js";

export {
  ASSEMBLYAI_WEBHOOK_HEADER,
  assemblyAiSettings,
  newAssemblyAiWebhookAuth,
  verifyAssemblyAiWebhook,
} from "./assemblyai.js";
export type { AssemblyAiSettings, AssemblyAiTranscribeRequest, AssemblyAiWebhook } from "./assemblyai.js";
export type { DeepgramSettings } from "./deepgram.js";
export type { OpenAiSummarizerSettings } from "./openai-summarizer.js";
export type { OpenAiTranscriberSettings } from "./openai-transcriber.js";
export { deepgramSettings } from "./deepgram.js";
export { openAiSummarizerSettings } from "./openai-summarizer.js";
export { openAiTranscriberSettings } from "./openai-transcriber.js";

export type ProviderTranscriberName = "openai" | "deepgram" | "assemblyai";

/** The provider transcribers by engine name; `settings` is validated by the engine's own schema. */
export function createProviderTranscriber(name: ProviderTranscriberName, settings: unknown): Transcriber {
  switch (name) {
    case "openai":
      return new OpenAiTranscriber(settings as never);
    case "deepgram":
      return new DeepgramTranscriber(settings as never);
    case "assemblyai":
      return new AssemblyAiTranscriber(settings as never);
  }
}

export function createProviderSummarizer(name: "openai", settings: unknown): Summarizer {
  switch (name) {
    case "openai":
      return new OpenAiSummarizer(settings as never);
  }
}
