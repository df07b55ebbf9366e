import type { Readable } from "node:stream";
import { DOWNLOAD_LINK_TTL_S } from "../auth/signed-urls.js";
import { toIso } from "../db/database.js";
import {
  BadRequestError,
  BotNotFoundError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  RangeNotSatisfiableError,
} from "../errors.js";
import { recordingReadyWebhookEvent, type SpeakerSegment, speakerTimeline } from "../../core/index.js";
import type { DownloadLink, Recording, RecordingInfo } from "../schemas/index.js";
import { recordingFilePath } from "../http/urls.js";
import { type ByteRange, parseRange } from "../storage/range.js";
import { RecordingTooLargeError } from "../storage/recordings.js";
import { enqueueWebhookEvents } from "../webhooks/outbox.js";
import { appendLog, lockBot } from "./bot-state.js";
import type { BotService } from "./bots.js";
import { expireCallbackToken } from "./callback-token.js";
import type { ServiceContext } from "./context.js";
import { toRecording } from "./mappers.js";

/** Largest recording accepted by the upload route. */
export const MAX_RECORDING_BYTES = 8 * 1024 ** 3;

export interface RecordingFile {
  stream: Readable;
  size: number;
  /** The served range for a 206, null for the whole file. */
  range: ByteRange | null;
}

export class RecordingService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
  ) {}

  /** Stores the runner's upload (the bot is already authenticated by its callback token). */
  async upload(botId: number, source: Readable, durationMs: number): Promise<Recording> {
    let sizeBytes: number;
    try {
      ({ sizeBytes } = await this.ctx.store.save(botId, source, MAX_RECORDING_BYTES));
    } catch (err) {
      if (err instanceof RecordingTooLargeError) {
        throw new PayloadTooLargeError(`Recording exceeds ${err.maxBytes} bytes`);
      }
      this.ctx.log.warn({ err, botId }, "recording upload failed");
      throw new BadRequestError("Recording upload was interrupted");
    }
    const now = toIso(this.ctx.now());
    const row = {
      bot_id: botId,
      format: "mp4",
      size_bytes: sizeBytes,
      duration_ms: durationMs,
      created_at: now,
    };
    let queued = 0;
    const stored = await this.ctx.db.transaction().execute(async (trx) => {
      // Deleted while the upload streamed in: nothing may be kept for it.
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot) return false;
      const replaced = await trx
        .selectFrom("recordings")
        .select("bot_id")
        .where("bot_id", "=", botId)
        .executeTakeFirst();
      await trx
        .insertInto("recordings")
        .values(row)
        .onConflict((oc) =>
          oc
            .column("bot_id")
            .doUpdateSet({ size_bytes: sizeBytes, duration_ms: durationMs, created_at: now }),
        )
        .execute();
      await appendLog(trx, botId, "info", `recording uploaded (${sizeBytes} bytes)`, now);
      // Its runner already reported DONE: this upload was all it still had to deliver.
      if (bot.status === "DONE") await expireCallbackToken(trx, botId, now);
      // recording.ready once per bot: a runner resending its upload (its answer was lost) is
      // the same recording, not news.
      if (!replaced) {
        const ready = recordingReadyWebhookEvent({ durationMs, sizeBytes });
        queued = await enqueueWebhookEvents(trx, bot, [ready], now, now);
      }
      return true;
    });
    if (queued > 0) this.ctx.outbox.notify();
    if (!stored) {
      await this.ctx.store.remove(botId);
      throw new BotNotFoundError();
    }
    return this.fromRow(row);
  }

  async get(userId: number, botId: number): Promise<RecordingInfo> {
    await this.bots.requireOwned(userId, botId);
    const recording = await this.require(botId);
    return { ...recording, speakerTimeline: await this.speakerTimeline(botId, recording) };
  }

  private async speakerTimeline(botId: number, recording: Recording): Promise<SpeakerSegment[]> {
    const bot = await this.ctx.db
      .selectFrom("bots")
      .select("recording_started_at")
      .where("id", "=", botId)
      .executeTakeFirst();
    if (!bot?.recording_started_at) return [];
    const changes = await this.ctx.db
      .selectFrom("speaker_changes")
      .selectAll()
      .where("bot_id", "=", botId)
      .orderBy("id")
      .execute();
    return speakerTimeline(
      changes.map((c) => ({
        type: c.change === "started" ? "speaker.started" : "speaker.stopped",
        participantId: c.participant_id,
        participantName: c.participant_name,
        eventTime: c.event_time,
      })),
      { startedAt: bot.recording_started_at, durationMs: Math.round(recording.durationSeconds * 1000) },
    );
  }

  async downloadLink(userId: number, botId: number): Promise<DownloadLink> {
    await this.get(userId, botId);
    const expires = Math.floor(this.ctx.now().getTime() / 1000) + DOWNLOAD_LINK_TTL_S;
    const signature = this.ctx.signer.sign(botId, expires);
    return {
      url: `${this.ctx.publicBaseUrl()}${recordingFilePath(botId)}?expires=${expires}&signature=${signature}`,
      expiresAt: new Date(expires * 1000).toISOString(),
    };
  }

  /** The file behind a signed link; the signature is the only credential. */
  async openSigned(
    botId: number,
    expires: string | undefined,
    signature: string | undefined,
    rangeHeader: string | undefined,
  ): Promise<RecordingFile> {
    if (!this.ctx.signer.verify(botId, expires, signature, this.ctx.now())) {
      throw new ForbiddenError("Invalid or expired download link");
    }
    await this.require(botId);
    const size = await this.ctx.store.size(botId);
    if (size === null) throw new NotFoundError("Recording not found");
    const range = parseRange(rangeHeader, size);
    if (range === "unsatisfiable") throw new RangeNotSatisfiableError(size);
    return { stream: this.ctx.store.open(botId, range ?? undefined), size, range };
  }

  private async require(botId: number): Promise<Recording> {
    const row = await this.ctx.db
      .selectFrom("recordings")
      .selectAll()
      .where("bot_id", "=", botId)
      .executeTakeFirst();
    if (!row) throw new NotFoundError("Recording not found");
    return this.fromRow(row);
  }

  private fromRow(row: {
    bot_id: number;
    size_bytes: number;
    duration_ms: number;
    created_at: string;
  }): Recording {
    return toRecording(row.bot_id, {
      rec_size_bytes: row.size_bytes,
      rec_duration_ms: row.duration_ms,
      rec_created_at: row.created_at,
    }) as Recording;
  }
}
