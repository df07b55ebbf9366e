import { extractiveSummarizer } from "./extractive.js";
import { type PocketsphinxOptions, pocketsphinxTranscriber } from "./pocketsphinx.js";
import type { Summarizer, Transcriber } from "./types.js";

/** The engines that work offline, with nothing but Debian packages: the defaults. */
export function embeddedTranscriber(options: PocketsphinxOptions = {}): Transcriber {
  return pocketsphinxTranscriber(options);
}

export function embeddedSummarizer(): Summarizer {
  return extractiveSummarizer();
}

export { attributeSpeakers } from "./attribution.js";
export { extractAudio } from "./audio.js";
export { wordAccuracy, wordErrorRate } from "./word-error-rate.js";
