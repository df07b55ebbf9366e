import { fliteEngine } from "./flite.js";
import { openAiSpeechEngine } from "./openai-speech.js";
import type { SpeechConfig, SpeechEngine } from "./types.js";

/** The engine the server speaks with: flite unless the operator configured an OpenAI-compatible one. */
export function createSpeechEngine(config: SpeechConfig): SpeechEngine {
  return config.engine === "openai" ? openAiSpeechEngine(config.openai) : fliteEngine();
}

export { decodeToClip, INPUT_FORMATS, type InputFormat, UndecodableAudioError } from "./clip.js";
export { DEFAULT_FLITE_VOICE, FLITE_VOICES } from "./flite.js";
export {
  DEFAULT_OPENAI_SPEECH_MODEL,
  DEFAULT_OPENAI_SPEECH_URL,
  DEFAULT_OPENAI_VOICE,
} from "./openai-speech.js";
export * from "./types.js";
