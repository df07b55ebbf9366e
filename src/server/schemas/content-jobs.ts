import { z } from "zod";
import { JOB_STATES } from "../jobs/queue.js";
import { Language, SummaryEngine, TranscriptionEngine } from "../jobs/content-options.js";
import { Timestamp } from "./common.js";

export const JobState = z.enum(JOB_STATES);

const JobError = z
  .object({ code: z.string(), message: z.string() })
  .nullable()
  .describe("why the last try failed (also while a retry is queued); null after a success");

const jobStatusFields = {
  botId: z.number().int(),
  status: JobState,
  engine: z.string(),
  progress: z.number().min(0).max(1).nullable().describe("0..1 while processing; null when unknown"),
  error: JobError,
  createdAt: Timestamp.describe("when this transcript or summary was asked for"),
  updatedAt: Timestamp,
};

/** GET /v1/transcripts/{bot_id}/status, and the 202 of POST .../transcribe. */
export const TranscriptJobStatus = z.object({
  ...jobStatusFields,
  language: z.string().nullable().describe("as asked for; null: the engine's default or detection"),
});
export type TranscriptJobStatus = z.infer<typeof TranscriptJobStatus>;

/** GET /v1/summaries/{bot_id}/status, and the 202 of POST .../summarize. */
export const SummaryJobStatus = z.object(jobStatusFields);
export type SummaryJobStatus = z.infer<typeof SummaryJobStatus>;

/**
 * No body takes every default. Fastify hands the validator an absent body as null, so a JSON
 * `null` body cannot be told from none: both are documented as allowed.
 */
const orNone = <T extends z.ZodType>(schema: T) => schema.nullish();

/** POST /v1/transcripts/{bot_id}/transcribe; no body takes every default. */
export const TranscribeBody = orNone(
  z.strictObject({
    engine: TranscriptionEngine.optional().describe("default: the server's MEETBOT_TRANSCRIPTION_ENGINE"),
    language: Language.optional().describe("default: the engine's (pocketsphinx: en; providers detect it)"),
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("the engine's model; default from the server's settings"),
  }),
);
export type TranscribeBody = z.infer<typeof TranscribeBody>;

/** POST /v1/summaries/{bot_id}/summarize; no body takes the default engine. */
export const SummarizeBody = orNone(
  z.strictObject({
    engine: SummaryEngine.optional().describe("default: the server's MEETBOT_SUMMARY_ENGINE"),
  }),
);
export type SummarizeBody = z.infer<typeof SummarizeBody>;

export const TranscriptFormatQuery = z.object({
  format: z
    .enum(["json", "txt", "srt", "vtt"])
    .default("json")
    .describe("json (default); txt: `[mm:ss] Name: text` lines; srt or vtt: subtitles"),
});

export const ActionItem = z.object({
  text: z.string(),
  owner: z.string().nullable().describe("the person named, else the speaker; null when neither is known"),
  due: z.string().nullable().describe('the due phrase as said ("tomorrow", "by Friday"), or null'),
  startMs: z.number().int().nonnegative().nullable().describe("where it was said in the recording"),
});

/** GET /v1/summaries/{bot_id}. */
export const Summary = z.object({
  botId: z.number().int(),
  status: JobState.describe("of the latest summary asked for: a new one may be on its way"),
  engine: z.string(),
  createdAt: Timestamp,
  completedAt: Timestamp,
  overview: z.string(),
  keyPoints: z.array(z.string()),
  actionItems: z.array(ActionItem),
  decisions: z.array(z.string()),
});
export type Summary = z.infer<typeof Summary>;
