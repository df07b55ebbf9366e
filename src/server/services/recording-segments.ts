import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { isTerminal, type BotStatus, type SubCode } from "../../core/index.js";
import { runToEnd } from "../../media/processes.js";
import { inputArgs, probeDurationMs } from "../../media/untrusted-input.js";
import { parseJson, toIso } from "../db/database.js";
import { BadRequestError, ConflictError, PayloadTooLargeError } from "../errors.js";
import type { DeploymentError, Recording } from "../schemas/index.js";
import { RecordingTooLargeError, type StoredSegment } from "../storage/recordings.js";
import { appendLog } from "./bot-state.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";
import { MAX_RECORDING_BYTES, RecordingDeletedError, type RecordingService } from "./recordings.js";
import { checkedMp4Upload } from "./mp4-upload.js";
import { unlessStoreFailed } from "./storage-unavailable.js";

/**
 * The first `limit` + 1 seqs below `count` that are not in `have` (one past the limit says "more").
 * The walk stops there, so it costs what was stored, never what a runner's `count` claims.
 */
export function missingSegments(have: ReadonlySet<number>, count: number, limit: number): number[] {
  const missing: number[] = [];
  for (let seq = 0; seq < count && missing.length <= limit; seq += 1) {
    if (!have.has(seq)) missing.push(seq);
  }
  return missing;
}

/**
 * The ways a bot ends with its runner gone (silent, or its container or Pod could not go on): no
 * runner will upload or complete its recording, so the segments it sent are all there will be.
 */
const LOST_RUNNER: readonly SubCode[] = [
  "HEARTBEAT_TIMEOUT",
  "IMAGE_PULL_FAILED",
  "OUT_OF_MEMORY",
  "EVICTED",
  "UNSCHEDULABLE",
];

/**
 * A recording uploaded during the call, in segments: consecutive byte ranges of the runner's
 * fragmented MP4 (seq 0 opens with its ftyp+moov, every one ends on a box boundary), so the
 * segments 0..n joined in order are a playable file however many arrived.
 *
 * The runner completes the recording at the end of the call (every seq up to its count must be
 * here). A runner that is lost instead leaves its segments to be salvaged: the bot's recording
 * becomes seq 0 up to the first gap. Either way the joined bytes are remuxed once into a faststart
 * MP4 and stored through RecordingService.upload, which sends recording.ready and removes them.
 *
 * Salvage runs in this process after the bot is failed, beside the request or sweep that failed
 * it; a server that stopped before it finished salvages again at startup (salvageLeftovers).
 */
export class RecordingSegmentService {
  private readonly salvaging = new Map<number, Promise<void>>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly recordings: RecordingService,
  ) {}

  /** Stores one segment; the same seq again replaces it. All of a bot's segments share the recording's size limit. */
  async save(botId: number, seq: number, source: Readable): Promise<StoredSegment> {
    await this.refuseDeleted(botId);
    const stored = await this.stored(botId);
    const others = stored.filter((s) => s.seq !== seq).reduce((total, s) => total + s.sizeBytes, 0);
    const room = MAX_RECORDING_BYTES - others;
    if (room <= 0) throw new PayloadTooLargeError(`Recording exceeds ${MAX_RECORDING_BYTES} bytes`);
    const upload = await checkedMp4Upload(source, seq === 0 ? "start" : "continuation");
    try {
      const { sizeBytes } = await this.ctx.store.saveSegment(botId, seq, upload, room);
      return { seq, sizeBytes };
    } catch (err) {
      if (err instanceof RecordingTooLargeError) {
        throw new PayloadTooLargeError(`Recording exceeds ${MAX_RECORDING_BYTES} bytes`);
      }
      const failed = unlessStoreFailed(err, "Recording", this.ctx.log, { botId, seq });
      if (failed !== err) throw failed;
      this.ctx.log.warn({ err, botId, seq }, "segment upload failed");
      throw new BadRequestError("Segment upload was interrupted");
    }
  }

  /** The runner's end of the upload: segments 0..count-1 must all be stored (409 otherwise). */
  async complete(botId: number, count: number): Promise<Recording> {
    await this.refuseDeleted(botId);
    const stored = (await this.stored(botId)).filter((s) => s.seq < count);
    const missing = missingSegments(new Set(stored.map((s) => s.seq)), count, 20);
    if (missing.length > 0) {
      const listed = missing.slice(0, 20).join(", ");
      throw new ConflictError(`Segments missing: ${listed}${missing.length > 20 ? ", ..." : ""}`);
    }
    return this.assemble(botId, stored, `recording assembled from ${count} segments`);
  }

  /**
   * Fails the bot (as BotService.failFromServer) because its runner is lost, then makes what it
   * uploaded its recording. The salvage goes on after this returns; `settled()` waits for it.
   */
  async failLostRunner(botId: number, subCode: SubCode, message: string): Promise<boolean> {
    const failed = await this.bots.failFromServer(botId, subCode, message);
    if (failed && LOST_RUNNER.includes(subCode)) this.salvageSoon(botId);
    return failed;
  }

  /**
   * At startup: segments a salvage did not get to. Those of a lost runner, or of a bot whose
   * runner can no longer upload (its callback token has expired), become its recording; those of
   * a bot with a recording, deleted, or whose recording its owner deleted, go; a bot whose runner
   * may still complete is left alone.
   */
  async salvageLeftovers(): Promise<void> {
    const now = toIso(this.ctx.now());
    for (const botId of await this.ctx.store.botsWithSegments()) {
      const bot = await this.ctx.db
        .selectFrom("bots")
        .leftJoin("recordings", "recordings.bot_id", "bots.id")
        .select([
          "bots.status",
          "bots.deployment_error",
          "bots.callback_token_expires_at",
          "bots.data_deleted_at",
        ])
        .select("recordings.bot_id as recorded")
        .where("bots.id", "=", botId)
        .executeTakeFirst();
      const done = bot && bot.recorded !== null && isTerminal(bot.status as BotStatus);
      if (!bot || done || bot.data_deleted_at !== null) {
        await this.ctx.store.removeSegments(botId);
        continue;
      }
      if (!isTerminal(bot.status as BotStatus) || bot.recorded !== null) continue;
      const code = parseJson<DeploymentError>(bot.deployment_error)?.code;
      const tokenDead = bot.callback_token_expires_at !== null && bot.callback_token_expires_at <= now;
      if ((code && LOST_RUNNER.includes(code)) || tokenDead) this.salvageSoon(botId);
    }
  }

  /** Resolves once every salvage started so far has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.salvaging.values()]);
  }

  private salvageSoon(botId: number): void {
    if (this.salvaging.has(botId)) return;
    const salvage = this.salvage(botId)
      .catch((err: unknown) =>
        this.ctx.log.error({ err, botId }, "could not salvage the recording's segments"),
      )
      .finally(() => this.salvaging.delete(botId));
    this.salvaging.set(botId, salvage);
  }

  /** Seq 0 up to the first gap becomes the recording; nothing without seq 0 (no init segment). */
  private async salvage(botId: number): Promise<void> {
    const stored = await this.stored(botId);
    const usable: StoredSegment[] = [];
    for (const segment of stored) {
      if (segment.seq !== usable.length) break;
      usable.push(segment);
    }
    const now = toIso(this.ctx.now());
    if (usable.length === 0) {
      if (stored.length > 0) {
        await appendLog(this.ctx.db, botId, "warn", "segments received without the first: no recording", now);
        await this.ctx.store.removeSegments(botId);
      }
      return;
    }
    const skipped = stored.length - usable.length;
    const note =
      `recording assembled from the ${usable.length} segments received before the runner was lost` +
      (skipped > 0 ? `; ${skipped} after a gap at seq ${usable.length} dropped` : "");
    await this.assemble(botId, usable, note);
    this.ctx.log.info({ botId, segments: usable.length, skipped }, "salvaged a lost runner's recording");
  }

  /** A bot whose recording its owner deleted takes no segments (its runner may still be winding down). */
  private async refuseDeleted(botId: number): Promise<void> {
    const bot = await this.ctx.db
      .selectFrom("bots")
      .select("data_deleted_at")
      .where("id", "=", botId)
      .executeTakeFirst();
    if (bot?.data_deleted_at) throw new RecordingDeletedError();
  }

  private async stored(botId: number): Promise<StoredSegment[]> {
    return this.ctx.store.segments(botId).catch((err: unknown) => {
      throw unlessStoreFailed(err, "Recording", this.ctx.log, { botId });
    });
  }

  /** Joins `segments` (in order, from seq 0), remuxes them into a faststart MP4 and stores it. */
  private async assemble(botId: number, segments: StoredSegment[], note: string): Promise<Recording> {
    const dir = await mkdtemp(path.join(tmpdir(), "meetbot-segments-"));
    try {
      const joined = path.join(dir, "joined.mp4");
      for (const { seq } of segments) {
        await pipeline(
          this.ctx.store.openSegment(botId, seq),
          createWriteStream(joined, { flags: "a", mode: 0o600 }),
        );
      }
      const output = path.join(dir, "recording.mp4");
      // The segments were checked to open with MP4 boxes; read them as one and nothing beside them.
      await runToEnd("ffmpeg", [
        ...["-hide_banner", "-loglevel", "error", "-nostdin", "-y", ...inputArgs("mp4", joined)],
        ...["-map", "0", "-c", "copy", "-movflags", "+faststart", output],
      ]);
      const durationMs = await probeDurationMs(output);
      return await this.recordings.upload(botId, createReadStream(output), durationMs, note);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
