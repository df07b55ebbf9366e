import { z } from "zod";
import { Platform } from "../../core/index.js";
import { Pagination } from "../validation.js";
import { RecordingFormat, Timestamp } from "./common.js";
import { JobState } from "./content-jobs.js";
import { Transcript } from "./transcripts.js";

export const DownloadLink = z.object({ url: z.url(), expiresAt: Timestamp });
export type DownloadLink = z.infer<typeof DownloadLink>;

/** Where a transcript or summary job stands; null: none was requested. */
export const JobStatus = JobState.nullable();

export const RecordingListQuery = z.object({ ...Pagination });
export type RecordingListQuery = z.infer<typeof RecordingListQuery>;

export const RecordingListItem = z.object({
  botId: z.number().int(),
  botDisplayName: z.string(),
  meetingTitle: z.string(),
  platform: Platform,
  durationMs: z.number().int().nonnegative(),
  sizeBytes: z.number().int().nonnegative(),
  format: RecordingFormat,
  createdAt: Timestamp,
  transcriptStatus: JobStatus,
  summaryStatus: JobStatus,
});
export type RecordingListItem = z.infer<typeof RecordingListItem>;

export const RecordingList = z.object({
  recordings: z.array(RecordingListItem),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type RecordingList = z.infer<typeof RecordingList>;

export const SHARE_TTL_DEFAULT_S = 7 * 24 * 60 * 60;
export const SHARE_TTL_MAX_S = 30 * 24 * 60 * 60;

/**
 * POST /v1/recordings/{bot_id}/share; `{}` or no body takes the default lifetime (as transcribe
 * and summarize take their defaults; a JSON `null` is no body there too, see TranscribeBody).
 */
export const CreateShareBody = z
  .strictObject({
    expiresIn: z
      .number()
      .int()
      .min(60)
      .max(SHARE_TTL_MAX_S)
      .optional()
      .describe(`seconds until the link stops working; default ${SHARE_TTL_DEFAULT_S} (7 days)`),
  })
  .nullish();
export type CreateShareBody = z.infer<typeof CreateShareBody>;

/** The new link: the token is shown here only (the server keeps its hash). */
export const CreatedShare = z.object({
  token: z.string(),
  url: z.url(),
  expiresAt: Timestamp,
  createdAt: Timestamp,
});
export type CreatedShare = z.infer<typeof CreatedShare>;

/** The live link, without its token (which the server cannot show again). */
export const ShareInfo = z.object({ expiresAt: Timestamp, createdAt: Timestamp });
export type ShareInfo = z.infer<typeof ShareInfo>;

/** What a share link shows anyone holding it, and nothing else of the owner. */
export const SharedRecording = z.object({
  meetingTitle: z.string(),
  format: RecordingFormat.describe(
    "m4a: sound alone (an audio-only bot); the page's player is then an audio player",
  ),
  platform: Platform,
  durationMs: z.number().int().nonnegative(),
  createdAt: Timestamp,
  streamUrl: z.url(),
  transcript: Transcript.omit({ botId: true })
    .nullable()
    .describe("the transcript once there is one; null until then"),
});
export type SharedRecording = z.infer<typeof SharedRecording>;
