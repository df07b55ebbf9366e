import { createWriteStream } from "node:fs";
import { mkdir, open, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Logger } from "pino";
import pRetry from "p-retry";
import { request } from "undici";
import { type BotConfig, outputClipUrl } from "../../core/index.js";
import { spawnTied, tailOutput, terminate, waitForExit } from "../../media/processes.js";
import { controlPlaneDispatcher } from "../control-plane-tls.js";
import { refusal } from "../refusal.js";

/** The server renders clips at most this long (20 MB of upload decodes to less): a bigger answer is not one. */
const MAX_CLIP_BYTES = 256 * 1024 * 1024;

/**
 * Fetches a clip the server rendered (core PlayAudioPayload) into `dir`; answers its path. Bytes
 * from the server are still checked: a WAV (RIFF/WAVE) of a sane size, or the sound is refused.
 */
export async function fetchClip(
  config: Pick<BotConfig, "botId" | "callback">,
  clipId: string,
  dir: string,
  log: Logger,
): Promise<string> {
  const path = join(dir, `${clipId}.wav`);
  await fetchOutput(config, outputClipUrl(config, clipId), path, MAX_CLIP_BYTES, log);
  if (!(await isWav(path))) {
    await rm(path, { force: true });
    throw new Error(`clip ${clipId} is not a WAV file`);
  }
  return path;
}

/**
 * Fetches something the server made for the bot to send (a clip, a picture) from `url` with the
 * callback token into `path`, retried; an answer over `maxBytes` is not one.
 */
export async function fetchOutput(
  config: Pick<BotConfig, "callback">,
  url: string,
  path: string,
  maxBytes: number,
  log: Logger,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const what = basename(path);
  await pRetry(
    async () => {
      const response = await request(url, {
        headers: { authorization: `Bearer ${config.callback.token}` },
        headersTimeout: 15_000,
        bodyTimeout: 30_000,
        dispatcher: controlPlaneDispatcher(config.callback),
      });
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        throw refusal(`${what}: HTTP ${response.statusCode}: ${text.slice(0, 300)}`, response.statusCode);
      }
      const size = Number(response.headers["content-length"] ?? 0);
      if (size > maxBytes) {
        response.body.destroy();
        throw refusal(`${what}: ${size} bytes is too large`, 422);
      }
      await pipeline(response.body, createWriteStream(path));
    },
    {
      retries: 3,
      minTimeout: 300,
      onFailedAttempt: ({ error, attemptNumber }) =>
        log.warn({ file: what, attempt: attemptNumber, err: error.message }, "output fetch failed"),
    },
  );
}

async function isWav(path: string): Promise<boolean> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(12);
    const { bytesRead } = await file.read(head, 0, 12, 0);
    return (
      bytesRead === 12 &&
      head.toString("latin1", 0, 4) === "RIFF" &&
      head.toString("latin1", 8, 12) === "WAVE"
    );
  } finally {
    await file.close();
  }
}

/**
 * paplay's buffer. At 20 ms the first sound reached the microphone 15 ms after the start, but a
 * busy machine (three bots on two cores) starved the stream: PulseAudio filled the gaps with
 * silence (a 23 ms and a 6 ms hole in one sentence, which pocketsphinx then misheard). 100 ms
 * rides that out.
 */
const PLAYBACK_LATENCY_MS = 100;

/**
 * Plays a WAV file into `sink` with paplay (ffmpeg's PulseAudio output buffers far more:
 * measured, nothing in the first 1.5 s). Resolves when it ended or `signal` stopped it; rejects
 * when paplay fails.
 */
export async function playWav(
  pulseEnv: Record<string, string>,
  sink: string,
  path: string,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return;
  const player = spawnTied("paplay", [`--latency-msec=${PLAYBACK_LATENCY_MS}`, "-d", sink, path], {
    env: pulseEnv,
    stdio: ["ignore", "ignore", "pipe"],
    deathSignal: "KILL",
  });
  const output = tailOutput(player);
  const stop = () => void terminate(player, 500);
  signal.addEventListener("abort", stop, { once: true });
  try {
    const code = await waitForExit(player);
    if (code !== 0 && !signal.aborted) throw new Error(`paplay exited with ${code}: ${output()}`);
  } finally {
    signal.removeEventListener("abort", stop);
  }
}
