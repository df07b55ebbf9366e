import { LocalArtifactStore } from "../storage/artifacts.js";
import { Deliverer } from "../webhooks/deliver.js";
import { OutboundClient } from "../webhooks/outbound.js";
import { attemptLeaseMs, MAX_LOGGED_BODY_CHARS } from "../webhooks/queue.js";
import { WebhookWorker } from "../webhooks/worker.js";
import { ApiKeyService } from "./api-keys.js";
import { ApiLogService } from "./api-logs.js";
import { ArtifactService } from "./artifacts.js";
import { BotService } from "./bots.js";
import { CallbackService } from "./callbacks.js";
import type { ServiceContext } from "./context.js";
import { EventService } from "./events.js";
import { OAuthService } from "./oauth.js";
import { ProfileService } from "./profile.js";
import { RecordingService } from "./recordings.js";
import { ShareService } from "./shares.js";
import { UserService } from "./users.js";
import { BotWatchdog } from "./watchdog.js";
import { WebhookService } from "./webhooks.js";

export type { ServiceContext } from "./context.js";

export interface Services {
  users: UserService;
  apiKeys: ApiKeyService;
  oauth: OAuthService;
  bots: BotService;
  events: EventService;
  callbacks: CallbackService;
  recordings: RecordingService;
  shares: ShareService;
  watchdog: BotWatchdog;
  artifacts: ArtifactService;
  apiLogs: ApiLogService;
  profile: ProfileService;
  webhooks: WebhookService;
  /** Sends queued webhook deliveries; the app starts it unless config.webhooks.worker is off. */
  webhookWorker: WebhookWorker;
}

export function createServices(ctx: ServiceContext): Services {
  const bots = new BotService(ctx);
  const apiKeys = new ApiKeyService(ctx);
  const users = new UserService(ctx, apiKeys);
  const apiLogs = new ApiLogService(ctx);
  const recordings = new RecordingService(ctx, bots);
  // One outbound client for the worker and the test sends; the worker's stop() closes it.
  const outbound = new OutboundClient({
    ...ctx.config.outbound,
    maxResponseBytes: MAX_LOGGED_BODY_CHARS * 4,
  });
  return {
    users,
    apiKeys,
    oauth: new OAuthService(ctx, users),
    bots,
    events: new EventService(ctx, bots),
    callbacks: new CallbackService(ctx),
    recordings,
    shares: new ShareService(ctx, recordings),
    watchdog: new BotWatchdog(ctx, bots),
    artifacts: new ArtifactService(ctx, bots, new LocalArtifactStore(ctx.config.paths.bots)),
    apiLogs,
    profile: new ProfileService(ctx, apiLogs),
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
  };
}
