import { randomBytes } from "node:crypto";
import { sha256Hex } from "../auth/tokens.js";
import { toIso } from "../db/database.js";
import { NotFoundError } from "../errors.js";
import { sharePath, shareStreamPath } from "../http/urls.js";
import type { Platform } from "../../core/index.js";
import {
  type CreatedShare,
  type CreateShareBody,
  SHARE_TTL_DEFAULT_S,
  type SharedRecording,
  type ShareInfo,
} from "../schemas/index.js";
import type { ServiceContext } from "./context.js";
import type { RangeRequest, RecordingFile, RecordingService } from "./recordings.js";
import type { TranscriptService } from "./transcripts.js";

/** Unknown, expired and revoked links are told apart by nobody: one answer for all. */
class ShareNotFoundError extends NotFoundError {
  constructor() {
    super("Share link not found");
  }
}

/**
 * Public links to one recording. A token is 256 random bits, base64url; only its sha256 is
 * stored, so a link cannot be shown again, only replaced. One live link per recording.
 */
export class ShareService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly recordings: RecordingService,
    private readonly transcripts: TranscriptService,
  ) {}

  /** A new link for the owner's recording, replacing the previous one (which stops working). */
  async create(userId: number, botId: number, input: CreateShareBody): Promise<CreatedShare> {
    await this.recordings.requireOwned(userId, botId);
    const token = randomBytes(32).toString("base64url");
    const now = this.ctx.now();
    const row = {
      bot_id: botId,
      token_hash: sha256Hex(token),
      expires_at: toIso(new Date(now.getTime() + (input?.expiresIn ?? SHARE_TTL_DEFAULT_S) * 1000)),
      created_at: toIso(now),
    };
    await this.ctx.db
      .insertInto("recording_shares")
      .values(row)
      .onConflict((oc) =>
        oc.column("bot_id").doUpdateSet({
          token_hash: row.token_hash,
          expires_at: row.expires_at,
          created_at: row.created_at,
        }),
      )
      .execute();
    return {
      token,
      url: `${this.ctx.publicBaseUrl()}${sharePath(token)}`,
      expiresAt: row.expires_at,
      createdAt: row.created_at,
    };
  }

  /** The live link's dates (an expired one is no link). */
  async get(userId: number, botId: number): Promise<ShareInfo> {
    await this.recordings.requireOwned(userId, botId);
    const row = await this.ctx.db
      .selectFrom("recording_shares")
      .select(["expires_at", "created_at"])
      .where("bot_id", "=", botId)
      .where("expires_at", ">", toIso(this.ctx.now()))
      .executeTakeFirst();
    if (!row) throw new ShareNotFoundError();
    return { expiresAt: row.expires_at, createdAt: row.created_at };
  }

  /** Revokes the link at once; 404 when there is none. */
  async revoke(userId: number, botId: number): Promise<void> {
    await this.recordings.requireOwned(userId, botId);
    const deleted = await this.ctx.db
      .deleteFrom("recording_shares")
      .where("bot_id", "=", botId)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw new ShareNotFoundError();
  }

  /** What the link shows: the meeting's title, platform, date and length, and the player's URL. */
  async view(token: string): Promise<SharedRecording> {
    const row = await this.ctx.db
      .selectFrom("recording_shares")
      .innerJoin("recordings", "recordings.bot_id", "recording_shares.bot_id")
      .innerJoin("bots", "bots.id", "recording_shares.bot_id")
      .select([
        "bots.id",
        "bots.meeting_title",
        "bots.platform",
        "recordings.duration_ms",
        "recordings.created_at",
        "recordings.format",
      ])
      .where("recording_shares.token_hash", "=", sha256Hex(token))
      .where("recording_shares.expires_at", ">", toIso(this.ctx.now()))
      .executeTakeFirst();
    if (!row) throw new ShareNotFoundError();
    return {
      meetingTitle: row.meeting_title,
      format: row.format === "m4a" ? "m4a" : "mp4",
      platform: row.platform as Platform,
      durationMs: row.duration_ms,
      createdAt: row.created_at,
      streamUrl: `${this.ctx.publicBaseUrl()}${shareStreamPath(token)}`,
      transcript: withoutBotId(await this.transcripts.find(row.id)),
    };
  }

  /** The recording behind a live link. */
  async open(token: string, request: RangeRequest): Promise<RecordingFile> {
    const row = await this.ctx.db
      .selectFrom("recording_shares")
      .select("bot_id")
      .where("token_hash", "=", sha256Hex(token))
      .where("expires_at", ">", toIso(this.ctx.now()))
      .executeTakeFirst();
    if (!row) throw new ShareNotFoundError();
    return this.recordings.openFile(row.bot_id, request);
  }
}

/** A share link shows nothing of the owner's account, not even the bot's id. */
function withoutBotId<T extends { botId: number }>(value: T | null): Omit<T, "botId"> | null {
  if (!value) return null;
  const { botId: _botId, ...rest } = value;
  return rest;
}
