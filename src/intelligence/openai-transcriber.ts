import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { type AudioChunk, multipartBody, prepareUploadAudio } from "./provider-audio.js";
import { callProvider, waitUnless } from "./provider-http.js";
import { languageCode } from "./provider-language.js";
import {
  EngineError,
  type Recognition,
  type RecognizedWord,
  type TranscribeRequest,
  type Transcriber,
} from "./types.js";

export const openAiTranscriberSettings = z.object({
  /** Any OpenAI-compatible server: OpenAI, a faster-whisper server, Groq, vLLM. */
  baseUrl: z.url().default("https://api.openai.com/v1"),
  /** Optional: local servers often take none. */
  apiKey: z.string().min(1).optional(),
  model: z.string().min(1).default("whisper-1"),
  /** `verbose_json` gives segments and words; some models (gpt-4o-transcribe) only answer `json`. */
  responseFormat: z.enum(["verbose_json", "json"]).default("verbose_json"),
  /** Audio is uploaded in chunks of this length (OpenAI caps an upload at 25 MB: 10 min of 16 kHz mono WAV is 19.2 MB). */
  chunkSeconds: z.number().positive().max(780).default(600),
  /** How long one chunk may take to be answered once uploaded. */
  timeoutMs: z.number().int().positive().default(600_000),
  /**
   * Retries of one chunk after a retryable failure (429, 5xx, timeout), waiting the provider's
   * Retry-After or else 2^n seconds: a 429 at chunk 20 of 24 need not send the first 19 again.
   */
  chunkRetries: z.number().int().min(0).max(10).default(3),
});
export type OpenAiTranscriberSettings = z.input<typeof openAiTranscriberSettings>;

/** Chunks shorter than this are skipped: OpenAI always refuses them. */
export const MIN_CHUNK_MS = 80;

const verboseAnswer = z.object({
  text: z.string().default(""),
  language: z.string().optional(),
  words: z.array(z.object({ word: z.string(), start: z.number(), end: z.number() })).optional(),
  segments: z
    .array(
      z.object({ start: z.number(), end: z.number(), text: z.string(), avg_logprob: z.number().optional() }),
    )
    .optional(),
});
type VerboseAnswer = z.infer<typeof verboseAnswer>;

/**
 * `POST {base}/audio/transcriptions`, one multipart upload per chunk of audio. Times come from the
 * best the server gives: its words; else its segments, each segment's words spread evenly over it
 * (whisper servers without word timestamps); else only `{text}`, one pseudo-word spanning the
 * chunk. Word confidence is exp(avg_logprob) of the segment holding the word, when given.
 */
export class OpenAiTranscriber implements Transcriber {
  readonly engine = "openai" as const;
  private readonly settings: z.output<typeof openAiTranscriberSettings>;

  constructor(settings: OpenAiTranscriberSettings) {
    this.settings = openAiTranscriberSettings.parse(settings);
  }

  async transcribe(request: TranscribeRequest): Promise<Recognition> {
    const workDir = await mkdtemp(join(tmpdir(), "meetbot-openai-"));
    try {
      const audio = await prepareUploadAudio(
        request.mediaPath,
        workDir,
        this.settings.chunkSeconds,
        request.signal,
      );
      const chunks = audio.chunks.filter((chunk) => chunk.durationMs >= MIN_CHUNK_MS);
      const words: RecognizedWord[] = [];
      const texts: string[] = [];
      let language = request.language;
      for (const [index, chunk] of chunks.entries()) {
        const answer = await this.transcribeChunkWithRetries(chunk, request);
        language ??= answer.language === undefined ? undefined : languageCode(answer.language);
        words.push(...wordsOf(answer, chunk));
        if (answer.text.trim()) texts.push(answer.text.trim());
        request.onProgress?.((index + 1) / chunks.length);
      }
      request.onProgress?.(1);
      return { language: language ?? "en", durationMs: audio.durationMs, words, text: texts.join(" ") };
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  }

  private async transcribeChunkWithRetries(
    chunk: AudioChunk,
    request: TranscribeRequest,
  ): Promise<VerboseAnswer> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transcribeChunk(chunk, request);
      } catch (error) {
        if (!(error instanceof EngineError) || !error.retryable || attempt >= this.settings.chunkRetries)
          throw error;
        await waitUnless(
          Math.min(60_000, error.retryAfterMs ?? 1000 * 2 ** attempt),
          undefined,
          request.signal,
        );
      }
    }
  }

  private async transcribeChunk(chunk: AudioChunk, request: TranscribeRequest): Promise<VerboseAnswer> {
    const fields: Array<[string, string]> = [["model", request.model ?? this.settings.model]];
    if (request.language) fields.push(["language", request.language]);
    fields.push(["response_format", this.settings.responseFormat]);
    if (this.settings.responseFormat === "verbose_json") {
      fields.push(["timestamp_granularities[]", "word"], ["timestamp_granularities[]", "segment"]);
    }
    // The file part is streamed from disk: a chunk is never held in memory.
    const form = await multipartBody(fields, {
      field: "file",
      path: chunk.path,
      filename: "audio.wav",
      contentType: "audio/wav",
    });
    const { json } = await callProvider("openai", {
      method: "POST",
      url: `${this.settings.baseUrl.replace(/\/+$/, "")}/audio/transcriptions`,
      headers: {
        "content-type": form.contentType,
        "content-length": String(form.length),
        ...(this.settings.apiKey ? { authorization: `Bearer ${this.settings.apiKey}` } : {}),
      },
      body: form.body,
      timeoutMs: this.settings.timeoutMs,
      signal: request.signal,
    });
    const parsed = verboseAnswer.safeParse(json);
    if (!parsed.success) {
      throw new EngineError(
        "provider_error",
        `openai answered an unexpected shape: ${parsed.error.message}`,
        true,
      );
    }
    return parsed.data;
  }
}

export function wordsOf(
  answer: VerboseAnswer,
  chunk: Pick<AudioChunk, "startMs" | "durationMs">,
): RecognizedWord[] {
  const at = (seconds: number): number => chunk.startMs + Math.round(seconds * 1000);
  const segments = answer.segments ?? [];
  const confidenceAt = (seconds: number): number | null => {
    const segment = segments.find((s) => seconds >= s.start && seconds <= s.end);
    return segment?.avg_logprob === undefined ? null : Math.min(1, Math.exp(segment.avg_logprob));
  };
  if (answer.words?.length) {
    return answer.words
      .filter((word) => word.word.trim())
      .map((word) => ({
        text: word.word.trim(),
        startMs: at(word.start),
        endMs: at(word.end),
        confidence: confidenceAt((word.start + word.end) / 2),
      }));
  }
  if (segments.length) {
    return segments.flatMap((segment) => {
      const texts = segment.text.split(/\s+/).filter(Boolean);
      const step = (segment.end - segment.start) / Math.max(1, texts.length);
      const confidence =
        segment.avg_logprob === undefined ? null : Math.min(1, Math.exp(segment.avg_logprob));
      return texts.map((text, i) => ({
        text,
        startMs: at(segment.start + i * step),
        endMs: at(segment.start + (i + 1) * step),
        confidence,
      }));
    });
  }
  const text = answer.text.trim();
  if (!text) return [];
  return [{ text, startMs: chunk.startMs, endMs: chunk.startMs + chunk.durationMs, confidence: null }];
}
