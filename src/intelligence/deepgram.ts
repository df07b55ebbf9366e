import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { fileStream, prepareUploadAudio } from "./provider-audio.js";
import { callProvider } from "./provider-http.js";
import { languageCode } from "./provider-language.js";
import { EngineError, type Recognition, type TranscribeRequest, type Transcriber } from "./types.js";

export const deepgramSettings = z.object({
  baseUrl: z.url().default("https://api.deepgram.com"),
  apiKey: z.string().min(1),
  model: z.string().min(1).default("nova-3"),
  /** Ask for Deepgram's diarization: its labels become word speaker hints (never names). */
  diarize: z.boolean().default(false),
  /** How long the answer may take once the audio is uploaded (Deepgram answers prerecorded audio in one response). */
  timeoutMs: z.number().int().positive().default(600_000),
});
export type DeepgramSettings = z.input<typeof deepgramSettings>;

const answer = z.object({
  metadata: z.object({ duration: z.number().optional() }).optional(),
  results: z.object({
    channels: z
      .array(
        z.object({
          detected_language: z.string().optional(),
          alternatives: z
            .array(
              z.object({
                transcript: z.string().default(""),
                words: z
                  .array(
                    z.object({
                      word: z.string(),
                      punctuated_word: z.string().optional(),
                      start: z.number(),
                      end: z.number(),
                      confidence: z.number().optional(),
                      speaker: z.number().optional(),
                    }),
                  )
                  .default([]),
              }),
            )
            .min(1),
        }),
      )
      .min(1),
  }),
});

/** Deepgram prerecorded: `POST {base}/v1/listen` with the audio streamed as the body. */
export class DeepgramTranscriber implements Transcriber {
  readonly engine = "deepgram" as const;
  private readonly settings: z.output<typeof deepgramSettings>;

  constructor(settings: DeepgramSettings) {
    this.settings = deepgramSettings.parse(settings);
  }

  async transcribe(request: TranscribeRequest): Promise<Recognition> {
    const workDir = await mkdtemp(join(tmpdir(), "meetbot-deepgram-"));
    try {
      const audio = await prepareUploadAudio(request.mediaPath, workDir, undefined, request.signal);
      const [chunk] = audio.chunks;
      if (!chunk) throw new EngineError("media_unreadable", "no audio to upload", false);
      const query = new URLSearchParams({
        model: request.model ?? this.settings.model,
        smart_format: "true",
        punctuate: "true",
      });
      if (request.language) query.set("language", request.language);
      if (this.settings.diarize) query.set("diarize", "true");
      // The upload is the long part: it reports 0..0.9, the answer the rest.
      const { stream, size } = await fileStream(chunk.path, (f) => request.onProgress?.(f * 0.9));
      const { json } = await callProvider("deepgram", {
        method: "POST",
        url: `${this.settings.baseUrl.replace(/\/+$/, "")}/v1/listen?${query}`,
        headers: {
          authorization: `Token ${this.settings.apiKey}`,
          "content-type": "audio/wav",
          "content-length": String(size),
        },
        body: stream,
        timeoutMs: this.settings.timeoutMs,
        signal: request.signal,
      });
      const parsed = answer.safeParse(json);
      if (!parsed.success) {
        throw new EngineError(
          "provider_error",
          `deepgram answered an unexpected shape: ${parsed.error.message}`,
          true,
        );
      }
      const channel = parsed.data.results.channels[0]!;
      const best = channel.alternatives[0]!;
      request.onProgress?.(1);
      return {
        language:
          request.language ?? (channel.detected_language ? languageCode(channel.detected_language) : "en"),
        durationMs: audio.durationMs,
        text: best.transcript,
        words: best.words.map((word) => ({
          text: word.punctuated_word ?? word.word,
          startMs: Math.round(word.start * 1000),
          endMs: Math.round(word.end * 1000),
          confidence: word.confidence ?? null,
          speakerHint: word.speaker === undefined ? null : `speaker_${word.speaker}`,
        })),
      };
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  }
}
