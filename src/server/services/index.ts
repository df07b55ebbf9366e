import { LocalArtifactStore } from "../storage/artifacts.js";
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
import { UserService } from "./users.js";
import { BotWatchdog } from "./watchdog.js";

export type { ServiceContext } from "./context.js";

export interface Services {
  users: UserService;
  apiKeys: ApiKeyService;
  oauth: OAuthService;
  bots: BotService;
  events: EventService;
  callbacks: CallbackService;
  recordings: RecordingService;
  watchdog: BotWatchdog;
  artifacts: ArtifactService;
  apiLogs: ApiLogService;
  profile: ProfileService;
}

export function createServices(ctx: ServiceContext): Services {
  const bots = new BotService(ctx);
  const apiKeys = new ApiKeyService(ctx);
  const users = new UserService(ctx, apiKeys);
  const apiLogs = new ApiLogService(ctx);
  return {
    users,
    apiKeys,
    oauth: new OAuthService(ctx, users),
    bots,
    events: new EventService(ctx, bots),
    callbacks: new CallbackService(ctx),
    recordings: new RecordingService(ctx, bots),
    watchdog: new BotWatchdog(ctx, bots),
    artifacts: new ArtifactService(ctx, bots, new LocalArtifactStore(ctx.config.paths.bots)),
    apiLogs,
    profile: new ProfileService(ctx, apiLogs),
  };
}
