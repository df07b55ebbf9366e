import path from "node:path";
import {
  BotConfig,
  type BotConfigInput,
  type BotStatus,
  type CallbackEvent,
  isPlatformHost,
  type MeetingInfo,
  type SubCode,
} from "../../core/index.js";
import { newCallbackToken, sha256Hex } from "../auth/tokens.js";
import { parseJson, toIso } from "../db/database.js";
import type { BotRow } from "../db/schema.js";
import { BotNotFoundError, ConflictError, ServiceUnavailableError, ValidationError } from "../errors.js";
import type {
  Bot,
  BotDetail,
  BotList,
  BotListQuery,
  CreateBotBody,
  DeploymentError,
  DeployResult,
} from "../schemas/index.js";
import { appendDerivedEvents, appendLog, applyStatusChange, lockBot } from "./bot-state.js";
import type { ServiceContext } from "./context.js";
import { type RecordingColumns, recordingColumns, toRecording } from "./recordings.js";

export class BotService {
  constructor(private readonly ctx: ServiceContext) {}

  async create(userId: number, input: CreateBotBody): Promise<Bot> {
    this.checkMeetingHost(input.meetingInfo);
    const now = toIso(this.ctx.now());
    const row = await this.ctx.db
      .insertInto("bots")
      .values({
        user_id: userId,
        bot_display_name: input.botDisplayName,
        meeting_title: input.meetingTitle,
        status: "READY_TO_DEPLOY",
        platform: input.meetingInfo.platform,
        meeting_info: JSON.stringify(input.meetingInfo),
        callback_url: input.callbackUrl ?? null,
        heartbeat_interval: input.heartbeatInterval,
        automatic_leave: JSON.stringify(input.automaticLeave),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBot(row, null);
  }

  async list(userId: number, query: BotListQuery): Promise<BotList> {
    const base = this.ctx.db
      .selectFrom("bots")
      .where("bots.user_id", "=", userId)
      .$if(query.status !== undefined, (qb) => qb.where("bots.status", "=", query.status as BotStatus));
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .leftJoin("recordings", "recordings.bot_id", "bots.id")
      .selectAll("bots")
      .select(recordingColumns)
      .orderBy("bots.id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      bots: rows.map((row) => toBot(row, row)),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  async get(userId: number, botId: number): Promise<BotDetail> {
    const row = await this.ctx.db
      .selectFrom("bots")
      .leftJoin("recordings", "recordings.bot_id", "bots.id")
      .selectAll("bots")
      .select(recordingColumns)
      .where("bots.id", "=", botId)
      .where("bots.user_id", "=", userId)
      .executeTakeFirst();
    if (!row) throw new BotNotFoundError();
    return {
      ...toBot(row, row),
      deploymentError: parseJson<DeploymentError>(row.deployment_error),
      lastHeartbeat: row.last_heartbeat,
    };
  }

  /** The caller's bot, or 404 exactly as for a bot that does not exist. */
  async requireOwned(userId: number, botId: number): Promise<BotRow> {
    const row = await this.ctx.db
      .selectFrom("bots")
      .selectAll()
      .where("id", "=", botId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!row) throw new BotNotFoundError();
    return row;
  }

  /**
   * READY_TO_DEPLOY → DEPLOYING (with a fresh callback token), then the launcher. A launcher that
   * rejects leaves the bot FATAL with deploymentError LAUNCH_FAILED and answers 503.
   */
  async deploy(userId: number, botId: number): Promise<DeployResult> {
    const bot = await this.requireOwned(userId, botId);
    const token = newCallbackToken();
    const now = toIso(this.ctx.now());
    const moved = await this.ctx.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable("bots")
        .set({ status: "DEPLOYING", callback_token_hash: sha256Hex(token), updated_at: now })
        .where("id", "=", botId)
        .where("status", "=", "READY_TO_DEPLOY")
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await appendLog(trx, botId, "info", "deployment started", now);
      return true;
    });
    if (!moved) throw new ConflictError("Bot has already been deployed");
    try {
      await this.ctx.launcher.launch(BotConfig.parse(this.runnerConfig(bot, token)));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.ctx.log.error({ err, botId }, "bot launch failed");
      await this.failFromServer(botId, "LAUNCH_FAILED", message);
      throw new ServiceUnavailableError(`Bot could not be launched: ${message}`);
    }
    return { message: "Deployment started", botId, status: "DEPLOYING" };
  }

  private runnerConfig(bot: BotRow, token: string): BotConfigInput {
    const baseUrl = this.ctx.publicBaseUrl();
    return {
      botId: bot.id,
      meetingInfo: parseJson<MeetingInfo>(bot.meeting_info),
      botDisplayName: bot.bot_display_name,
      meetingTitle: bot.meeting_title,
      heartbeatInterval: bot.heartbeat_interval,
      automaticLeave: parseJson<BotConfig["automaticLeave"]>(bot.automatic_leave),
      callback: { baseUrl, token },
      upload: { url: `${baseUrl}/v1/bot-callbacks/${bot.id}/recording` },
      workDir: path.join(this.ctx.config.paths.bots, String(bot.id), "work"),
    };
  }

  /**
   * A FATAL the server decides (launch failed, launch or heartbeat timed out), applied like a
   * runner's report: ERROR and FATAL events, deploymentError. False if the bot had already moved
   * on (e.g. its runner reported in the meantime) or is in a status FATAL cannot follow.
   */
  async failFromServer(botId: number, subCode: SubCode, message: string): Promise<boolean> {
    const now = toIso(this.ctx.now());
    const event: CallbackEvent = {
      seq: 0, // server-side transition: not a runner event, never recorded as a receipt
      type: "status",
      eventTime: now,
      data: { status: "FATAL", subCode, message },
    };
    return this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot || !(await applyStatusChange(trx, bot, event.data, now))) return false;
      await appendLog(trx, botId, "error", `${subCode}: ${message}`, now);
      await appendDerivedEvents(trx, bot, event, now, now);
      return true;
    });
  }

  /** Only the real platforms' hosts, plus the operator's allow-list (host or host:port). */
  private checkMeetingHost(info: MeetingInfo): void {
    if (!info.meetingUrl) return;
    const url = new URL(info.meetingUrl);
    const hostname = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
    const allowed = this.ctx.config.allowedMeetingHosts;
    if (isPlatformHost(info.platform, hostname)) return;
    if (allowed.includes(hostname) || allowed.includes(url.host.toLowerCase())) return;
    throw new ValidationError([
      {
        loc: ["body", "meetingInfo", "meetingUrl"],
        msg: `${url.host} is not a ${info.platform} meeting host`,
        type: "value_error",
      },
    ]);
  }
}

function toBot(row: BotRow, recording: RecordingColumns | null): Bot {
  return {
    id: row.id,
    botDisplayName: row.bot_display_name,
    meetingTitle: row.meeting_title,
    status: row.status as BotStatus,
    meetingInfo: parseJson<MeetingInfo>(row.meeting_info),
    createdAt: row.created_at,
    recording: recording ? toRecording(row.id, recording) : null,
  };
}
