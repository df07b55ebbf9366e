import { wavDataBytes } from "../intelligence/audio.js";
import { ffmpegComplaint, runToEnd } from "../media/processes.js";

/**
 * The one format every sound a bot plays comes in (core/commands.ts, PlayAudioPayload): WAV,
 * 48 kHz, mono, signed 16-bit. The runner only plays clips; whatever the sound was made from
 * (speech rendered from text, a user's MP3), it is turned into this here, on the server.
 */
export const CLIP_SAMPLE_RATE = 48_000;
const CLIP_BYTES_PER_SECOND = CLIP_SAMPLE_RATE * 2;

/** ffmpeg's output options for a clip: the first audio stream, resampled, no metadata chunk. */
const CLIP_OUTPUT = [
  ...["-map", "0:a:0", "-vn", "-ac", "1", "-ar", String(CLIP_SAMPLE_RATE), "-c:a", "pcm_s16le"],
  // No LIST chunk: the header is the plain 44 bytes every player expects.
  ...["-map_metadata", "-1", "-fflags", "+bitexact", "-f", "wav", "-y"],
];

/**
 * Decoding 20 MB of audio, or rendering 4096 characters of speech (4 s for 4 minutes of it with
 * flite here), takes far less; a stuck ffmpeg is killed.
 */
const RENDER_TIMEOUT_MS = 120_000;

/** The formats a file to play may come in, each read as that and nothing else. */
export const INPUT_FORMATS = ["wav", "mp3", "ogg"] as const;
export type InputFormat = (typeof INPUT_FORMATS)[number];

/** Audio ffmpeg cannot read, or that holds no sound: the message says why (ffmpeg's first line). */
export class UndecodableAudioError extends Error {}

/** ffmpeg failed; the message is its first line of complaint (or that it took too long). */
export class FfmpegError extends Error {}

/**
 * Decodes `input` (read as `format` only: it is untrusted, so never probed and allowed to open no
 * other file, as media/untrusted-input.ts explains) into a clip at `output`. Answers the clip's
 * length. Rejects with UndecodableAudioError when ffmpeg cannot read it, it has no audio stream,
 * or no sound at all.
 */
export async function decodeToClip(input: string, format: InputFormat, output: string): Promise<number> {
  let durationMs: number;
  try {
    durationMs = await renderClip(["-protocol_whitelist", "file", "-f", format, "-i", input], output);
  } catch (err) {
    if (!(err instanceof FfmpegError)) throw err;
    // `-map 0:a:0` found nothing to map: a container of video only (or of nothing).
    if (err.message.includes("matches no streams"))
      throw new UndecodableAudioError("the file has no audio stream");
    throw new UndecodableAudioError(`the audio cannot be read as ${format.toUpperCase()}: ${err.message}`);
  }
  if (durationMs === 0) throw new UndecodableAudioError("the audio holds no sound (0 samples)");
  return durationMs;
}

/**
 * Runs ffmpeg quietly (errors only) with `inputArgs` (`-f wav -i <file>`, or `-f lavfi -i <graph>`
 * for a source filter such as flite) and the clip format's output options, writing `output`.
 * Answers the clip's length, measured from its PCM; rejects with FfmpegError.
 */
export async function renderClip(inputArgs: string[], output: string): Promise<number> {
  const args = ["-nostdin", "-hide_banner", "-loglevel", "error", ...inputArgs, ...CLIP_OUTPUT, output];
  try {
    await runToEnd("ffmpeg", args, { signal: AbortSignal.timeout(RENDER_TIMEOUT_MS) });
  } catch (err) {
    const { stderr, name } = err as { stderr?: string; name?: string };
    if (name === "AbortError") throw new FfmpegError(`ffmpeg took longer than ${RENDER_TIMEOUT_MS} ms`);
    throw new FfmpegError(ffmpegComplaint(stderr || (err as Error).message, args));
  }
  return clipDurationMs(output);
}

/** A clip's length in ms, from the size of its PCM (2 bytes a sample, one channel). */
export async function clipDurationMs(clip: string): Promise<number> {
  return Math.round(((await wavDataBytes(clip)) / CLIP_BYTES_PER_SECOND) * 1000);
}
