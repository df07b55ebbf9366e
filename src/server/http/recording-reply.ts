import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { RECORDING_MIME_TYPES } from "../schemas/index.js";
import type { RangeRequest, RecordingFile } from "../services/recordings.js";

/** The media types a recording is served as (schemas/common.ts RECORDING_MIME_TYPES). */
export const MEDIA_TYPES = Object.values(RECORDING_MIME_TYPES);

/** How every route that serves a recording answers, for the API document. */
export const MEDIA_DESCRIPTION =
  "The MP4 (video/mp4; audio/mp4 for an audio-only bot's m4a) with Range support: one range is a 206 with Content-Range; several " +
  "ranges, a malformed Range or an If-Range that does not match the ETag get the whole file " +
  "(200); a start past the end is a 416 with `Content-Range: bytes */size`. HEAD answers the headers.";

/** The Range headers of a request, for the services. */
export function rangeRequest(headers: Record<string, unknown>): RangeRequest {
  return {
    range: typeof headers.range === "string" ? headers.range : undefined,
    ifRange: typeof headers["if-range"] === "string" ? headers["if-range"] : undefined,
  };
}

/**
 * Answers with a recording file the service opened: 200 or 206 with the headers a `<video>`
 * element needs to seek (Accept-Ranges, Content-Range, ETag for If-Range). A HEAD gets the same
 * headers and never opens the file.
 */
export function sendRecording(request: FastifyRequest, reply: FastifyReply, file: RecordingFile) {
  reply
    .header("content-type", file.mimeType)
    .header("accept-ranges", "bytes")
    .header("etag", file.etag)
    // The validator decides freshness: a re-upload changes the ETag.
    .header("cache-control", "private, no-cache");
  const { range, size } = file;
  if (range) {
    reply
      .code(206)
      .header("content-range", `bytes ${range.start}-${range.end}/${size}`)
      .header("content-length", range.end - range.start + 1);
  } else {
    reply.header("content-length", size);
  }
  // Fastify's HEAD route would set Content-Length 0 for no payload, and drain a real stream (the
  // whole file): an empty stream keeps the headers above and reads nothing.
  if (request.method === "HEAD") return reply.send(Readable.from([]));
  return reply.send(file.open());
}
