import { createReadStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { request } from "undici";
import type { BotConfig } from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";

type UploadConfig = Pick<BotConfig, "botId" | "upload" | "callback">;

/**
 * PUTs the finished recording to the control plane, streamed from disk (a recording can be
 * gigabytes). Retried with backoff for about ten minutes; removed once the server stored it, kept
 * on disk when the upload failed.
 */
export async function uploadRecording(
  config: UploadConfig,
  recording: { path: string; durationMs: number },
  log: Logger,
): Promise<void> {
  const size = await putFile(config, config.upload.url, recording.path, {
    contentType: "video/mp4",
    headers: { "x-recording-duration-ms": String(recording.durationMs) },
    retries: 12,
    log,
  });
  log.info({ sizeBytes: size, durationMs: recording.durationMs }, "recording uploaded");
  // The server has it now: no second copy of the meeting is left in the work dir.
  await rm(recording.path, { force: true });
}

/** PUTs one failure artifact (screenshot, page HTML, trace); a few quick retries only. */
export async function uploadArtifact(
  config: UploadConfig,
  name: string,
  path: string,
  log: Logger,
): Promise<void> {
  const url = new URL(
    `/v1/bot-callbacks/${config.botId}/artifacts/${name}`,
    config.callback.baseUrl,
  ).toString();
  await putFile(config, url, path, { contentType: "application/octet-stream", headers: {}, retries: 3, log });
}

async function putFile(
  config: UploadConfig,
  url: string,
  path: string,
  how: { contentType: string; headers: Record<string, string>; retries: number; log: Logger },
): Promise<number> {
  const { size } = await stat(path);
  await pRetry(
    async () => {
      const response = await request(url, {
        method: "PUT",
        headers: {
          authorization: `Bearer ${config.callback.token}`,
          "content-type": how.contentType,
          "content-length": String(size),
          ...how.headers,
        },
        body: createReadStream(path),
        headersTimeout: 120_000,
        bodyTimeout: 120_000,
        dispatcher: controlPlaneDispatcher(config.callback),
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
      retries: how.retries,
      minTimeout: 500,
      maxTimeout: 60_000,
      onFailedAttempt: ({ error, attemptNumber }) =>
        how.log.warn({ attempt: attemptNumber, url, err: error.message }, "upload failed, retrying"),
    },
  );
  return size;
}
