import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import { DownloadSigner } from "./auth/signed-urls.js";
import { JwtIssuer } from "./auth/tokens.js";
import type { ServerConfig } from "./config.js";
import type { Db } from "./db/database.js";
import { registerDocs } from "./http/docs.js";
import { createApiServer } from "./http/api-server.js";
import { registerDashboard } from "./http/dashboard.js";
import { API_PREFIX, BOT_API_DOCUMENT, registerOpenApi, SANDBOX_PREFIX } from "./http/openapi.js";
import { RateLimiter } from "./http/rate-limit.js";
import type { Launcher } from "./launcher/launcher.js";
import { apiRoutes } from "./routes/index.js";
import { authCallbackPage } from "./routes/oauth.js";
import { createServices, type Services } from "./services/index.js";
import { openStores } from "./storage/stores.js";
import { WakeSignal } from "./wake-signal.js";

export interface AppDeps {
  config: ServerConfig;
  db: Db;
  /** The server secret (JWT and download-link keys are derived from it). */
  secret: Uint8Array;
  launcher: Launcher;
  publicBaseUrl(): string;
  now?: () => Date;
}

/** What a second interface served beside this app shares with it (src/notes/app.ts). */
export interface SharedWithApp {
  services: Services;
  db: Db;
}
const shared = new WeakMap<FastifyInstance, SharedWithApp>();

export function sharedWith(app: FastifyInstance): SharedWithApp {
  const found = shared.get(app);
  if (!found) throw new Error("not an app built by buildApp");
  return found;
}

/** Builds the Fastify app (not listening). The caller owns the database and closes it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = await createApiServer(deps.config);

  const now = deps.now ?? (() => new Date());
  const stores = await openStores(deps.config.storage, deps.config.paths);
  const services = createServices({
    db: deps.db.kysely,
    dialect: deps.db.dialect,
    config: deps.config,
    launcher: deps.launcher,
    jwt: new JwtIssuer(deps.secret),
    signer: new DownloadSigner(deps.secret),
    store: stores.recordings,
    artifactStore: stores.artifacts,
    publicBaseUrl: deps.publicBaseUrl,
    now,
    log: app.log,
    outbox: new WakeSignal(),
    jobs: new WakeSignal(),
  });
  // One limiter for both prefixes: /v1 and /api/v1 share a credential's budget.
  const rateLimiter = new RateLimiter(deps.config.rateLimit, () => now().getTime());

  // WebSocket upgrades (the live stream's socket); a client's messages are small JSON.
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  await registerOpenApi(app, BOT_API_DOCUMENT);
  await app.register(apiRoutes, { prefix: API_PREFIX, services, rateLimiter });
  await app.register(apiRoutes, { prefix: SANDBOX_PREFIX, services, rateLimiter });
  await registerDocs(app, deps.publicBaseUrl, BOT_API_DOCUMENT.title);
  await app.register(authCallbackPage);
  registerDashboard(app);
  shared.set(app, { services, db: deps.db });
  await deps.launcher.attach?.({
    runnerFailed: (botId, subCode, message) => services.segments.failLostRunner(botId, subCode, message),
    runningBotIds: () => services.bots.runningIds(),
    log: app.log,
  });
  // Segments of runners lost while no server (or a server that stopped mid-salvage) was running.
  const leftovers = services.segments
    .salvageLeftovers()
    .catch((err: unknown) => app.log.error({ err }, "could not check for unsalvaged recording segments"));
  services.watchdog.start();
  services.apiLogs.start();
  if (deps.config.webhooks.worker) services.webhookWorker.start();
  if (deps.config.jobs.worker) services.jobWorker.start();
  services.accountChecks.start();
  if (deps.config.schedule.worker) services.schedules.start();
  if (deps.config.retention.worker) services.retention.start();
  if (deps.config.calendars.worker) services.calendarSync.worker.start();
  // Open event streams would keep the server's close waiting for ever.
  app.addHook("preClose", async () => services.eventStreams.closeAll());
  // Runners' long polls answer at once (they poll again, the next server process answers).
  app.addHook("preClose", async () => services.commands.close());
  app.addHook("onClose", async () => {
    await services.watchdog.stop();
    await services.accountChecks.stop();
    await services.schedules.stop();
    await services.retention.stop();
    await services.calendarSync.stop();
    await leftovers;
    await services.segments.settled();
    // Hands running transcripts and summaries back to the queue, to be resumed after a restart.
    await services.jobWorker.stop();
    // Waits briefly for deliveries in flight; the rest are sent again after a restart.
    await services.webhookWorker.stop();
    // Before the caller closes the database: the last buffered request-log rows.
    await services.apiLogs.stop();
    stores.close();
  });
  return app;
}
