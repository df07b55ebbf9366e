import { Deliverer } from "../webhooks/deliver.js";
import { OutboundClient } from "../webhooks/outbound.js";
import { attemptLeaseMs, MAX_LOGGED_BODY_CHARS } from "../webhooks/queue.js";
import { WebhookWorker } from "../webhooks/worker.js";
import { NotesEvents } from "../../notes/webhooks.js";
import { AssemblyAiWebhooks } from "../jobs/assemblyai-webhooks.js";
import { Engines } from "../jobs/engines.js";
import { summaryJobHandler } from "../jobs/summary-job.js";
import { transcriptJobHandler } from "../jobs/transcript-job.js";
import { JOB_LEASE_MS, JobWorker } from "../jobs/worker.js";
import { ApiKeyService } from "./api-keys.js";
import { ApiLogService } from "./api-logs.js";
import { ArtifactService } from "./artifacts.js";
import { AccountCheckService } from "./account-checks.js";
import { BotAccountService } from "./bot-accounts.js";
import { BotDataService } from "./bot-data.js";
import { BotService } from "./bots.js";
import { CallbackService } from "./callbacks.js";
import { ChatService } from "./chat.js";
import { CommandService } from "./commands.js";
import type { ServiceContext } from "./context.js";
import { EventStreams } from "./event-stream.js";
import { EventService } from "./events.js";
import { OAuthService } from "./oauth.js";
import { ProfileService } from "./profile.js";
import { RecordingSegmentService } from "./recording-segments.js";
import { RecordingService } from "./recordings.js";
import { ScreenshotService } from "./screenshots.js";
import { type ClaimedSchedule, scheduleWorker } from "./schedules.js";
import { type ClaimedDeletion, retentionWorker } from "./retention.js";
import { CalendarBots } from "./calendar-bots.js";
import { CalendarSync } from "./calendar-sync.js";
import { CalendarService } from "./calendars.js";
import type { PollingWorker } from "../durable/polling-worker.js";
import { ShareService } from "./shares.js";
import { SummaryService } from "./summaries.js";
import { TranscriptService } from "./transcripts.js";
import { UserService } from "./users.js";
import { VoiceService } from "./voice.js";
import { PictureService } from "./picture.js";
import { OutputImages } from "./output-images.js";
import { BotWatchdog } from "./watchdog.js";
import { WebhookService } from "./webhooks.js";

import { SecretBox } from "../auth/secret-box.js";
import { TeamsBotTokens } from "../auth/teams-bot-token.js";
import { WakeSignal } from "../wake-signal.js";
import { OutputClipStore } from "../storage/output-clips.js";
import { createSpeechEngine } from "../../voice/index.js";

export type { ServiceContext } from "./context.js";

export interface Services {
  users: UserService;
  apiKeys: ApiKeyService;
  oauth: OAuthService;
  bots: BotService;
  /** The user's signed-in platform accounts, and the runners' session write-backs. */
  botAccounts: BotAccountService;
  /** Bot account checks: their queue, schedule and results; the app starts its worker. */
  accountChecks: AccountCheckService;
  /** Deploys scheduled bots (joinAt) by itself; the app starts it unless config.schedule.worker is off. */
  schedules: PollingWorker<ClaimedSchedule>;
  /** Deleting a bot's meeting data: on request, and by the retention sweep. */
  botData: BotDataService;
  /** Deletes meeting data whose retention ran out; the app starts it unless config.retention.worker is off. */
  retention: PollingWorker<ClaimedDeletion>;
  /** A user's calendar feeds, their events and those events' bots. */
  calendars: CalendarService;
  /** Syncs the feeds; the app starts its worker unless config.calendars.worker is off. */
  calendarSync: CalendarSync;
  events: EventService;
  /** Live event streams (GET /v1/events/stream); the app ends them all before it closes. */
  eventStreams: EventStreams;
  callbacks: CallbackService;
  /** Commands to running bots (leave, ...) and the runners' long polls for them. */
  commands: CommandService;
  /** The meeting's chat: what bots read, and messages they send (a command). */
  chat: ChatService;
  /** A bot that speaks: speech and files rendered into clips, queued as play_audio commands. */
  voice: VoiceService;
  picture: PictureService;
  /** What a running bot's page shows now (a screenshot command). */
  screenshots: ScreenshotService;
  recordings: RecordingService;
  /** The recording uploaded in segments during the call, and its salvage when the runner is lost. */
  segments: RecordingSegmentService;
  shares: ShareService;
  watchdog: BotWatchdog;
  artifacts: ArtifactService;
  apiLogs: ApiLogService;
  profile: ProfileService;
  webhooks: WebhookService;
  /** Sends queued webhook deliveries; the app starts it unless config.webhooks.worker is off. */
  webhookWorker: WebhookWorker;
  transcripts: TranscriptService;
  summaries: SummaryService;
  /** AssemblyAI's completion webhooks for the jobs this process runs. */
  assemblyAiWebhooks: AssemblyAiWebhooks;
  /** Makes transcripts and summaries; the app starts it unless config.jobs.worker is off. */
  jobWorker: JobWorker;
}

export function createServices(ctx: ServiceContext): Services {
  const engines = new Engines(ctx.config.jobs.engines);
  const assemblyAiWebhooks = new AssemblyAiWebhooks(ctx.publicBaseUrl);
  // Notified after a transaction that appended aggregated events commits: wakes event streams.
  const eventsAppended = new WakeSignal();
  // Secrets at rest (bot-account sessions, audio-stream tokens) are sealed with the operator's MEETBOT_SECRET_KEY.
  const secrets = new SecretBox(ctx.config.secretKeys);
  const botAccounts = new BotAccountService(ctx, secrets);
  // One shared Teams bot-identification token for every Teams bot this process deploys.
  const teamsTokens = ctx.config.teamsBotIdentity
    ? new TeamsBotTokens(ctx.config.teamsBotIdentity, ctx.now)
    : undefined;
  const bots = new BotService(ctx, engines, eventsAppended, botAccounts, secrets, teamsTokens);
  const commands = new CommandService(ctx, bots);
  const events = new EventService(ctx, bots);
  const apiKeys = new ApiKeyService(ctx);
  const users = new UserService(ctx, apiKeys);
  const apiLogs = new ApiLogService(ctx);
  const transcripts = new TranscriptService(ctx, bots, engines);
  // The notes interface's webhook events, queued by what stores their news (src/notes/webhooks.ts).
  const notesEvents = new NotesEvents(ctx.dialect);
  const recordings = new RecordingService(ctx, bots, engines, notesEvents);
  const segments = new RecordingSegmentService(ctx, bots, recordings);
  const botData = new BotDataService(ctx);
  const voice = new VoiceService(
    ctx,
    bots,
    commands,
    createSpeechEngine(ctx.config.speech),
    new OutputClipStore(ctx.config.paths.outputs),
  );
  const artifacts = new ArtifactService(ctx, bots, ctx.artifactStore);
  // One outbound client for the worker and the test sends; the worker's stop() closes it.
  const outbound = new OutboundClient({
    ...ctx.config.outbound,
    maxResponseBytes: MAX_LOGGED_BODY_CHARS * 4,
  });
  // Feeds are read by the webhooks' address rules, with a size limit of their own.
  const calendarBots = new CalendarBots(ctx, bots);
  const calendarWake = new WakeSignal();
  const calendarSync = new CalendarSync(
    ctx,
    ctx.config.calendars,
    secrets,
    new OutboundClient({ ...ctx.config.outbound, maxResponseBytes: ctx.config.calendars.maxFeedBytes }),
    calendarBots,
    calendarWake,
  );
  return {
    users,
    apiKeys,
    oauth: new OAuthService(ctx, users),
    bots,
    botAccounts,
    accountChecks: new AccountCheckService(ctx, botAccounts, ctx.config.accountChecks),
    schedules: scheduleWorker(ctx, bots, ctx.config.schedule),
    botData,
    retention: retentionWorker(ctx, botData, ctx.config.retention),
    calendars: new CalendarService(ctx, secrets, calendarBots, calendarSync, calendarWake),
    calendarSync,
    events,
    eventStreams: new EventStreams(events, ctx.db, ctx.config.eventStream, eventsAppended, ctx.log),
    callbacks: new CallbackService(ctx, eventsAppended),
    commands,
    chat: new ChatService(ctx, bots, commands),
    voice,
    picture: new PictureService(
      bots,
      commands,
      new OutputImages(new OutputClipStore(ctx.config.paths.outputs)),
    ),
    screenshots: new ScreenshotService(ctx, bots, commands, artifacts),
    recordings,
    segments,
    shares: new ShareService(ctx, recordings, transcripts),
    watchdog: new BotWatchdog(ctx, bots, segments, voice),
    artifacts,
    apiLogs,
    profile: new ProfileService(ctx, apiLogs, users),
    webhooks: new WebhookService(ctx, new Deliverer({ db: ctx.db, now: ctx.now, outbound })),
    webhookWorker: new WebhookWorker({
      db: ctx.db,
      dialect: ctx.dialect,
      now: ctx.now,
      log: ctx.log,
      outbound,
      signal: ctx.outbox,
      concurrency: ctx.config.webhooks.concurrency,
      pollIntervalMs: ctx.config.webhooks.pollIntervalMs,
      retentionMs: ctx.config.webhooks.retentionDays * 24 * 60 * 60 * 1000,
      leaseMs: attemptLeaseMs(ctx.config.outbound),
    }),
    transcripts,
    summaries: new SummaryService(ctx, bots, engines),
    assemblyAiWebhooks,
    jobWorker: new JobWorker({
      db: ctx.db,
      dialect: ctx.dialect,
      now: ctx.now,
      log: ctx.log,
      handlers: {
        transcript: transcriptJobHandler({
          db: ctx.db,
          store: ctx.store,
          engines,
          assemblyAiWebhooks,
          notesEvents,
        }),
        summary: summaryJobHandler({ db: ctx.db, engines, notesEvents }),
      },
      concurrency: ctx.config.jobs.concurrency,
      pollIntervalMs: ctx.config.jobs.pollIntervalMs,
      leaseMs: JOB_LEASE_MS,
      signal: ctx.jobs,
      outbox: ctx.outbox,
      ...(ctx.config.jobs.retryDelaysMs ? { retryDelaysMs: ctx.config.jobs.retryDelaysMs } : {}),
    }),
  };
}
