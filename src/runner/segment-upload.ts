import { type FileHandle, open } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { request } from "undici";
import type { BotConfig } from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";
import { refusal } from "./refusal.js";
import { completeBoxes, segmentEnd } from "./mp4-boxes.js";

type SegmentConfig = Pick<BotConfig, "botId" | "callback">;

/**
 * The most one segment carries. After an outage the backlog goes in pieces this size, so no PUT
 * holds more than this in memory or has to start over from further back.
 */
const MAX_SEGMENT_BYTES = 16 * 1024 ** 2;
/** Retries of each final segment at the end of the call; after that the whole upload takes over. */
const FINAL_RETRIES = 5;

/**
 * Uploads the recording while ffmpeg writes it, so that a runner that dies (SIGKILL, a lost
 * container) has lost at most the last `intervalMs` of it.
 *
 * ffmpeg already writes a fragmented MP4 that is flushed every second (recorder.ts), so the file
 * on disk is the spool: every interval the uploader reads the complete top-level boxes past what
 * the server has and PUTs them as the next seq (seq 0 opens with ftyp+moov; no segment splits a
 * moof from its mdat). The server joins seq 0..n into one file, so the cut points need no other
 * bookkeeping, and nothing is copied: a segment is read from the recording when it is sent.
 * This is simpler and sturdier than ffmpeg's segment or dash muxers, which would change the file
 * the recorder writes (and its crash behaviour) and leave many files to track and clean up.
 *
 * One PUT at a time, in order. During the call a failed PUT is retried with backoff for as long
 * as it takes (a control-plane outage only delays it: the next segment then carries the backlog);
 * nothing here ever waits on or slows ffmpeg.
 */
export class SegmentUploader {
  private file: FileHandle | null = null;
  private sentBytes = 0;
  private nextSeq = 0;
  private loop: Promise<void> | null = null;
  /** Ends the interval loop and any retry in progress. */
  private readonly stopLoop = new AbortController();
  /** Set when a segment could not be delivered for good: the whole upload will have to do. */
  private broken = false;

  constructor(
    private readonly config: SegmentConfig,
    private readonly path: string,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** Bytes the server has acknowledged. */
  get uploadedBytes(): number {
    return this.sentBytes;
  }

  /** Starts following the recording (the file must exist: ffmpeg has written its first frame). */
  async start(): Promise<void> {
    // Held open: a rename of the path at the end (recorder.ts joins restarted parts) leaves it be.
    this.file = await open(this.path, "r");
    this.loop = this.run();
  }

  /**
   * After ffmpeg has finalized the file: sends the rest of it and answers how many segments the
   * server has (seq 0 to n-1, the whole file), or null when some could not be delivered.
   */
  async finish(): Promise<number | null> {
    await this.halt();
    if (!this.file || this.broken) return this.close(null);
    try {
      const delivered = await this.sendAvailable(FINAL_RETRIES, Number.POSITIVE_INFINITY);
      const { size } = await this.file.stat();
      return this.close(delivered && this.sentBytes === size && this.nextSeq > 0 ? this.nextSeq : null);
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, "last recording segments not delivered");
      return this.close(null);
    }
  }

  /** Stops without sending more (the recording is delivered whole instead). */
  async abandon(): Promise<void> {
    await this.halt();
    await this.close(null);
  }

  private async halt(): Promise<void> {
    this.stopLoop.abort();
    await this.loop;
  }

  private async close(result: number | null): Promise<number | null> {
    await this.file?.close().catch(() => {});
    this.file = null;
    return result;
  }

  private async run(): Promise<void> {
    const { signal } = this.stopLoop;
    while (!signal.aborted && !this.broken) {
      try {
        await sleep(this.intervalMs, undefined, { signal });
        await this.sendAvailable(Number.POSITIVE_INFINITY, MAX_SEGMENT_BYTES);
      } catch (error) {
        if (signal.aborted) return;
        // Refused for good (4xx): later segments would leave a gap anyway.
        this.broken = true;
        this.log.warn(
          { err: (error as Error).message },
          "recording segments stopped; the whole file is uploaded at the end",
        );
      }
    }
  }

  /** PUTs the complete boxes past `sentBytes`, in segments of at most `limit` bytes. False if stopped. */
  private async sendAvailable(retries: number, limit: number): Promise<boolean> {
    const file = this.file as FileHandle;
    const { size } = await file.stat();
    const read = async (position: number, length: number) => {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await file.read(buffer, 0, length, position);
      return buffer.subarray(0, bytesRead);
    };
    let boxes = await completeBoxes(read, this.sentBytes, size);
    for (;;) {
      const end = segmentEnd(boxes, this.sentBytes, limit);
      if (end === null) return true;
      const bytes = await read(this.sentBytes, end - this.sentBytes);
      if (!(await this.put(this.nextSeq, bytes, retries))) return false;
      this.sentBytes = end;
      this.nextSeq += 1;
      boxes = boxes.filter((box) => box.start >= end);
    }
  }

  /** True once the server stored the segment; false if stopped first; throws when refused for good. */
  private async put(seq: number, bytes: Buffer, retries: number): Promise<boolean> {
    const url = new URL(
      `/v1/bot-callbacks/${this.config.botId}/recording/segments/${seq}`,
      this.config.callback.baseUrl,
    ).toString();
    // During the call a retry ends when the loop is stopped; at the end none is pending.
    const signal = retries === Number.POSITIVE_INFINITY ? this.stopLoop.signal : undefined;
    try {
      await pRetry(
        async () => {
          const response = await request(url, {
            method: "PUT",
            headers: {
              authorization: `Bearer ${this.config.callback.token}`,
              "content-type": "video/mp4",
              "content-length": String(bytes.length),
            },
            body: bytes,
            headersTimeout: 60_000,
            bodyTimeout: 60_000,
            dispatcher: controlPlaneDispatcher(this.config.callback),
          });
          const text = await response.body.text();
          if (response.statusCode < 300) return;
          throw refusal(
            `segment ${seq} refused: HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
            response.statusCode,
          );
        },
        {
          retries,
          minTimeout: 500,
          maxTimeout: 10_000,
          ...(signal ? { signal } : {}),
          onFailedAttempt: ({ error, attemptNumber }) => {
            if (attemptNumber === 1 || attemptNumber % 10 === 0)
              this.log.warn(
                { seq, attempt: attemptNumber, err: error.message },
                "segment upload failed, retrying",
              );
          },
        },
      );
      return true;
    } catch (error) {
      if (signal?.aborted) return false;
      throw error;
    }
  }
}
