import { z } from "zod";
import { Platform } from "../core/index.js";
import { JobState } from "../server/schemas/content-jobs.js";
import { Timestamp } from "../server/schemas/common.js";
import { ChatMessageView } from "../server/schemas/live.js";

export const MEETING_STATUSES = ["in_progress", "processing", "completed", "failed"] as const;
export const MeetingStatus = z
  .enum(MEETING_STATUSES)
  .describe(
    "in_progress: the bot is in the call; processing: the recording, transcript or summary is still " +
      "being made; completed: all done; failed: the bot failed without a recording, or a transcript " +
      "or summary failed",
  );

export const MeetingId = z.string().regex(/^mtg_[0-9a-f]{24}$/, "a meeting id: mtg_ and 24 hex digits");

export const Participant = z.object({
  id: z.string(),
  name: z.string(),
  joinedAt: Timestamp.nullable().describe("when the bot first saw them (null: there before it)"),
  leftAt: Timestamp.nullable().describe("when the bot last saw them leave; null: still there at the end"),
  speakingMs: z.number().int().nonnegative().describe("their speaking indicator's time on in the recording"),
});

export const Meeting = z.object({
  id: z.string().describe("mtg_ and 24 hex digits: opaque, says nothing of the bot"),
  botId: z.number().int().describe("the bot that attended, in the bot API"),
  title: z.string(),
  platform: Platform,
  meetingUrl: z.string().nullable().describe("the link the bot joined by; null for Zoom and Teams ids"),
  status: MeetingStatus,
  startedAt: Timestamp.describe("when the bot joined the call"),
  endedAt: Timestamp.nullable().describe("when it left; null while in the call"),
  durationMs: z
    .number()
    .int()
    .nonnegative()
    .nullable()
    .describe("endedAt - startedAt; null while in the call"),
  participants: z.array(Participant),
  recording: z.object({
    available: z.boolean(),
    durationMs: z.number().int().nonnegative().nullable(),
    sizeBytes: z.number().int().nonnegative().nullable(),
  }),
  transcript: z.object({ status: JobState.nullable().describe("null: none was asked for") }),
  summary: z.object({ status: JobState.nullable().describe("null: none was asked for") }),
  chat: z
    .array(ChatMessageView)
    .describe("the meeting's chat as the bot read it, oldest first (the bot's own with fromBot)"),
  createdAt: Timestamp.describe("when the bot was created"),
});
export type Meeting = z.infer<typeof Meeting>;

/** A date (its midnight UTC) or a date-time with an offset; compared as an instant. */
const Instant = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })])
  .transform((value) => new Date(value).toISOString());

export const MeetingListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(200).optional().describe("next_cursor of the previous page"),
  from: Instant.optional().describe("meetings that started at or after this date or date-time"),
  to: Instant.optional().describe("meetings that started before this date or date-time"),
  platform: Platform.optional(),
  participant: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("a participant's name contains this, in any case (ASCII letters on SQLite)"),
  status: MeetingStatus.optional(),
  q: z
    .string()
    .min(1)
    .max(500)
    .optional()
    .describe("full-text search over titles and transcripts: every word must occur (stemmed, English)"),
});
export type MeetingListQuery = z.infer<typeof MeetingListQuery>;

export const MeetingList = z.object({
  data: z.array(Meeting),
  has_more: z.boolean(),
  next_cursor: z.string().nullable().describe("pass as `cursor` for the next page; null on the last"),
});
export type MeetingList = z.infer<typeof MeetingList>;

export const MeetingParams = z.object({ id: z.string().max(100) });
