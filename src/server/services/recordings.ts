import type { Readable } from "node:stream";
import type { ExpressionBuilder } from "kysely";
import { DOWNLOAD_LINK_TTL_S } from "../auth/signed-urls.js";
import { toIso } from "../db/database.js";
import {
  BadRequestError,
  BotNotFoundError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  RangeNotSatisfiableError,
} from "../errors.js";
import { type Platform, recordingReadyWebhookEvent } from "../../core/index.js";
import type {
  DownloadLink,
  Recording,
  RecordingInfo,
  RecordingList,
  RecordingListQuery,
  RecordingFormat,
} from "../schemas/index.js";
import { recordingFilePath } from "../http/urls.js";
import { type ByteRange, parseRange } from "../storage/range.js";
import { RecordingTooLargeError } from "../storage/recordings.js";
import { enqueueWebhookEvents } from "../webhooks/outbox.js";
import { appendLog, lockBot } from "./bot-state.js";
import type { BotService } from "./bots.js";
import { expireCallbackToken } from "./callback-token.js";
import type { ServiceContext } from "./context.js";
import { recordingOptionOf, toRecording } from "./mappers.js";
import { unlessStoreFailed } from "./storage-unavailable.js";
import { type ContentOptions, queueRequestedContent } from "../jobs/content-options.js";
import type { Engines } from "../jobs/engines.js";
import type { MeetingEvents } from "../meeting-events.js";
import type { JobKind, JobState } from "../jobs/queue.js";
import type { Database } from "../db/schema.js";
import { loadSpeakerTimeline } from "./speaker-timeline.js";
import { checkedMp4Upload } from "./mp4-upload.js";

/** Largest recording accepted by the upload route. */
export const MAX_RECORDING_BYTES = 8 * 1024 ** 3;

/** The Range request's headers, as the client sent them. */
export interface RangeRequest {
  range?: string | undefined;
  ifRange?: string | undefined;
}

/** A recording ready to serve: the route decides when to open it (never for a HEAD). */
export interface RecordingFile {
  size: number;
  /** The served range for a 206, null for the whole file. */
  range: ByteRange | null;
  /** Strong validator: changes whenever the recording is uploaded again. */
  etag: string;
  /** video/mp4, or audio/mp4 for an audio-only bot's recording (format m4a). */
  mimeType: Recording["mimeType"];
  open(): Readable;
}

/** An upload for a bot whose recording its owner deleted: it is discarded, never stored again. */
export class RecordingDeletedError extends ConflictError {
  constructor() {
    super("The bot's recording was deleted by its owner; nothing more is stored for it");
  }
}

export class RecordingService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly engines: Engines,
    private readonly notesEvents: Pick<MeetingEvents, "recordingStored">,
  ) {}

  /**
   * Stores the runner's upload (the bot is already authenticated by its callback token), or a
   * recording assembled from its segments (`note` says which, in the bot's log). A stored
   * recording supersedes the segments uploaded during the call: they are removed.
   */
  async upload(
    botId: number,
    source: Readable,
    durationMs: number,
    note = "recording uploaded",
  ): Promise<Recording> {
    const upload = await checkedMp4Upload(source, "start");
    let sizeBytes: number;
    try {
      ({ sizeBytes } = await this.ctx.store.save(botId, upload, MAX_RECORDING_BYTES));
    } catch (err) {
      if (err instanceof RecordingTooLargeError) {
        throw new PayloadTooLargeError(`Recording exceeds ${err.maxBytes} bytes`);
      }
      // A 503 the runner retries: the recording is still on its disk.
      const failed = unlessStoreFailed(err, "Recording", this.ctx.log, { botId });
      if (failed !== err) throw failed;
      this.ctx.log.warn({ err, botId }, "recording upload failed");
      throw new BadRequestError("Recording upload was interrupted");
    }
    const now = toIso(this.ctx.now());
    const row = {
      bot_id: botId,
      // Set from the bot's recording option once its row is locked below.
      format: "mp4" as RecordingFormat,
      size_bytes: sizeBytes,
      duration_ms: durationMs,
      created_at: now,
    };
    let queued = 0;
    let jobsQueued = false;
    const stored = await this.ctx.db.transaction().execute(async (trx) => {
      // Deleted while the upload streamed in (the bot, or its recording): nothing may be kept for it.
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot) return "bot deleted";
      if (bot.data_deleted_at !== null) return "recording deleted";
      row.format = recordingOptionOf(bot).video ? "mp4" : "m4a";
      const replaced = await trx
        .selectFrom("recordings")
        .select("bot_id")
        .where("bot_id", "=", botId)
        .executeTakeFirst();
      await trx
        .insertInto("recordings")
        .values(row)
        .onConflict((oc) =>
          oc.column("bot_id").doUpdateSet({
            format: row.format,
            size_bytes: sizeBytes,
            duration_ms: durationMs,
            created_at: now,
          }),
        )
        .execute();
      await appendLog(trx, botId, "info", `${note} (${sizeBytes} bytes)`, now);
      // Its runner already reported DONE: this upload was all it still had to deliver.
      if (bot.status === "DONE") await expireCallbackToken(trx, botId, now);
      // recording.ready once per bot: a runner resending its upload (its answer was lost) is
      // the same recording, not news.
      if (!replaced) {
        const ready = recordingReadyWebhookEvent({ durationMs, sizeBytes });
        queued = await enqueueWebhookEvents(trx, bot, [ready], now, now);
        // The transcript and summary the bot was created with, queued before meeting.completed
        // is built: its data says `queued` for them (null only when none was asked for).
        const options = bot.content_options ? (JSON.parse(bot.content_options) as ContentOptions) : {};
        // The runner is done once its token is over (its last report, or the wind-down after the
        // server ended it): a late upload or a lost runner's salvaged segments.
        const tokenOver = bot.callback_token_expires_at !== null && bot.callback_token_expires_at <= now;
        const live = bot.live_transcript === null ? null : { runnerDone: tokenOver };
        jobsQueued = await queueRequestedContent(trx, botId, options, this.engines, this.ctx.now(), live);
        // meeting.completed of the notes interface, whose data is the meeting as stored now.
        queued += await this.notesEvents.recordingStored(trx, botId, this.ctx.now());
      }
      return "stored";
    });
    if (queued > 0) this.ctx.outbox.notify();
    if (jobsQueued) this.ctx.jobs.notify();
    if (stored !== "stored") {
      await this.ctx.store.remove(botId);
      if (stored === "bot deleted") throw new BotNotFoundError();
      throw new RecordingDeletedError();
    }
    await this.ctx.store.removeSegments(botId).catch((err: unknown) => {
      this.ctx.log.warn({ err, botId }, "could not remove the segments of a stored recording");
    });
    return this.fromRow(row);
  }

  async get(userId: number, botId: number): Promise<RecordingInfo> {
    const recording = await this.requireOwned(userId, botId);
    const durationMs = Math.round(recording.durationSeconds * 1000);
    const jobs = await this.ctx.db
      .selectFrom("content_jobs")
      .select(["kind", "state"])
      .where("bot_id", "=", botId)
      .execute();
    const stateOf = (kind: JobKind) =>
      (jobs.find((job) => job.kind === kind)?.state ?? null) as JobState | null;
    return {
      ...recording,
      transcriptStatus: stateOf("transcript"),
      summaryStatus: stateOf("summary"),
      speakerTimeline: await loadSpeakerTimeline(this.ctx.db, botId, durationMs),
    };
  }

  async downloadLink(userId: number, botId: number): Promise<DownloadLink> {
    await this.requireOwned(userId, botId);
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
    request: RangeRequest,
  ): Promise<RecordingFile> {
    if (!this.ctx.signer.verify(botId, expires, signature, this.ctx.now())) {
      throw new ForbiddenError("Invalid or expired download link");
    }
    return this.openFile(botId, request);
  }

  /** The owner's recording, for GET /v1/recordings/{bot_id}/stream. */
  async openOwned(userId: number, botId: number, request: RangeRequest): Promise<RecordingFile> {
    await this.bots.requireOwned(userId, botId);
    return this.openFile(botId, request);
  }

  /**
   * The file with RFC 9110 Range semantics: one range served as a 206; several ranges, a
   * malformed header or an If-Range that does not match the current ETag serve the whole file;
   * a start past the end is a 416. Callers have checked the credential.
   */
  async openFile(botId: number, request: RangeRequest): Promise<RecordingFile> {
    const recording = await this.require(botId);
    const size = await this.ctx.store.size(botId).catch((err: unknown) => {
      throw unlessStoreFailed(err, "Recording", this.ctx.log, { botId });
    });
    if (size === null) throw new NotFoundError("Recording not found");
    const etag = this.ctx.signer.etag(botId, `${size}.${recording.createdAt}`);
    // If-Range is compared strongly; a date (we send no Last-Modified) never matches.
    const wanted = request.ifRange === undefined || request.ifRange === etag ? request.range : undefined;
    const range = parseRange(wanted, size);
    if (range === "unsatisfiable") throw new RangeNotSatisfiableError(size);
    return {
      size,
      range,
      etag,
      mimeType: recording.mimeType,
      open: () => this.ctx.store.open(botId, range ?? undefined),
    };
  }

  /** The user's recordings, newest first. */
  async list(userId: number, query: RecordingListQuery): Promise<RecordingList> {
    const base = this.ctx.db
      .selectFrom("recordings")
      .innerJoin("bots", "bots.id", "recordings.bot_id")
      .where("bots.user_id", "=", userId);
    const jobState = (kind: JobKind) => (eb: ExpressionBuilder<Database, "recordings">) =>
      eb
        .selectFrom("content_jobs")
        .select("content_jobs.state")
        .whereRef("content_jobs.bot_id", "=", "recordings.bot_id")
        .where("content_jobs.kind", "=", kind);
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .select([
        "recordings.bot_id",
        "recordings.size_bytes",
        "recordings.format",
        "recordings.duration_ms",
        "recordings.created_at",
        "bots.bot_display_name",
        "bots.meeting_title",
        "bots.platform",
      ])
      .select((eb) => [
        jobState("transcript")(eb).as("transcript_state"),
        jobState("summary")(eb).as("summary_state"),
      ])
      .orderBy("recordings.created_at", "desc")
      .orderBy("recordings.bot_id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      recordings: rows.map((row) => ({
        botId: row.bot_id,
        botDisplayName: row.bot_display_name,
        meetingTitle: row.meeting_title,
        platform: row.platform as Platform,
        durationMs: row.duration_ms,
        // bigint comes back as a string from PostgreSQL
        sizeBytes: Number(row.size_bytes),
        format: row.format === "m4a" ? ("m4a" as const) : ("mp4" as const),
        createdAt: row.created_at,
        transcriptStatus: (row.transcript_state ?? null) as JobState | null,
        summaryStatus: (row.summary_state ?? null) as JobState | null,
      })),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  /** The caller's recording: 404 for another user's bot, as for a missing one. */
  async requireOwned(userId: number, botId: number): Promise<Recording> {
    await this.bots.requireOwned(userId, botId);
    return this.require(botId);
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
    format: string;
    size_bytes: number;
    duration_ms: number;
    created_at: string;
  }): Recording {
    return toRecording(row.bot_id, {
      rec_format: row.format,
      rec_size_bytes: row.size_bytes,
      rec_duration_ms: row.duration_ms,
      rec_created_at: row.created_at,
    }) as Recording;
  }
}
