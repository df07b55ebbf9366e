import { RUNNING_STATUSES } from "../../core/index.js";
import { toIso } from "../db/database.js";
import { startLiveTranscript } from "../jobs/content-options.js";
import { releaseBotEnded } from "../webhooks/outbox.js";
import { lockBot } from "./bot-state.js";
import { failOverdueCommands } from "./command-rows.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";
import type { RecordingSegmentService } from "./recording-segments.js";
import type { VoiceService } from "./voice.js";

/**
 * Ends bots whose runner went silent, so that nothing stays "running" forever: a bot still
 * DEPLOYING after launchTimeoutMs never started (LAUNCH_TIMEOUT); a bot in the call that has sent
 * nothing for heartbeatTimeoutMultiple × its heartbeatInterval is presumed dead
 * (HEARTBEAT_TIMEOUT). Either way its runner, if any, is told to stop.
 *
 * Silence is counted from the later of the bot's last event and this server's start: a runner
 * that kept a bot going while the control plane was down gets the full grace to resend its spool.
 */
export class BotWatchdog {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private readonly startedAt: number;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly segments: RecordingSegmentService,
    private readonly voice: VoiceService,
  ) {
    this.startedAt = ctx.now().getTime();
  }

  start(): void {
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweep()
        .catch((err: unknown) => this.ctx.log.error({ err }, "watchdog sweep failed"))
        .finally(() => {
          this.sweeping = null;
        });
    }, this.ctx.config.watchdog.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }

  /**
   * One pass over the running bots, over ended ones whose runner's wind-down is over, and over the
   * sounds of ended bots (no runner will play them now).
   */
  async sweep(): Promise<void> {
    await this.releaseHeldEnds();
    // A command its bot never acknowledged fails at its deadline, whoever asks about it.
    await failOverdueCommands(this.ctx.db, toIso(this.ctx.now()));
    await this.voice.sweepEnded();
    const now = this.ctx.now().getTime();
    const { launchTimeoutMs, heartbeatTimeoutMultiple } = this.ctx.config.watchdog;
    const running = await this.ctx.db
      .selectFrom("bots")
      .select(["id", "status", "heartbeat_interval", "last_heartbeat", "updated_at"])
      .where("status", "in", [...RUNNING_STATUSES])
      .execute();
    for (const bot of running) {
      const lastSign = Math.max(this.startedAt, Date.parse(bot.last_heartbeat ?? bot.updated_at));
      const silentMs = now - lastSign;
      if (bot.status === "DEPLOYING") {
        if (silentMs > launchTimeoutMs) {
          await this.fail(bot.id, "LAUNCH_TIMEOUT", `the runner did not report within ${launchTimeoutMs} ms`);
        }
        continue;
      }
      const limit = bot.heartbeat_interval * heartbeatTimeoutMultiple;
      if (silentMs > limit) {
        await this.fail(
          bot.id,
          "HEARTBEAT_TIMEOUT",
          `no heartbeat or event for ${silentMs} ms (limit ${limit} ms)`,
        );
      }
    }
  }

  /**
   * A bot the server ended holds its bot.ended until its runner is done; a runner that never
   * reported again gets it sent once its callback token has expired.
   */
  private async releaseHeldEnds(): Promise<void> {
    const now = toIso(this.ctx.now());
    const due = await this.ctx.db
      .selectFrom("bots")
      .select("id")
      .where("held_bot_ended", "is not", null)
      .where("callback_token_expires_at", "<=", now)
      .execute();
    for (const { id } of due) {
      let jobs = false;
      const queued = await this.ctx.db.transaction().execute(async (trx) => {
        const bot = await lockBot(trx, this.ctx.dialect, id);
        if (!bot) return 0;
        // Its runner will say nothing more: its live transcript is all there is.
        if (bot.live_transcript !== null) jobs = await startLiveTranscript(trx, id, this.ctx.now());
        return releaseBotEnded(trx, bot, now);
      });
      if (queued > 0) this.ctx.outbox.notify();
      if (jobs) this.ctx.jobs.notify();
    }
  }

  private async fail(botId: number, subCode: "LAUNCH_TIMEOUT" | "HEARTBEAT_TIMEOUT", message: string) {
    // A silent runner is presumed lost: what it uploaded during the call becomes its recording.
    const failed =
      subCode === "HEARTBEAT_TIMEOUT"
        ? await this.segments.failLostRunner(botId, subCode, message)
        : await this.bots.failFromServer(botId, subCode, message);
    if (!failed) return;
    this.ctx.log.warn({ botId, subCode }, message);
    await this.ctx.launcher
      .stop(botId)
      .catch((err: unknown) => this.ctx.log.warn({ err, botId }, "stop failed"));
  }
}
