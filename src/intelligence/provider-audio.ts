import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { inputArgs, probeDurationMs } from "../media/untrusted-input.js";
import { readableFormat, runFfmpeg, SAMPLE_RATE, withoutDirectories } from "./audio.js";
import { EngineError } from "./types.js";

export interface AudioChunk {
  path: string;
  /** Where the chunk starts in the recording: added to every time the provider gives for it. */
  startMs: number;
  durationMs: number;
}

export interface UploadAudio {
  durationMs: number;
  chunks: AudioChunk[];
}

/**
 * The audio the provider engines upload: 16 kHz mono WAV, cut into chunks of `chunkSeconds` when
 * asked (OpenAI caps an upload at 25 MB; 10 min of 16 kHz mono PCM is 19.2 MB). The chunks are
 * files in `workDir`, streamed from disk by the callers, so memory stays bounded for a 4-hour
 * meeting. A WAV input short enough for one chunk is uploaded as it is. Unlike `extractAudio`
 * (one WAV, for pocketsphinx), this writes the chunks straight from the recording in one pass;
 * both run ffmpeg through `runFfmpeg`.
 */
export async function prepareUploadAudio(
  mediaPath: string,
  workDir: string,
  chunkSeconds?: number,
  signal?: AbortSignal,
): Promise<UploadAudio> {
  const format = await readableFormat(mediaPath);
  const durationMs = await durationOrEngineError(mediaPath, signal);
  const oneChunk = chunkSeconds === undefined || durationMs <= chunkSeconds * 1000;
  if (oneChunk && format === "wav") {
    return { durationMs, chunks: [{ path: mediaPath, startMs: 0, durationMs }] };
  }
  const list = join(workDir, "chunks.csv");
  const split = oneChunk
    ? []
    : ["-f", "segment", "-segment_time", String(chunkSeconds), "-segment_list", list];
  const target = join(workDir, oneChunk ? "audio.wav" : "chunk-%05d.wav");
  await runFfmpeg(
    [
      ...["-hide_banner", "-loglevel", "error", "-nostdin", "-y", ...inputArgs(format, mediaPath)],
      ...["-vn", "-ac", "1", "-ar", String(SAMPLE_RATE), "-c:a", "pcm_s16le", ...split, target],
    ],
    signal,
  );
  if (oneChunk) return { durationMs, chunks: [{ path: target, startMs: 0, durationMs }] };
  // The segment list gives each chunk's exact start and end (seconds): "chunk-00000.wav,0.000,600.000".
  const rows = (await readFile(list, "utf8")).trim().split("\n");
  const chunks = rows.map((row) => {
    const [name = "", start = "0", end = "0"] = row.split(",");
    const startMs = Math.round(Number(start) * 1000);
    return { path: join(workDir, name), startMs, durationMs: Math.round(Number(end) * 1000) - startMs };
  });
  return { durationMs, chunks };
}

/** probeDurationMs, its failure an engine's media_unreadable. */
async function durationOrEngineError(path: string, signal?: AbortSignal): Promise<number> {
  try {
    return await probeDurationMs(path, signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw new EngineError(
      "media_unreadable",
      withoutDirectories(`cannot read ${path}: ${(error as Error).message}`, [path]),
      false,
    );
  }
}

/** A file streamed from disk that tells how far it got (0..1), at most once per percent. */
export async function fileStream(
  path: string,
  onFraction?: (fraction: number) => void,
): Promise<{ stream: Readable; size: number }> {
  const { size } = await stat(path);
  const stream = createReadStream(path);
  if (onFraction) {
    let sent = 0;
    let reported = 0;
    stream.on("data", (chunk) => {
      sent += chunk.length;
      const fraction = size === 0 ? 1 : sent / size;
      if (fraction - reported >= 0.01 || fraction === 1) {
        reported = fraction;
        onFraction(fraction);
      }
    });
  }
  return { stream, size };
}

/**
 * A multipart/form-data body whose one file part is streamed from disk, with its exact length (so
 * servers that want Content-Length get it). Fields are sent in the order given.
 */
export async function multipartBody(
  fields: Array<[name: string, value: string]>,
  file: { field: string; path: string; filename: string; contentType: string },
): Promise<{ body: Readable; contentType: string; length: number }> {
  const boundary = `meetbot-${randomBytes(12).toString("hex")}`;
  const head = Buffer.from(
    fields
      .map(
        ([name, value]) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      )
      .join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\n` +
      `Content-Type: ${file.contentType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { size } = await stat(file.path);
  async function* parts(): AsyncGenerator<Buffer> {
    yield head;
    for await (const chunk of createReadStream(file.path)) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts()),
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + size + tail.length,
  };
}
