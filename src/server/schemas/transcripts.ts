import { z } from "zod";
import { TRANSCRIPTION_ENGINES } from "../../intelligence/types.js";
import { Timestamp } from "./common.js";
import { JobState } from "./content-jobs.js";

/** Times are whole milliseconds from the recording's start: the clock of its speakerTimeline. */
const Ms = z.number().int().nonnegative();
const Confidence = z.number().min(0).max(1).nullable().describe("0..1; null when the engine gives none");

export const TranscriptWord = z.object({
  text: z.string(),
  startMs: Ms,
  endMs: Ms,
  confidence: Confidence,
});
export type TranscriptWord = z.infer<typeof TranscriptWord>;

/** One person's turn: consecutive words given to one speaker (or to nobody known). */
export const TranscriptUtterance = z.object({
  speaker: z
    .object({
      participantId: z.string(),
      name: z.string(),
    })
    .nullable()
    .describe("whose speaking indicator was on while these words were said; null when nobody's was"),
  startMs: Ms.describe("ms from the recording's start"),
  endMs: Ms.describe("ms from the recording's start"),
  text: z.string(),
  confidence: Confidence.describe("the mean of the words' confidences; null when none has one"),
  words: z.array(TranscriptWord).describe("the recognized words, in time order"),
});
export type TranscriptUtterance = z.infer<typeof TranscriptUtterance>;

/** GET /v1/transcripts/{bot_id}: who said what, and when, in the recording. */
export const Transcript = z.object({
  botId: z.number().int(),
  status: JobState.describe("of the latest transcript asked for: a new one may be on its way"),
  engine: z.string().describe(`the engine that made it: ${TRANSCRIPTION_ENGINES.join(", ")}`),
  language: z
    .string()
    .describe('the language asked for or detected: its ISO 639-1 code ("en") when one is known'),
  durationMs: Ms.describe("the length of the audio transcribed"),
  createdAt: Timestamp,
  completedAt: Timestamp,
  text: z.string().describe("the whole text"),
  utterances: z.array(TranscriptUtterance),
});
export type Transcript = z.infer<typeof Transcript>;
