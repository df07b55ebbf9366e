import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { fileStream, prepareUploadAudio } from "./provider-audio.js";
import { callProvider, waitUnless } from "./provider-http.js";
import { assemblyAiLanguage, languageCode } from "./provider-language.js";
import { EngineError, type Recognition, type TranscribeRequest, type Transcriber } from "./types.js";

export const assemblyAiSettings = z.object({
  baseUrl: z.url().default("https://api.assemblyai.com"),
  apiKey: z.string().min(1),
  /** Ask for AssemblyAI's diarization: its labels become word speaker hints (never names). */
  speakerLabels: z.boolean().default(false),
  /** Time to wait for one HTTP answer (upload, create, one status read). */
  timeoutMs: z.number().int().positive().default(120_000),
  /** Status polling without a webhook. */
  pollIntervalMs: z.number().int().positive().default(3_000),
  /** Status polling when a webhook was set: only the fallback for a webhook that never comes. */
  webhookPollIntervalMs: z.number().int().positive().default(60_000),
  /** Give up waiting for completion after this long plus the audio's duration. */
  completionTimeoutMs: z.number().int().positive().default(3_600_000),
});
export type AssemblyAiSettings = z.input<typeof assemblyAiSettings>;

/** Clips shorter than this are not sent: AssemblyAI always fails them. */
export const MIN_AUDIO_MS = 175;

/**
 * Where AssemblyAI should call when the transcript is done, and how the caller tells the engine it
 * did. The server's receiver (`POST /v1/webhook-receivers/assemblyai/{jobId}`) checks the call with
 * `verifyAssemblyAiWebhook` and then settles `delivered`; the engine then reads the transcript at
 * once instead of at the next poll. Polling goes on slowly beside it, so a webhook that never
 * arrives (or arrives at another server process) only delays the result.
 */
export interface AssemblyAiWebhook {
  url: string;
  headerName: string;
  headerValue: string;
  delivered: Promise<unknown>;
}

export interface AssemblyAiTranscribeRequest extends TranscribeRequest {
  webhook?: AssemblyAiWebhook;
}

/** The header AssemblyAI sends back on the webhook: the job's secret. */
export const ASSEMBLYAI_WEBHOOK_HEADER = "x-meetbot-webhook-secret";

/** A fresh secret header for one job's webhook (128+ random bits). */
export function newAssemblyAiWebhookAuth(): { headerName: string; headerValue: string } {
  return { headerName: ASSEMBLYAI_WEBHOOK_HEADER, headerValue: randomBytes(24).toString("base64url") };
}

/**
 * True when an incoming webhook carries the header the engine set on the transcript. Compared in
 * constant time (over hashes, so the lengths match too).
 */
export function verifyAssemblyAiWebhook(
  headers: Record<string, string | string[] | undefined>,
  expected: { headerName: string; headerValue: string },
): boolean {
  const raw = headers[expected.headerName.toLowerCase()];
  const got = Array.isArray(raw) ? raw[0] : raw;
  if (got === undefined) return false;
  const digest = (value: string): Buffer => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(got), digest(expected.headerValue));
}

const uploadAnswer = z.object({ upload_url: z.string().min(1) });
const transcriptAnswer = z.object({
  id: z.string().min(1),
  status: z.string(),
  error: z.string().nullish(),
  text: z.string().nullish(),
  language_code: z.string().nullish(),
  audio_duration: z.number().nullish(),
  words: z
    .array(
      z.object({
        text: z.string(),
        start: z.number(),
        end: z.number(),
        confidence: z.number().nullish(),
        speaker: z.string().nullish(),
      }),
    )
    .nullish(),
});
type TranscriptAnswer = z.infer<typeof transcriptAnswer>;

/** AssemblyAI: upload the audio, create the transcript, wait for its webhook or poll its status. */
export class AssemblyAiTranscriber implements Transcriber {
  readonly engine = "assemblyai" as const;
  private readonly settings: z.output<typeof assemblyAiSettings>;

  constructor(settings: AssemblyAiSettings) {
    this.settings = assemblyAiSettings.parse(settings);
  }

  async transcribe(request: AssemblyAiTranscribeRequest): Promise<Recognition> {
    const workDir = await mkdtemp(join(tmpdir(), "meetbot-assemblyai-"));
    try {
      const audio = await prepareUploadAudio(request.mediaPath, workDir, undefined, request.signal);
      const [chunk] = audio.chunks;
      if (!chunk || audio.durationMs < MIN_AUDIO_MS) {
        return { language: request.language ?? "en", durationMs: audio.durationMs, words: [], text: "" };
      }
      const uploadUrl = await this.upload(chunk.path, request);
      request.onProgress?.(0.3);
      const created = await this.call("POST", "/v2/transcript", request.signal, {
        audio_url: uploadUrl,
        ...(request.language ? { language_code: assemblyAiLanguage(request.language) } : {}),
        ...(this.settings.speakerLabels ? { speaker_labels: true } : {}),
        ...(request.webhook
          ? {
              webhook_url: request.webhook.url,
              webhook_auth_header_name: request.webhook.headerName,
              webhook_auth_header_value: request.webhook.headerValue,
            }
          : {}),
      });
      const done = await this.waitForCompletion(created, request, audio.durationMs);
      request.onProgress?.(1);
      return {
        language: done.language_code ? languageCode(done.language_code) : (request.language ?? "en"),
        durationMs: audio.durationMs,
        text: done.text ?? "",
        words: (done.words ?? []).map((word) => ({
          text: word.text,
          startMs: word.start,
          endMs: word.end,
          confidence: word.confidence ?? null,
          speakerHint: word.speaker ?? null,
        })),
      };
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  }

  private async upload(path: string, request: TranscribeRequest): Promise<string> {
    const { stream, size } = await fileStream(path, (f) => request.onProgress?.(f * 0.3));
    const { json } = await callProvider("assemblyai", {
      method: "POST",
      url: this.url("/v2/upload"),
      headers: {
        authorization: this.settings.apiKey,
        "content-type": "application/octet-stream",
        "content-length": String(size),
      },
      body: stream,
      timeoutMs: this.settings.timeoutMs,
      signal: request.signal,
    });
    return parse(uploadAnswer, json).upload_url;
  }

  private async waitForCompletion(
    created: TranscriptAnswer,
    request: AssemblyAiTranscribeRequest,
    durationMs: number,
  ): Promise<TranscriptAnswer> {
    const deadline = Date.now() + this.settings.completionTimeoutMs + durationMs;
    const interval = request.webhook ? this.settings.webhookPollIntervalMs : this.settings.pollIntervalMs;
    // Once the webhook came, later waits are plain polls (a settled promise would end every wait).
    let webhook = request.webhook?.delivered;
    const webhookCame = (): void => {
      webhook = undefined;
    };
    webhook?.then(webhookCame, webhookCame);
    let current = created;
    for (;;) {
      if (current.status === "completed") return current;
      if (current.status === "error") {
        throw new EngineError(
          "provider_error",
          `assemblyai failed the transcript: ${current.error ?? "no reason"}`,
          false,
        );
      }
      request.onProgress?.(current.status === "processing" ? 0.6 : 0.4);
      if (Date.now() >= deadline) {
        throw new EngineError(
          "timeout",
          `assemblyai transcript ${current.id} not done before the deadline`,
          true,
        );
      }
      await waitUnless(Math.min(interval, Math.max(0, deadline - Date.now())), webhook, request.signal);
      current = await this.call("GET", `/v2/transcript/${encodeURIComponent(current.id)}`, request.signal);
    }
  }

  private async call(
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal | undefined,
    body?: object,
  ): Promise<TranscriptAnswer> {
    const { json } = await callProvider("assemblyai", {
      method,
      url: this.url(path),
      headers: {
        authorization: this.settings.apiKey,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      timeoutMs: this.settings.timeoutMs,
      signal,
    });
    return parse(transcriptAnswer, json);
  }

  private url(path: string): string {
    return `${this.settings.baseUrl.replace(/\/+$/, "")}${path}`;
  }
}

function parse<T>(schema: z.ZodType<T>, json: unknown): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new EngineError(
      "provider_error",
      `assemblyai answered an unexpected shape: ${parsed.error.message}`,
      true,
    );
  }
  return parsed.data;
}
