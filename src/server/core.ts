import type { FastifyBaseLogger } from "fastify";
import { DownloadSigner } from "./auth/signed-urls.js";
import { JwtIssuer } from "./auth/tokens.js";
import type { ServerConfig } from "./config.js";
import type { Db } from "./db/database.js";
import type { Launcher } from "./launcher/launcher.js";
import { createServices, type Services } from "./services/index.js";
import { openStores } from "./storage/stores.js";
import { WakeSignal } from "./wake-signal.js";

export interface CoreDeps {
  config: ServerConfig;
  db: Db;
  /** The server secret (JWT and download-link keys are derived from it). */
  secret: Uint8Array;
  launcher: Launcher;
  publicBaseUrl(): string;
  log: FastifyBaseLogger;
  now?: () => Date;
}

/**
 * What both interfaces serve from, built once before either: the stores, the services and the
 * background workers (started once the server listens). The apps (app.ts, notes/app.ts) only register routes on top of it.
 */
export interface Core {
  config: ServerConfig;
  db: Db;
  services: Services;
  log: FastifyBaseLogger;
  now: () => Date;
  /**
   * Starts the workers. Called once the server listens: a runner launched by one (a scheduled
   * bot, an account check) is given the server's address, which is not known before (port 0).
   */
  start(): void;
  /**
   * Answers at once what would hold an HTTP server's close open: event streams end, runners'
   * long polls return (they poll again, and the next server process answers).
   */
  releaseRequests(): Promise<void>;
  /** Stops the workers and closes the stores, in order; the caller closes the database after. */
  stop(): Promise<void>;
}

export async function createCore(deps: CoreDeps): Promise<Core> {
  const { config, db, log } = deps;
  const now = deps.now ?? (() => new Date());
  const stores = await openStores(config.storage, config.paths);
  const services = createServices({
    db: db.kysely,
    dialect: db.dialect,
    config,
    launcher: deps.launcher,
    jwt: new JwtIssuer(deps.secret),
    signer: new DownloadSigner(deps.secret),
    store: stores.recordings,
    artifactStore: stores.artifacts,
    publicBaseUrl: deps.publicBaseUrl,
    now,
    log,
    outbox: new WakeSignal(),
    jobs: new WakeSignal(),
  });
  try {
    await deps.launcher.attach?.({
      runnerFailed: (botId, subCode, message) => services.segments.failLostRunner(botId, subCode, message),
      runningBotIds: () => services.bots.runningIds(),
      log,
    });
  } catch (err) {
    // E.g. a container engine out of reach.
    stores.close();
    throw err;
  }
  let leftovers: Promise<void> = Promise.resolve();
  return {
    config,
    db,
    services,
    log,
    now,
    start() {
      // Segments of runners lost while no server (or a server that stopped mid-salvage) was running.
      leftovers = services.segments
        .salvageLeftovers()
        .catch((err: unknown) => log.error({ err }, "could not check for unsalvaged recording segments"));
      services.watchdog.start();
      services.apiLogs.start();
      if (config.webhooks.worker) services.webhookWorker.start();
      if (config.jobs.worker) services.jobWorker.start();
      services.accountChecks.start();
      if (config.schedule.worker) services.schedules.start();
      if (config.retention.worker) services.retention.start();
      if (config.calendars.worker) services.calendarSync.worker.start();
    },
    async releaseRequests() {
      await services.eventStreams.closeAll();
      await services.commands.close();
    },
    async stop() {
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
    },
  };
}
