import { createReadStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { request } from "undici";
import {
  type AccountCheckReport,
  type BotConfig,
  type LoginSessionWriteBack,
  LoginSessionWriteBackResult,
  loginSessionUrl,
} from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";
import { refusal } from "./refusal.js";

type UploadConfig = Pick<BotConfig, "botId" | "upload" | "callback">;

/**
 * Delivers the finished recording to the control plane. When its segments are all there already
 * (segment-upload.ts), one call asks the server to join them; otherwise, or if that is refused,
 * the file is PUT, streamed from disk (a recording can be gigabytes). Retried with backoff for
 * about ten minutes; removed once the server stored it, kept on disk when the upload failed.
 */
export async function uploadRecording(
  config: UploadConfig,
  recording: { path: string; durationMs: number; uploadedSegments?: number | undefined },
  log: Logger,
): Promise<void> {
  if (recording.uploadedSegments !== undefined) {
    try {
      await completeSegments(config, recording.uploadedSegments, log);
      log.info({ segments: recording.uploadedSegments }, "recording completed from its segments");
      await rm(recording.path, { force: true });
      return;
    } catch (error) {
      log.warn({ err: (error as Error).message }, "segments not completed; uploading the whole recording");
    }
  }
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

async function completeSegments(config: UploadConfig, segments: number, log: Logger): Promise<void> {
  const url = new URL(
    `/v1/bot-callbacks/${config.botId}/recording/complete`,
    config.callback.baseUrl,
  ).toString();
  await pRetry(
    async () => {
      const response = await request(url, {
        method: "POST",
        headers: { authorization: `Bearer ${config.callback.token}`, "content-type": "application/json" },
        body: JSON.stringify({ segments }),
        // The server joins and remuxes the whole recording before it answers.
        headersTimeout: 600_000,
        bodyTimeout: 60_000,
        dispatcher: controlPlaneDispatcher(config.callback),
      });
      const text = await response.body.text();
      if (response.statusCode < 300) return;
      throw refusal(
        `complete refused: HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
        response.statusCode,
      );
    },
    {
      retries: 5,
      minTimeout: 500,
      maxTimeout: 10_000,
      onFailedAttempt: ({ error, attemptNumber }) =>
        log.warn({ attempt: attemptNumber, url, err: error.message }, "complete failed, retrying"),
    },
  );
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
      throw refusal(
        `upload refused: HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
        response.statusCode,
      );
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

/**
 * PUTs a login's refreshed session to the control plane (`LoginSessionWriteBack`), retried like
 * the other deliveries; answers whether the server kept it. The body is a secret: it is never
 * logged, and neither is anything the server answers beyond its status.
 */
export async function writeBackSession(
  config: UploadConfig,
  body: LoginSessionWriteBack,
  log: Logger,
): Promise<boolean> {
  const url = loginSessionUrl(config);
  let kept = false;
  await pRetry(
    async () => {
      const response = await request(url, {
        method: "PUT",
        headers: { authorization: `Bearer ${config.callback.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
        dispatcher: controlPlaneDispatcher(config.callback),
      });
      const text = await response.body.text();
      if (response.statusCode < 300) {
        const answer = LoginSessionWriteBackResult.safeParse(JSON.parse(text || "{}"));
        kept = answer.success ? answer.data.kept : true;
        return;
      }
      throw refusal(`session write-back refused: HTTP ${response.statusCode}`, response.statusCode);
    },
    {
      retries: 5,
      minTimeout: 500,
      maxTimeout: 10_000,
      onFailedAttempt: ({ error, attemptNumber }) =>
        log.warn({ attempt: attemptNumber, url, err: error.message }, "session write-back failed, retrying"),
    },
  );
  return kept;
}

/**
 * An account check's answer, POSTed to its resultUrl with the check's token (retried with
 * backoff; a 4xx other than 429 is final). Resolves whether the server took it.
 */
export async function reportAccountCheck(
  config: Pick<BotConfig, "callback" | "accountCheck">,
  body: AccountCheckReport,
  log: Logger,
): Promise<boolean> {
  const url = config.accountCheck?.resultUrl;
  if (!url) throw new Error("not an account check");
  try {
    await pRetry(
      async () => {
        const response = await request(url, {
          method: "POST",
          headers: { authorization: `Bearer ${config.callback.token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
          headersTimeout: 60_000,
          bodyTimeout: 60_000,
          dispatcher: controlPlaneDispatcher(config.callback),
        });
        await response.body.text();
        if (response.statusCode < 300) return;
        throw refusal(`account check result refused: HTTP ${response.statusCode}`, response.statusCode);
      },
      {
        retries: 5,
        minTimeout: 500,
        maxTimeout: 10_000,
        onFailedAttempt: ({ error, attemptNumber }) =>
          log.warn(
            { attempt: attemptNumber, url, err: error.message },
            "account check report failed, retrying",
          ),
      },
    );
    return true;
  } catch (error) {
    log.error({ url, err: (error as Error).message }, "could not report the account check");
    return false;
  }
}
