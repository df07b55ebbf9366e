import { LocalArtifactStore } from "../storage/artifacts.js";
import { ArtifactService } from "./artifacts.js";
import { BotService } from "./bots.js";
import { CallbackService } from "./callbacks.js";
import type { ServiceContext } from "./context.js";
import { EventService } from "./events.js";
import { RecordingService } from "./recordings.js";
import { UserService } from "./users.js";
import { BotWatchdog } from "./watchdog.js";

export type { ServiceContext } from "./context.js";

export interface Services {
  users: UserService;
  bots: BotService;
  events: EventService;
  callbacks: CallbackService;
  recordings: RecordingService;
  watchdog: BotWatchdog;
  artifacts: ArtifactService;
}

export function createServices(ctx: ServiceContext): Services {
  const bots = new BotService(ctx);
  return {
    users: new UserService(ctx),
    bots,
    events: new EventService(ctx, bots),
    callbacks: new CallbackService(ctx),
    recordings: new RecordingService(ctx, bots),
    watchdog: new BotWatchdog(ctx, bots),
    artifacts: new ArtifactService(ctx, bots, new LocalArtifactStore(ctx.config.paths.bots)),
  };
}
