import path from "node:path";
import type { Kysely } from "kysely";
import {
  type AutomaticLeave,
  BotConfig,
  type BotConfigInput,
  type Platform,
  type RunnerLogin,
  type BotStatus,
  type CallbackEvent,
  type ChatOptions,
  type OutputImage,
  type OutputOptions,
  chatLengthProblem,
  type LiveTranscriptOptions,
  isPlatformHost,
  type MeetingInfo,
  RUNNING_STATUSES,
  type SubCode,
} from "../../core/index.js";
import { TeamsBotTokenError, type TeamsBotTokens } from "../auth/teams-bot-token.js";
import { newCallbackToken, sha256Hex } from "../auth/tokens.js";
import { parseJson, toIso } from "../db/database.js";
import { preparedQuery } from "../db/prepared.js";
import type { BotAccountRow, BotRow, Database } from "../db/schema.js";
import { BotNotFoundError, ConflictError, ServiceUnavailableError, ValidationError } from "../errors.js";
import type {
  Bot,
  BotDetail,
  BotList,
  BotListQuery,
  CreateBotBody,
  DeploymentError,
  DeployResult,
  KillResult,
  OutputOptionsBody,
  StoredLogin,
  UpdateBotBody,
} from "../schemas/index.js";
import { storedLogin } from "../schemas/index.js";
import { recordingUploadPath } from "../http/urls.js";
import { checkEngines, type ContentOptions } from "../jobs/content-options.js";
import type { Engines } from "../jobs/engines.js";
import { removeBotFiles } from "../storage/bot-files.js";
import { newClipId, OutputClipStore } from "../storage/output-clips.js";
import { enqueueBotEvent } from "../webhooks/outbox.js";
import { checkTargetUrl } from "../webhooks/outbound.js";
import type { SecretBox } from "../auth/secret-box.js";
import { audioStreamColumns, checkAudioStream, runnerAudioStream } from "./audio-stream.js";
import { appendDerivedEvents, appendLog, applyStatusChange, lockBot } from "./bot-state.js";
import type { BotAccountService } from "./bot-accounts.js";
import { holdLoginAccount, releaseLoginAccount } from "./bot-logins.js";
import { expireCallbackToken, windDownEnd } from "./callback-token.js";
import type { WakeSignal } from "../wake-signal.js";
import type { ServiceContext } from "./context.js";
import { OutputImages } from "./output-images.js";
import { recordingColumns, recordingOptionColumn, recordingOptionOf, toBot } from "./mappers.js";
import { checkJoinAt } from "./join-at.js";

/** Spec §3: the only statuses in which a bot may be deleted. */
export const DELETABLE_STATUSES: readonly BotStatus[] = ["READY_TO_DEPLOY", "DONE", "FATAL"];

// Prepared: every bot route reads its bot through one of these.
const selectOwnedBot = preparedQuery((db, botId: number, userId: number) =>
  db.selectFrom("bots").selectAll().where("id", "=", botId).where("user_id", "=", userId),
);
// Two primary-key lookups rather than one join: better-sqlite3 13 re-prepares this join on every
// call (~35 µs, measured; its statement's parameters are marked plan-sensitive), the two lookups
// cost ~3 µs each.
const selectRecordingOf = preparedQuery((db, botId: number) =>
  db.selectFrom("recordings").select(recordingColumns).where("recordings.bot_id", "=", botId),
);

/**
 * Failures after which no runner can still report (it never started): their bot.ended goes out at
 * once. After any other failure the server decides, a runner may still be leaving and uploading,
 * so bot.ended waits for it (outbox.ts, holdEnded).
 */
const RUNNER_NEVER_RAN: ReadonlySet<SubCode> = new Set([
  "LOGIN_UNAVAILABLE",
  "LAUNCH_FAILED",
  "IMAGE_PULL_FAILED",
  "UNSCHEDULABLE",
  "SCHEDULE_MISSED",
]);

export class BotService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly engines: Engines,
    /** Notified after a transaction that appended aggregated events commits: wakes event streams. */
    private readonly eventsAppended: WakeSignal,
    private readonly accounts: BotAccountService,
    /** Seals and opens the audio streams' tokens (MEETBOT_SECRET_KEY). */
    private readonly secrets: SecretBox,
    /** Teams bot identification, when the operator configured it (MEETBOT_TEAMS_BOT_*). */
    private readonly teamsTokens?: TeamsBotTokens,
  ) {}

  async create(userId: number, input: CreateBotBody): Promise<Bot> {
    this.checkMeetingHost(input.meetingInfo);
    this.checkCallbackTarget(input.callbackUrl);
    const login = input.login ? storedLogin(input.login) : null;
    checkOnJoinMessage(input.meetingInfo.platform, input.chat);
    checkOneTranscript(input.liveTranscript, input.transcription);
    checkAudioStream(input.audioStream, this.ctx.config.outbound, this.secrets);
    const joinAt = input.joinAt === undefined ? null : checkJoinAt(input.joinAt, this.ctx.now());
    await checkLoginAccount(this.ctx.db, userId, input.meetingInfo.platform, login);
    checkEngines(
      this.engines,
      { transcription: input.transcription?.engine, summary: input.summary?.engine },
      { transcription: ["body", "transcription", "engine"], summary: ["body", "summary", "engine"] },
    );
    const picture = input.output.image;
    if (!picture) return this.insert(userId, input, login, outputOf(input.output), joinAt);
    // The picture is made before the bot exists (a bad one is a 422 and no bot), kept once it does.
    const images = this.outputImages();
    return images.inTemporaryDir(async (dir) => {
      const made = await this.pictureFrom(picture, dir, ["body", "output", "image"]);
      const image = { imageId: newClipId(), width: made.width, height: made.height };
      const bot = await this.insert(userId, input, login, outputOf(input.output, image), joinAt);
      try {
        await images.keep(bot.id, made, image.imageId);
      } catch (err) {
        await this.ctx.db.deleteFrom("bots").where("id", "=", bot.id).execute();
        throw err;
      }
      return bot;
    });
  }

  private async insert(
    userId: number,
    input: CreateBotBody,
    login: StoredLogin | null,
    output: OutputOptions,
    joinAt: string | null,
  ): Promise<Bot> {
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
        content_options:
          input.transcription || input.summary
            ? JSON.stringify({
                transcription: input.transcription,
                summary: input.summary,
              } satisfies ContentOptions)
            : null,
        login: login ? JSON.stringify(login) : null,
        live_transcript: input.liveTranscript ? JSON.stringify(input.liveTranscript) : null,
        chat_options: input.chat.onJoin === undefined ? null : JSON.stringify(input.chat),
        output_options: outputColumn(output),
        recording_options: recordingOptionColumn(input.recording),
        join_at: joinAt,
        retention_hours: input.retention?.hours ?? null,
        ...audioStreamColumns(input.audioStream ?? null, userId, this.secrets),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBot(row, null);
  }

  /** The caller's bots, newest first; `scheduled=true`: those waiting for their joinAt, soonest first. */
  async list(userId: number, query: BotListQuery): Promise<BotList> {
    const scheduled = query.scheduled === "true";
    const base = this.ctx.db
      .selectFrom("bots")
      .where("bots.user_id", "=", userId)
      .$if(query.status !== undefined, (qb) => qb.where("bots.status", "=", query.status as BotStatus))
      .$if(scheduled, (qb) =>
        qb.where("bots.status", "=", "READY_TO_DEPLOY").where("bots.join_at", "is not", null),
      );
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .leftJoin("recordings", "recordings.bot_id", "bots.id")
      .selectAll("bots")
      .select(recordingColumns)
      .$if(scheduled, (qb) => qb.orderBy("bots.join_at", "asc").orderBy("bots.id", "asc"))
      .$if(!scheduled, (qb) => qb.orderBy("bots.id", "desc"))
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
    const [row] = await selectOwnedBot(this.ctx.db, botId, userId);
    if (!row) throw new BotNotFoundError();
    const [recording] = await selectRecordingOf(this.ctx.db, botId);
    return {
      ...toBot(row, recording ?? null),
      deploymentError: parseJson<DeploymentError>(row.deployment_error),
      lastHeartbeat: row.last_heartbeat,
    };
  }

  /** The caller's bot, or 404 exactly as for a bot that does not exist. */
  async requireOwned(userId: number, botId: number): Promise<BotRow> {
    const [row] = await selectOwnedBot(this.ctx.db, botId, userId);
    if (!row) throw new BotNotFoundError();
    return row;
  }

  /**
   * READY_TO_DEPLOY → DEPLOYING (with a fresh callback token, and the bot's login account held
   * for it: ./bot-logins.ts), then the launcher. A login with no free account leaves the bot FATAL
   * LOGIN_UNAVAILABLE, a launcher that rejects FATAL LAUNCH_FAILED; both answer 503. A Teams bot
   * gets the bot-identification token (teamsBotToken) when the operator configured one; a token
   * that cannot be minted leaves the bot to join unidentified, with a warning in its log.
   */
  async deploy(userId: number, botId: number): Promise<DeployResult> {
    await this.requireOwned(userId, botId);
    const started = await this.launchBot(botId);
    if (!started) throw new ConflictError("Bot has already been deployed");
    return started;
  }

  /**
   * The server deploys a scheduled bot (services/schedules.ts) exactly as POST /deploy does, if the
   * schedule's claim is still `claimToken` (not moved, cancelled or deployed by hand meanwhile);
   * null when it is not. Throws as deploy does when the launch fails (the bot is FATAL then).
   */
  deployScheduled(botId: number, claimToken: string): Promise<DeployResult | null> {
    return this.launchBot(botId, claimToken);
  }

  /** READY_TO_DEPLOY → DEPLOYING, then the launcher (see deploy); null when the bot was not ready. */
  private async launchBot(botId: number, claimToken?: string): Promise<DeployResult | null> {
    const token = newCallbackToken();
    const now = toIso(this.ctx.now());
    const deployed = await this.ctx.db.transaction().execute(async (trx) => {
      const bot = await trx
        .updateTable("bots")
        .set({
          status: "DEPLOYING",
          callback_token_hash: sha256Hex(token),
          schedule_claim_token: null,
          schedule_lease_until: null,
          updated_at: now,
        })
        .where("id", "=", botId)
        .where("status", "=", "READY_TO_DEPLOY")
        .$if(claimToken !== undefined, (qb) => qb.where("schedule_claim_token", "=", claimToken as string))
        .returningAll()
        .executeTakeFirst();
      if (!bot) return null;
      const how = claimToken === undefined ? "" : ` by its schedule (to join at ${bot.join_at})`;
      await appendLog(trx, botId, "info", `deployment started${how}`, now);
      const deploying: CallbackEvent = {
        seq: 0,
        type: "status",
        eventTime: now,
        data: { status: "DEPLOYING" },
      };
      await enqueueBotEvent(trx, bot, deploying, now, now);
      const login = parseJson<StoredLogin>(bot.login);
      const held = login ? await holdLoginAccount(trx, bot, login, now) : null;
      return { bot, login, held };
    });
    if (!deployed) return null;
    this.ctx.outbox.notify();
    const { bot, login, held } = deployed;
    let runnerLogin: RunnerLogin | undefined;
    if (login && held) {
      if ("account" in held) runnerLogin = this.runnerLogin(botId, login, held.account);
      if (!runnerLogin) {
        const message =
          "unavailable" in held
            ? held.unavailable
            : `the session of bot account ${held.account.id} could not be decrypted (the server log says why)`;
        await this.failFromServer(botId, "LOGIN_UNAVAILABLE", message);
        throw new ServiceUnavailableError(`Bot could not be deployed: ${message}`);
      }
    }
    const teamsBotToken = bot.platform === "teams" ? await this.teamsBotToken(botId) : undefined;
    try {
      await this.ctx.launcher.launch(
        BotConfig.parse(this.runnerConfig(bot, token, runnerLogin, teamsBotToken)),
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.ctx.log.error({ err, botId }, "bot launch failed");
      await this.failFromServer(botId, "LAUNCH_FAILED", message);
      throw new ServiceUnavailableError(`Bot could not be launched: ${message}`);
    }
    // A kill that landed while the launcher was still starting the runner found nothing to stop.
    if ((await this.statusOf(botId)) === "FATAL") await this.stopRunner(botId);
    return { message: "Deployment started", botId, status: "DEPLOYING" };
  }

  /**
   * Changes the create fields of a bot that has not been deployed (spec §3: "update allowed only
   * before deployment"); any other status is a 409. Answers the bot as GET /v1/bots/{id} does.
   */
  async update(userId: number, botId: number, input: UpdateBotBody): Promise<BotDetail> {
    if (input.meetingInfo) this.checkMeetingHost(input.meetingInfo);
    this.checkCallbackTarget(input.callbackUrl);
    checkAudioStream(input.audioStream, this.ctx.config.outbound, this.secrets);
    // A picture the new output option replaces goes once the bot no longer names it.
    const replaced =
      input.output === undefined
        ? undefined
        : parseJson<OutputOptions>((await this.requireOwned(userId, botId)).output_options)?.image;
    const updated = await this.changeOutput(userId, botId, input);
    if (replaced && updated.output.image?.imageId !== replaced.imageId) {
      await this.outputImages()
        .remove(botId, replaced.imageId)
        .catch((err: unknown) => this.ctx.log.warn({ err, botId }, "could not remove a replaced picture"));
    }
    return updated;
  }

  /** `change` with the output option's picture (a data URL) made and kept first; dropped if the change fails. */
  private async changeOutput(userId: number, botId: number, input: UpdateBotBody): Promise<BotDetail> {
    const picture = input.output?.image;
    if (!picture) return this.change(userId, botId, input, input.output && outputOf(input.output));
    const images = this.outputImages();
    const image = await images.inTemporaryDir(async (dir) =>
      images.keep(botId, await this.pictureFrom(picture, dir, ["body", "output", "image"])),
    );
    try {
      return await this.change(userId, botId, input, outputOf(input.output ?? {}, image));
    } catch (err) {
      await images.remove(botId, image.imageId);
      throw err;
    }
  }

  /** The bot's outputs: the pictures its camera shows among them. */
  private outputImages(): OutputImages {
    return new OutputImages(new OutputClipStore(this.ctx.config.paths.outputs));
  }

  /** The camera's PNG made from the bot option's data URL, in `dir`; a 422 at `loc` when it is none. */
  private async pictureFrom(dataUrl: string, dir: string, loc: string[]) {
    const images = this.outputImages();
    const { file, format } = await images.fromDataUrl(dataUrl, dir, loc);
    return images.normalize(file, format, dir, loc);
  }

  private async change(
    userId: number,
    botId: number,
    input: UpdateBotBody,
    output: OutputOptions | undefined,
  ): Promise<BotDetail> {
    await this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot || bot.user_id !== userId) throw new BotNotFoundError();
      if (bot.status !== "READY_TO_DEPLOY") {
        throw new ConflictError(`Bot can only be updated before deployment (status is ${bot.status})`);
      }
      // The login as it will be (a new one, none, or the one kept), on the platform as it will be.
      const login =
        input.login === undefined
          ? parseJson<StoredLogin>(bot.login)
          : input.login === null
            ? null
            : storedLogin(input.login);
      const platform = input.meetingInfo?.platform ?? (bot.platform as Platform);
      await checkLoginAccount(trx, userId, platform, login);
      checkOnJoinMessage(platform, input.chat ?? parseJson<ChatOptions>(bot.chat_options) ?? {});
      if (input.liveTranscript)
        checkOneTranscript(
          input.liveTranscript,
          parseJson<ContentOptions>(bot.content_options)?.transcription,
        );
      const joinAt = input.joinAt ? checkJoinAt(input.joinAt, this.ctx.now()) : input.joinAt;
      const automaticLeave = input.automaticLeave
        ? { ...parseJson<AutomaticLeave>(bot.automatic_leave), ...input.automaticLeave }
        : undefined;
      await trx
        .updateTable("bots")
        .set({
          ...(input.botDisplayName !== undefined ? { bot_display_name: input.botDisplayName } : {}),
          ...(input.meetingTitle !== undefined ? { meeting_title: input.meetingTitle } : {}),
          ...(input.meetingInfo
            ? { platform: input.meetingInfo.platform, meeting_info: JSON.stringify(input.meetingInfo) }
            : {}),
          ...(input.callbackUrl !== undefined ? { callback_url: input.callbackUrl } : {}),
          ...(input.heartbeatInterval !== undefined ? { heartbeat_interval: input.heartbeatInterval } : {}),
          ...(automaticLeave ? { automatic_leave: JSON.stringify(automaticLeave) } : {}),
          ...(input.login !== undefined ? { login: login ? JSON.stringify(login) : null } : {}),
          ...(input.liveTranscript !== undefined
            ? { live_transcript: input.liveTranscript ? JSON.stringify(input.liveTranscript) : null }
            : {}),
          ...(input.chat !== undefined
            ? { chat_options: input.chat.onJoin === undefined ? null : JSON.stringify(input.chat) }
            : {}),
          ...(output !== undefined ? { output_options: outputColumn(output) } : {}),
          ...(input.recording !== undefined
            ? { recording_options: recordingOptionColumn(input.recording) }
            : {}),
          ...(input.audioStream !== undefined
            ? audioStreamColumns(input.audioStream, userId, this.secrets)
            : {}),
          ...(input.retention !== undefined ? { retention_hours: input.retention?.hours ?? null } : {}),
          // A schedule moved or removed: a claim on the old time no longer deploys the bot.
          ...(joinAt !== undefined
            ? { join_at: joinAt, schedule_claim_token: null, schedule_lease_until: null }
            : {}),
          updated_at: toIso(this.ctx.now()),
        })
        .where("id", "=", botId)
        .execute();
    });
    return this.get(userId, botId);
  }

  /**
   * Deletes a bot in READY_TO_DEPLOY, DONE or FATAL (else 409) with everything kept for it: its
   * rows (events, logs, receipts, recording, speaker changes go with it by ON DELETE CASCADE),
   * then its recording, its artifacts, the sounds it was given to play and its folder (runner log,
   * work dir).
   */
  async remove(userId: number, botId: number): Promise<void> {
    const refused = await this.removeIn(userId, botId, DELETABLE_STATUSES, { byOwner: true });
    if (refused !== null) {
      throw new ConflictError(
        `Bot can only be deleted in status ${DELETABLE_STATUSES.join(", ")} (status is ${refused})`,
      );
    }
    await this.removeFiles(botId);
  }

  /**
   * Deletes a bot that is still waiting to be deployed (a calendar event's bot that is no longer
   * wanted); false, and nothing deleted, when it has been deployed meanwhile or is gone.
   */
  async removeUndeployed(userId: number, botId: number): Promise<boolean> {
    try {
      if ((await this.removeIn(userId, botId, ["READY_TO_DEPLOY"])) !== null) return false;
    } catch (err) {
      if (err instanceof BotNotFoundError) return false;
      throw err;
    }
    await this.removeFiles(botId);
    return true;
  }

  /**
   * Deletes the bot's rows if its status is one of `statuses`; else its status. Its owner deleting
   * a calendar event's scheduled bot takes the event's bot away (as `DELETE …/events/{uid}/bot`
   * does): the next sync would otherwise make the bot they deleted again.
   */
  private removeIn(
    userId: number,
    botId: number,
    statuses: readonly BotStatus[],
    { byOwner = false } = {},
  ): Promise<string | null> {
    return this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot || bot.user_id !== userId) throw new BotNotFoundError();
      if (!statuses.includes(bot.status as BotStatus)) return bot.status;
      if (byOwner && bot.status === "READY_TO_DEPLOY") {
        await trx
          .updateTable("calendar_events")
          .set({ bot_mode: "off", updated_at: toIso(this.ctx.now()) })
          .where("bot_id", "=", botId)
          .where("user_id", "=", userId)
          .execute();
      }
      await trx.deleteFrom("bots").where("id", "=", botId).execute();
      return null;
    });
  }

  /** A deleted bot's files (its rows are gone already). */
  private async removeFiles(botId: number): Promise<void> {
    // The rows are gone, so the API no longer knows the bot; files that resist are only logged.
    const files = await Promise.allSettled([
      this.ctx.store.remove(botId),
      this.ctx.artifactStore.removeAll(botId),
      new OutputClipStore(this.ctx.config.paths.outputs).removeAll(botId),
    ]);
    // After the artifacts: stored locally they are in this folder, and two removals of one tree race.
    files.push(...(await Promise.allSettled([removeBotFiles(this.ctx.config.paths.bots, botId)])));
    for (const result of files) {
      if (result.status === "rejected") {
        this.ctx.log.warn({ err: result.reason, botId }, "could not remove a deleted bot's files");
      }
    }
  }

  /**
   * Spec §3: a running bot → FATAL (deploymentError KILLED), then its runner gets SIGTERM through
   * the launcher. The runner still leaves, finalizes and uploads its recording; its later status
   * reports are refused (FATAL is terminal), its recording and recording events are kept.
   * A bot that is not running is a 409.
   */
  async kill(userId: number, botId: number): Promise<KillResult> {
    await this.requireOwned(userId, botId);
    if (!(await this.failFromServer(botId, "KILLED", "killed on request"))) {
      const status = await this.statusOf(botId);
      if (!status) throw new BotNotFoundError(); // deleted in the meantime
      throw new ConflictError(`Bot is not running (status is ${status})`);
    }
    await this.stopRunner(botId);
    return { message: "Bot terminated", botId, status: "FATAL" };
  }

  /** SIGTERM through the launcher; a launcher error is logged (server and bot log), not thrown. */
  private async stopRunner(botId: number): Promise<void> {
    try {
      await this.ctx.launcher.stop(botId);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.ctx.log.error({ err, botId }, "could not stop the runner");
      await appendLog(
        this.ctx.db,
        botId,
        "error",
        `could not stop the runner: ${message}`,
        toIso(this.ctx.now()),
      ).catch(() => {}); // the bot may be gone already; the server log has it
    }
  }

  private async statusOf(botId: number): Promise<BotStatus | undefined> {
    const row = await this.ctx.db
      .selectFrom("bots")
      .select("status")
      .where("id", "=", botId)
      .executeTakeFirst();
    return row?.status as BotStatus | undefined;
  }

  /** What the runner gets of the held account: the session, decrypted; undefined if it does not open. */
  private runnerLogin(botId: number, login: StoredLogin, account: BotAccountRow): RunnerLogin | undefined {
    try {
      return {
        mode: login.mode,
        accountId: account.id,
        accountName: account.account_name,
        session: this.accounts.openSession(account),
      };
    } catch (err) {
      // The message names the key id, never the session or the key.
      this.ctx.log.error(
        { botId, accountId: account.id, reason: (err as Error).message },
        "a bot account's session could not be decrypted",
      );
      return undefined;
    }
  }

  /**
   * The shared bot-identification token (cached until 5 minutes before it expires), or undefined:
   * not configured, or the mint failed. A failed mint does not stop the deploy (Teams still lets an
   * unidentified bot ask to join; it may keep it in the lobby as a suspected bot): the bot's log
   * and the server's say why, with no secret, and the next deploy mints again.
   */
  private async teamsBotToken(botId: number): Promise<string | undefined> {
    if (!this.teamsTokens) return undefined;
    try {
      return await this.teamsTokens.token();
    } catch (err) {
      const reason =
        err instanceof TeamsBotTokenError ? err.message : "an unexpected error (the server log says more)";
      this.ctx.log.warn(
        { botId, reason, ...(err instanceof TeamsBotTokenError ? {} : { errorName: (err as Error)?.name }) },
        "no Teams bot-identification token: the bot joins unidentified",
      );
      await appendLog(
        this.ctx.db,
        botId,
        "warn",
        `Teams bot identification unavailable: ${reason}. The bot joins without it, so Teams may hold it in the lobby as a suspected bot; the next deploy tries again.`,
        toIso(this.ctx.now()),
      ).catch(() => {}); // the bot may be gone already; the server log has it
      return undefined;
    }
  }

  private runnerConfig(
    bot: BotRow,
    token: string,
    login: RunnerLogin | undefined,
    teamsBotToken: string | undefined,
  ): BotConfigInput {
    const baseUrl = this.ctx.config.runner.callbackBaseUrl ?? this.ctx.publicBaseUrl();
    return {
      botId: bot.id,
      meetingInfo: parseJson<MeetingInfo>(bot.meeting_info),
      botDisplayName: bot.bot_display_name,
      meetingTitle: bot.meeting_title,
      heartbeatInterval: bot.heartbeat_interval,
      automaticLeave: parseJson<BotConfig["automaticLeave"]>(bot.automatic_leave),
      ...(bot.live_transcript
        ? { liveTranscript: parseJson<LiveTranscriptOptions>(bot.live_transcript) }
        : {}),
      ...(bot.chat_options ? { chat: parseJson<ChatOptions>(bot.chat_options) } : {}),
      ...(bot.output_options ? { output: parseJson<OutputOptions>(bot.output_options) } : {}),
      recording: recordingOptionOf(bot),
      ...runnerAudioStream(bot, this.ctx.config.outbound, this.secrets),
      callback: { baseUrl, token, ...(this.ctx.config.tls ? { ca: this.ctx.config.tls.certificates } : {}) },
      upload: { url: `${baseUrl}${recordingUploadPath(bot.id)}` },
      workDir: path.join(this.ctx.config.paths.bots, String(bot.id), "work"),
      // The only way a session leaves the server (src/core/login.ts).
      ...(login ? { login } : {}),
      // The one way the bot-identification token leaves the server.
      ...(teamsBotToken ? { teamsBotToken } : {}),
      // The operator's runner settings travel in the config: runners inherit no server environment.
      ...this.ctx.config.runner.settings,
    };
  }

  /**
   * A FATAL the server decides (launch failed, launch or heartbeat timed out, kill), applied like
   * a runner's report: ERROR and FATAL events, deploymentError, bot.error and bot.ended webhooks.
   * False if the bot had already moved on (e.g. its runner reported in the meantime) or is in a
   * status FATAL cannot follow.
   */
  /** Ids of the bots whose runner should be running: launched and not ended. */
  async runningIds(): Promise<number[]> {
    const rows = await this.ctx.db
      .selectFrom("bots")
      .select("id")
      .where("status", "in", [...RUNNING_STATUSES])
      .orderBy("id")
      .execute();
    return rows.map((row) => row.id);
  }

  async failFromServer(
    botId: number,
    subCode: SubCode,
    message: string,
    /** A scheduled bot that missed its time: fails from READY_TO_DEPLOY, while this claim is current. */
    opts: { scheduleClaim?: string } = {},
  ): Promise<boolean> {
    const now = toIso(this.ctx.now());
    const event: CallbackEvent = {
      seq: 0, // server-side transition: not a runner event, never recorded as a receipt
      type: "status",
      eventTime: now,
      data: { status: "FATAL", subCode, message },
    };
    const failed = await this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      const missedSchedule = opts.scheduleClaim !== undefined;
      if (!bot || (missedSchedule && bot.schedule_claim_token !== opts.scheduleClaim)) return false;
      if (!(await applyStatusChange(trx, bot, event.data, now, { missedSchedule }))) return false;
      await appendLog(trx, botId, "error", `${subCode}: ${message}`, now);
      // Its runner may still be winding down, but the account is free for other bots now.
      await releaseLoginAccount(trx, botId);
      // Its runner, if any, may still be leaving and uploading: its token lives on for a while.
      await expireCallbackToken(trx, botId, windDownEnd(now));
      await appendDerivedEvents(trx, this.ctx.dialect, bot, event, now, now);
      // bot.ended waits for a runner that may still be delivering its recording (outbox.ts).
      await enqueueBotEvent(trx, bot, event, now, now, { holdEnded: !RUNNER_NEVER_RAN.has(subCode) });
      return true;
    });
    if (failed) {
      this.ctx.outbox.notify();
      this.eventsAppended.notify();
    }
    return failed;
  }

  /**
   * A callbackUrl that can never be delivered to (a private address while they are refused) is
   * refused when saved, so that the user learns of it now; deliveries check every address again.
   */
  private checkCallbackTarget(callbackUrl: string | null | undefined): void {
    if (!callbackUrl) return;
    const problem = checkTargetUrl(callbackUrl, this.ctx.config.outbound);
    if (problem)
      throw new ValidationError([{ loc: ["body", "callbackUrl"], msg: problem, type: "value_error" }]);
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

/**
 * A login naming an account must name one of the user's own accounts of the bot's platform
 * (422 otherwise, as one that does not exist). A group needs no account yet: it is read at deploy.
 */
async function checkLoginAccount(
  db: Kysely<Database>,
  userId: number,
  platform: Platform,
  login: StoredLogin | null,
): Promise<void> {
  if (!login || !("accountId" in login)) return;
  const account = await db
    .selectFrom("bot_accounts")
    .select("platform")
    .where("id", "=", login.accountId)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  const problem = !account
    ? `no bot account ${login.accountId} of yours`
    : account.platform !== platform
      ? `bot account ${login.accountId} is for ${account.platform}, not ${platform}`
      : undefined;
  if (problem)
    throw new ValidationError([{ loc: ["body", "login", "accountId"], msg: problem, type: "value_error" }]);
}

/** 422 when the chat.onJoin message is longer than the meeting's platform takes. */
function checkOnJoinMessage(platform: Platform, chat: ChatOptions): void {
  const problem = chat.onJoin === undefined ? null : chatLengthProblem(platform, chat.onJoin);
  if (problem)
    throw new ValidationError([{ loc: ["body", "chat", "onJoin"], msg: problem, type: "value_error" }]);
}

/**
 * 422 for a bot asked for both: the live transcript is the bot's transcript (stored when its
 * runner is done); the recording can still be transcribed with another engine afterwards.
 */
function checkOneTranscript(live: unknown, transcription: { engine?: string | undefined } | undefined): void {
  if (!live && transcription?.engine === "live") {
    throw new ValidationError([
      {
        loc: ["body", "transcription", "engine"],
        msg: 'engine "live" is the bot\'s live transcript: set liveTranscript instead',
        type: "value_error",
      },
    ]);
  }
  if (!live || !transcription) return;
  throw new ValidationError([
    {
      loc: ["body", "transcription"],
      msg: "a bot with liveTranscript has the live transcript as its transcript: leave transcription out (POST /v1/transcripts/{bot_id}/transcribe re-transcribes the recording later)",
      type: "value_error",
    },
  ]);
}

/** The output option as stored (its picture as the stored PNG's id and size), from the request's. */
function outputOf(body: OutputOptionsBody, image?: OutputImage): OutputOptions {
  return {
    ...(body.keepMicOn !== undefined ? { keepMicOn: body.keepMicOn } : {}),
    ...(image ? { image } : {}),
  };
}

/** The output option as stored: null when it asks for nothing. */
function outputColumn(output: OutputOptions): string | null {
  return output.keepMicOn === undefined && !output.image ? null : JSON.stringify(output);
}
