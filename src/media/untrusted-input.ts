import { open } from "node:fs/promises";
import { runToEnd } from "./processes.js";

/**
 * Bytes a runner uploaded (its recording, its segments) are untrusted: a runner's callback token
 * may be in an attacker's hands. Left to guess, ffmpeg reads a "recording" that is an HLS playlist
 * or a DASH manifest naming `1.mp4` as an order to open that file beside it: another tenant's
 * recording. So every server-side ffmpeg or ffprobe that reads such bytes is told what they are
 * (`-f mp4` or `-f wav`, never probed), may open nothing but the one file (`-protocol_whitelist
 * file`), and ignores an MP4's external data references (`-enable_drefs 0`); and an upload whose
 * first bytes are not an MP4 box is refused before it is stored (mp4Head).
 */

/** The formats the server reads: the runners' MP4 recordings, and WAV (a transcriber's input). */
export type MediaFormat = "mp4" | "wav";

/** Top-level boxes a fragmented MP4 continues with after its `ftyp`+`moov` (`mfra` ends it). */
const CONTINUATION_BOXES = new Set(["moof", "mdat", "mfra"]);

/** The bytes needed to tell a format: an MP4 box header, or RIFF's "RIFF....WAVE". */
export const HEAD_BYTES = 12;

/**
 * Whether `head` (the first bytes of an upload) opens an MP4 the server will read: a `ftyp` box for
 * a whole file or the first segment, a fragment's box for a later segment.
 */
export function mp4Head(head: Buffer, part: "start" | "continuation"): boolean {
  if (head.length < 8) return false;
  const size = head.readUInt32BE(0);
  // 1 = a 64-bit size follows; 0 = "to the end of the file"; 2-7 cannot hold their own header.
  if (size !== 1 && size < 8) return false;
  const type = head.toString("latin1", 4, 8);
  return part === "start" ? type === "ftyp" : CONTINUATION_BOXES.has(type);
}

/** What a file on disk is, by its first bytes; null when it is neither an MP4 nor a WAV. */
export async function sniffFormat(path: string): Promise<MediaFormat | null> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, HEAD_BYTES, 0);
    const bytes = head.subarray(0, bytesRead);
    if (mp4Head(bytes, "start")) return "mp4";
    if (
      bytes.length >= 12 &&
      bytes.toString("latin1", 0, 4) === "RIFF" &&
      bytes.toString("latin1", 8, 12) === "WAVE"
    )
      return "wav";
    return null;
  } finally {
    await file.close();
  }
}

/** The input options that make ffmpeg or ffprobe read `path` as `format` and nothing else. */
export function inputArgs(format: MediaFormat, path: string): string[] {
  return [
    ...["-protocol_whitelist", "file"],
    ...["-f", format],
    ...(format === "mp4" ? ["-enable_drefs", "0"] : []),
    ...["-i", path],
  ];
}

/** Thrown when an untrusted file is not a format the server reads. */
export class UnreadableMediaError extends Error {}

/** inputArgs for a file whose format is found from its own first bytes. */
export async function sniffedInputArgs(path: string): Promise<string[]> {
  const format = await sniffFormat(path);
  if (!format) throw new UnreadableMediaError("not an MP4 or WAV file");
  return inputArgs(format, path);
}

/**
 * The duration of an untrusted media file in ms, as ffprobe reads its container. Rejects when the
 * file is not an MP4 or WAV or ffprobe cannot read it.
 */
export async function probeDurationMs(path: string, signal?: AbortSignal): Promise<number> {
  const input = await sniffedInputArgs(path);
  const { stdout } = await runToEnd(
    "ffprobe",
    ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", ...input],
    signal ? { signal } : {},
  );
  const seconds = Number(stdout.trim());
  if (stdout.trim() === "" || !Number.isFinite(seconds)) {
    throw new UnreadableMediaError(`no duration in ffprobe's answer: ${stdout.trim()}`);
  }
  return Math.round(seconds * 1000);
}
