import { type BotStatus, type CallbackEvent, type CommandResult, isTerminal } from "../../core/index.js";
import { hexDigestsEqual, sha256Hex } from "../auth/tokens.js";
import type { Kysely, Transaction } from "kysely";
import { isUniqueViolation, parseJson, toIso } from "../db/database.js";
import { preparedQuery } from "../db/prepared.js";
import type { BotRow, Database } from "../db/schema.js";
import { BotNotFoundError, ConflictError, UnauthorizedError } from "../errors.js";
import type { CallbackResult, DeploymentError } from "../schemas/index.js";
import { enqueueBotEvent, releaseBotEnded } from "../webhooks/outbox.js";
import {
  appendDerivedEvents,
  appendLog,
  appendSpeakerFacts,
  applyStatusChange,
  deploymentErrorOf,
  lockBot,
  type StatusData,
} from "./bot-state.js";
import { expireLoginAccount, releaseLoginAccount } from "./bot-logins.js";
import { expireCallbackToken, windDownEnd } from "./callback-token.js";
import { completeCommand } from "./command-rows.js";
import { appendLiveEvent } from "./live-events.js";
import { startLiveTranscript } from "../jobs/content-options.js";
import type { WakeSignal } from "../wake-signal.js";
import type { ServiceContext } from "./context.js";

// Prepared: every runner report (a heartbeat every few seconds per bot) runs these.
const selectCallbackToken = preparedQuery((db, botId: number) =>
  db.selectFrom("bots").select(["callback_token_hash", "callback_token_expires_at"]).where("id", "=", botId),
);
const selectReceipt = preparedQuery((db, botId: number, seq: number) =>
  db.selectFrom("callback_receipts").select("seq").where("bot_id", "=", botId).where("seq", "=", seq),
);
const insertReceipt = preparedQuery((db, botId: number, seq: number, eventType: string, receivedAt: string) =>
  db
    .insertInto("callback_receipts")
    .values({ bot_id: botId, seq, event_type: eventType, received_at: receivedAt }),
);
const touchHeartbeat = preparedQuery((db, botId: number, now: string) =>
  db.updateTable("bots").set({ last_heartbeat: now, updated_at: now }).where("id", "=", botId),
);

/** Applies what runners report. Each (botId, seq) is applied at most once. */
export class CallbackService {
  constructor(
    private readonly ctx: ServiceContext,
    /** Notified after a transaction that appended aggregated events commits: wakes event streams. */
    private readonly eventsAppended: WakeSignal,
  ) {}

  /**
   * 401 unless `token` is the callback token of an existing bot that has not
   * ended (./callback-token.ts says when a token dies).
   */
  async authenticate(botId: number, token: string | null): Promise<void> {
    const [bot] = await selectCallbackToken(this.ctx.db, botId);
    // A bot that does not exist answers as a wrong token does: the route tells no one which ids exist.
    const hash = bot?.callback_token_hash;
    if (!bot || !token || !hash || !hexDigestsEqual(sha256Hex(token), hash)) {
      throw new UnauthorizedError("Invalid callback token");
    }
    const expiresAt = bot.callback_token_expires_at;
    if (expiresAt !== null && expiresAt <= toIso(this.ctx.now())) {
      throw new UnauthorizedError("Callback token expired: the bot has ended");
    }
  }

  /**
   * In one transaction: dedup by seq, check a status change against core's table, update the bot,
   * append events and logs, queue webhook deliveries (outbox), touch lastHeartbeat. An illegal
   * transition changes nothing but a warning log, is not recorded as applied, and answers 409.
   */
  async apply(botId: number, event: CallbackEvent): Promise<CallbackResult> {
    const queued = { count: 0, events: 0, jobs: false };
    const outcome = await this.applyInTransaction(botId, event, queued).catch(async (err: unknown) => {
      // Only reachable if two copies raced past the lock-free check (never on SQLite).
      if (!isUniqueViolation(err)) throw err;
      const bot = await this.ctx.db
        .selectFrom("bots")
        .select("status")
        .where("id", "=", botId)
        .executeTakeFirst();
      return { applied: false, duplicate: true, status: (bot?.status ?? "FATAL") as BotStatus };
    });
    if (queued.count > 0) this.ctx.outbox.notify(); // committed (or rolled back: a harmless look)
    if (queued.events > 0) this.eventsAppended.notify();
    if (queued.jobs) this.ctx.jobs.notify();
    if ("illegal" in outcome) throw new ConflictError(outcome.illegal);
    return outcome;
  }

  private applyInTransaction(
    botId: number,
    event: CallbackEvent,
    queued: { count: number; events: number; jobs: boolean },
  ): Promise<CallbackResult | { illegal: string }> {
    return this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot) throw new BotNotFoundError();
      const current = bot.status as BotStatus;
      const [seen] = await selectReceipt(trx, botId, event.seq);
      if (seen) return { applied: false, duplicate: true, status: current };

      const now = toIso(this.ctx.now());
      const eventTime = toIso(new Date(event.eventTime));
      let status = current;
      if (event.type === "status") {
        const last = isTerminal(event.data.status);
        // Whether or not the server had ended the bot already, the runner saw the session fail.
        if (event.data.status === "FATAL" && event.data.subCode === "SESSION_EXPIRED")
          queued.count += await expireLoginAccount(trx, bot, eventTime, now);
        if (!(await applyStatusChange(trx, bot, event.data, now))) {
          const illegal = `illegal transition ${current} -> ${event.data.status}`;
          // A bot that has ended (killed, timed out) still hears from its runner as it winds
          // down: expected, so not a warning. Anything else is a runner out of step.
          if (isTerminal(current)) {
            const note = `${event.data.status} reported after the bot ended ${current}; not applied (seq ${event.seq})`;
            await appendLog(trx, botId, "info", note, now);
            await keepLateArtifacts(trx, bot, event.data);
            if (last) queued.count += await this.runnerFinished(trx, bot, event.data.status, now, queued);
          } else {
            await appendLog(trx, botId, "warn", `${illegal} (seq ${event.seq}) ignored`, now);
          }
          return { illegal };
        }
        status = event.data.status;
        if (last) queued.count += await this.runnerFinished(trx, bot, status, now, queued);
      }
      await insertReceipt(trx, botId, event.seq, event.type, now);
      if (event.type === "command.result") {
        await this.commandResult(trx, botId, event.data, now, eventTime);
      }
      if (event.type === "log") await appendLog(trx, botId, event.data.level, event.data.message, eventTime);
      queued.events += await appendDerivedEvents(trx, this.ctx.dialect, bot, event, eventTime, now);
      const live = await appendLiveEvent(trx, botId, event, eventTime, now);
      if (live === "appended") queued.events += 1;
      // A chat message the bot already reported (the page re-rendered it) is sent nowhere again.
      if (live !== "duplicate") queued.count += await enqueueBotEvent(trx, bot, event, eventTime, now);
      await appendSpeakerFacts(trx, botId, event, eventTime);
      await touchHeartbeat(trx, botId, now);
      return { applied: true, status };
    });
  }

  /** Keeps a command's result; one that comes too late is noted in the bot's logs, not refused. */
  private async commandResult(
    trx: Transaction<Database>,
    botId: number,
    outcome: CommandResult,
    now: string,
    reportedAt: string,
  ): Promise<void> {
    const kept = await completeCommand(trx, botId, outcome, now, reportedAt);
    if (kept.taken) {
      this.ctx.log.info(
        { botId, commandId: outcome.commandId, kind: kept.kind, status: outcome.status },
        "command result",
      );
      if (kept.replaced) {
        const note = `result of command ${outcome.commandId} (${outcome.status}) kept over ${kept.replaced}: the runner finished it at ${reportedAt}, in time, and could not report it sooner`;
        await appendLog(trx, botId, "info", note, now);
      }
      return;
    }
    const note = `result of command ${outcome.commandId} (${outcome.status}) not kept: ${kept.why}`;
    await appendLog(trx, botId, "warn", note, now);
  }

  /**
   * The runner's last report (DONE or its own FATAL, applied or not): it uploaded what it had
   * (and wrote its login's session back) before sending it, so its token dies now and its login
   * account is free again; a DONE whose recording is not stored yet keeps it
   * until the upload (or the wind-down) ends. A bot the server ended gets its held bot.ended now,
   * after the recording.ready of that upload. Returns the deliveries queued.
   */
  private async runnerFinished(
    trx: Transaction<Database>,
    bot: BotRow,
    reported: BotStatus,
    now: string,
    queued: { jobs: boolean },
  ): Promise<number> {
    // Everything the runner heard is in: its live transcript becomes the bot's transcript.
    if (bot.live_transcript !== null && (await startLiveTranscript(trx, bot.id, this.ctx.now()))) {
      queued.jobs = true;
    }
    const endsDone = bot.status === "DONE" || (reported === "DONE" && !isTerminal(bot.status as BotStatus));
    const recording = endsDone
      ? await trx.selectFrom("recordings").select("bot_id").where("bot_id", "=", bot.id).executeTakeFirst()
      : undefined;
    const at = endsDone && !recording ? windDownEnd(now) : now;
    await expireCallbackToken(trx, bot.id, at);
    await releaseLoginAccount(trx, bot.id);
    return releaseBotEnded(trx, bot, now);
  }
}

/**
 * A runner failing on its own after the server already ended its bot (a kill before the call)
 * still saved what it saw: its screenshot, page and trace join the server's deploymentError, so
 * the owner finds them there as after any failure.
 */
async function keepLateArtifacts(trx: Kysely<Database>, bot: BotRow, data: StatusData): Promise<void> {
  if (bot.status !== "FATAL" || data.status !== "FATAL" || !data.artifacts?.length) return;
  const current = parseJson<DeploymentError>(bot.deployment_error);
  if (!current || current.artifacts?.length) return;
  const { artifacts } = deploymentErrorOf(data, bot.id);
  if (!artifacts) return;
  await trx
    .updateTable("bots")
    .set({ deployment_error: JSON.stringify({ ...current, artifacts }) })
    .where("id", "=", bot.id)
    .execute();
}
