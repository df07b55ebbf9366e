import { z } from "zod";

/** Shapes shared by every route group. */

export const Timestamp = z.iso.datetime().describe("ISO 8601, UTC");
export const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

export const Detail = z.object({ detail: z.string() });

/**
 * What a recording is: `mp4` (H.264 video and AAC sound) or, from an audio-only bot
 * (`recording.video: false`), `m4a` (AAC sound alone in the same fragmented MP4 container).
 */
export const RecordingFormat = z.enum(["mp4", "m4a"]);
export type RecordingFormat = z.infer<typeof RecordingFormat>;
export const RECORDING_MIME_TYPES = { mp4: "video/mp4", m4a: "audio/mp4" } as const;
export const RecordingMimeType = z.enum([RECORDING_MIME_TYPES.mp4, RECORDING_MIME_TYPES.m4a]);
