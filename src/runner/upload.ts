import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { request } from "undici";
import type { BotConfig } from "../core/index.js";

/**
 * PUTs the finished recording to the control plane, streamed from disk (a recording can be
 * gigabytes). Retried with backoff for about ten minutes; the file stays on disk either way.
 */
export async function uploadRecording(
  config: Pick<BotConfig, "upload" | "callback">,
  recording: { path: string; durationMs: number },
  log: Logger,
): Promise<void> {
  const { size } = await stat(recording.path);
  await pRetry(
    async () => {
      const response = await request(config.upload.url, {
        method: "PUT",
        headers: {
          authorization: `Bearer ${config.callback.token}`,
          "content-type": "video/mp4",
          "content-length": String(size),
          "x-recording-duration-ms": String(recording.durationMs),
        },
        body: createReadStream(recording.path),
        headersTimeout: 120_000,
        bodyTimeout: 120_000,
      });
      const text = await response.body.text();
      if (response.statusCode < 300) return;
      const failure = new Error(`upload refused: HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
      if (response.statusCode >= 400 && response.statusCode < 500 && response.statusCode !== 429) {
        throw new AbortError(failure);
      }
      throw failure;
    },
    {
      retries: 12,
      minTimeout: 500,
      maxTimeout: 60_000,
      onFailedAttempt: ({ error, attemptNumber }) =>
        log.warn({ attempt: attemptNumber, err: error.message }, "recording upload failed, retrying"),
    },
  );
  log.info({ sizeBytes: size, durationMs: recording.durationMs }, "recording uploaded");
}
