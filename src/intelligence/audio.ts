import type { ChildProcess } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { spawnTied, tailOutput, terminate, waitForExit } from "../media/processes.js";
import { inputArgs, type MediaFormat, sniffFormat } from "../media/untrusted-input.js";
import { EngineError } from "./types.js";

/** 16 kHz, mono, 16-bit: what pocketsphinx's acoustic model was trained on, and what providers accept. */
export const SAMPLE_RATE = 16_000;
const BYTES_PER_SECOND = SAMPLE_RATE * 2;

export interface ExtractedAudio {
  /** A 16 kHz mono 16-bit PCM WAV file in a private temporary directory. */
  path: string;
  durationMs: number;
  /** Removes the temporary directory; safe to call twice. */
  dispose(): Promise<void>;
}

/**
 * Extracts a recording's audio once, with ffmpeg writing straight to a temporary WAV file: nothing
 * of the audio passes through this process's memory, so a 4-hour meeting (about 460 MB of PCM)
 * costs disk, not heap. The duration comes from the WAV's own data chunk (exact, no second probe).
 */
export async function extractAudio(
  mediaPath: string,
  options: { signal?: AbortSignal; tmpDir?: string } = {},
): Promise<ExtractedAudio> {
  const { signal } = options;
  signal?.throwIfAborted();
  const dir = await mkdtemp(path.join(options.tmpDir ?? tmpdir(), "meetbot-audio-"));
  const dispose = () => rm(dir, { recursive: true, force: true });
  const wavPath = path.join(dir, "audio.wav");
  try {
    await runFfmpeg(
      [
        ...[
          "-nostdin",
          "-hide_banner",
          "-loglevel",
          "error",
          ...inputArgs(await readableFormat(mediaPath), mediaPath),
        ],
        ...["-map", "0:a:0", "-vn", "-ac", "1", "-ar", String(SAMPLE_RATE), "-c:a", "pcm_s16le"],
        // No metadata chunk: the header stays the plain 44 bytes other tools expect.
        ...["-map_metadata", "-1", "-fflags", "+bitexact", "-f", "wav", "-y", wavPath],
      ],
      signal,
    );
    const durationMs = Math.round(((await wavDataBytes(wavPath)) / BYTES_PER_SECOND) * 1000);
    return { path: wavPath, durationMs, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/**
 * A recording's format, from its first bytes: it is read as that and nothing else (untrusted bytes,
 * media/untrusted-input.ts). A file that is neither an MP4 nor a WAV is `media_unreadable`.
 */
export async function readableFormat(mediaPath: string): Promise<MediaFormat> {
  const format = await sniffFormat(mediaPath).catch((error: Error) => {
    throw new EngineError(
      "media_unreadable",
      withoutDirectories(`cannot read ${mediaPath}: ${error.message}`, [mediaPath]),
      false,
    );
  });
  if (!format)
    throw new EngineError(
      "media_unreadable",
      `${path.basename(mediaPath)} is neither an MP4 nor a WAV file`,
      false,
    );
  return format;
}

/**
 * Runs ffmpeg to completion, tied to this process: a missing ffmpeg is `engine_unavailable`, a
 * failure `media_unreadable` (retrying cannot help), an abort kills it and rejects with the reason.
 */
export async function runFfmpeg(args: string[], signal: AbortSignal | undefined): Promise<void> {
  let child: ChildProcess;
  try {
    child = spawnTied("ffmpeg", args, { stdio: ["ignore", "ignore", "pipe"], deathSignal: "KILL" });
  } catch (error) {
    throw new EngineError("engine_unavailable", `ffmpeg could not be started: ${String(error)}`, false);
  }
  const tail = tailOutput(child, 10);
  // The server's own paths (its data dir) are nobody's business in a job's error.
  const output = () => withoutDirectories(tail(), args);
  const spawnError = new Promise<never>((_, reject) =>
    child.once("error", (error) =>
      reject(new EngineError("engine_unavailable", `ffmpeg could not be started: ${error.message}`, false)),
    ),
  );
  const onAbort = () => void terminate(child, 1_000);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const code = await Promise.race([waitForExit(child), spawnError]);
    signal?.throwIfAborted();
    // setpriv answers 127 when it cannot execute the program: ffmpeg is not installed.
    if (code === 127)
      throw new EngineError("engine_unavailable", `ffmpeg could not be started: ${output()}`, false);
    if (code !== 0) {
      // A file without audio, a truncated upload, a format ffmpeg does not know: retrying cannot help.
      throw new EngineError(
        "media_unreadable",
        `ffmpeg could not read the audio (${code}): ${output()}`,
        false,
      );
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** `text` with each absolute path among `args` cut to its file name. */
export function withoutDirectories(text: string, args: readonly string[]): string {
  return args
    .filter((arg) => path.isAbsolute(arg))
    .reduce((result, file) => result.split(file).join(path.basename(file)), text);
}

/** The size of a WAV file's `data` chunk, found by walking its RIFF chunks. */
export async function wavDataBytes(wavPath: string): Promise<number> {
  const file = await open(wavPath, "r");
  try {
    const header = Buffer.alloc(12);
    await file.read(header, 0, 12, 0);
    if (header.toString("ascii", 0, 4) !== "RIFF" || header.toString("ascii", 8, 12) !== "WAVE") {
      throw new EngineError("media_unreadable", "the extracted audio is not a WAV file", false);
    }
    const { size } = await file.stat();
    const chunk = Buffer.alloc(8);
    for (let offset = 12; offset + 8 <= size;) {
      await file.read(chunk, 0, 8, offset);
      const length = chunk.readUInt32LE(4);
      // ffmpeg leaves the size at 0 or 0xFFFFFFFF when it could not seek back: the rest is data.
      if (chunk.toString("ascii", 0, 4) === "data") {
        return length === 0 || length === 0xffffffff
          ? size - offset - 8
          : Math.min(length, size - offset - 8);
      }
      offset += 8 + length + (length % 2);
    }
    return 0;
  } finally {
    await file.close();
  }
}
