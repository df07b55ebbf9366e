import { open } from "node:fs/promises";
import { OUTPUT_IMAGE_MAX_HEIGHT, OUTPUT_IMAGE_MAX_WIDTH } from "../core/index.js";
import { ffmpegComplaint, runToEnd } from "./processes.js";

/**
 * Pictures a user gives a bot's camera (a PNG or a JPEG) are untrusted input, like the runners'
 * media (untrusted-input.ts): the server checks their first bytes, then has ffmpeg read them as
 * that format only (never probed, no other file opened) and write them again as the one format
 * the runner shows: a PNG within OUTPUT_IMAGE_MAX_WIDTH x OUTPUT_IMAGE_MAX_HEIGHT, alpha kept,
 * no metadata. The runner then never decodes a user's file, only the server's PNG.
 */

export type PictureFormat = "png" | "jpeg";

/** PNG's 8-byte signature; a JPEG starts with SOI (FF D8) and a marker (FF). */
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff]);

/**
 * The largest picture decoded (8192 x 4096, an 8K photo fits): a few kilobytes of PNG can declare
 * a picture of gigabytes, which ffmpeg would try to allocate. ffmpeg refuses past it (max_pixels).
 */
const MAX_DECODED_PIXELS = 8192 * 4096;
/** A picture takes ffmpeg well under a second here; a stuck one is killed. */
const NORMALIZE_TIMEOUT_MS = 30_000;

/** A picture that is not the format it claims, or that ffmpeg cannot read: the message says why. */
export class UndecodablePictureError extends Error {}

/** Which format `head` (a file's first bytes) opens, or null. */
export function pictureFormatOf(head: Buffer): PictureFormat | null {
  if (head.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) return "png";
  if (head.subarray(0, JPEG_START.length).equals(JPEG_START)) return "jpeg";
  return null;
}

/**
 * Reads `input` as `format` and writes the camera's PNG at `output`; answers its size. Rejects
 * with UndecodablePictureError when the bytes are not that format or do not decode.
 */
export async function normalizePicture(
  input: string,
  format: PictureFormat,
  output: string,
): Promise<{ width: number; height: number }> {
  const found = pictureFormatOf(await firstBytes(input, 8));
  if (found !== format) {
    throw new UndecodablePictureError(
      `the file is not a ${format.toUpperCase()} (its first bytes are ${found ? `a ${found.toUpperCase()}'s` : "neither a PNG's nor a JPEG's"})`,
    );
  }
  const fit = `scale=w='min(${OUTPUT_IMAGE_MAX_WIDTH},iw)':h='min(${OUTPUT_IMAGE_MAX_HEIGHT},ih)':force_original_aspect_ratio=decrease`;
  const args = [
    ...["-nostdin", "-hide_banner", "-loglevel", "error"],
    ...["-protocol_whitelist", "file", "-max_pixels", String(MAX_DECODED_PIXELS)],
    ...["-f", `${format}_pipe`, "-i", input],
    ...["-vf", `${fit},format=rgba`, "-frames:v", "1", "-map_metadata", "-1"],
    ...["-f", "image2", "-c:v", "png", "-y", output],
  ];
  try {
    await runToEnd("ffmpeg", args, { signal: AbortSignal.timeout(NORMALIZE_TIMEOUT_MS) });
  } catch (err) {
    const { stderr, name } = err as { stderr?: string; name?: string };
    if (name === "AbortError") {
      throw new Error(`ffmpeg took longer than ${NORMALIZE_TIMEOUT_MS} ms`, { cause: err });
    }
    throw new UndecodablePictureError(
      `the ${format.toUpperCase()} does not decode: ${ffmpegComplaint(stderr || (err as Error).message, args)}`,
      { cause: err },
    );
  }
  const size = pngSize(await firstBytes(output, 24));
  if (!size) throw new UndecodablePictureError("the picture decoded to nothing");
  return size;
}

/** A PNG's width and height from its IHDR chunk (bytes 16-23), or null when it is not a PNG. */
export function pngSize(head: Buffer): { width: number; height: number } | null {
  if (head.length < 24 || pictureFormatOf(head) !== "png" || head.toString("latin1", 12, 16) !== "IHDR") {
    return null;
  }
  return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
}

/** The first `count` bytes of a file (fewer in a shorter one, none when there is no file). */
async function firstBytes(path: string, count: number): Promise<Buffer> {
  const file = await open(path, "r").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (!file) return Buffer.alloc(0);
  try {
    const head = Buffer.alloc(count);
    const { bytesRead } = await file.read(head, 0, count, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}
