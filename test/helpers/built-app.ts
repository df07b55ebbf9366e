import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/server/app.js";
import { type Core, createCore } from "../../src/server/core.js";
import { createLogger } from "../../src/server/http/api-server.js";
import { type LogStream, type RateLimitConfig, resolveConfig } from "../../src/server/config.js";
import { openDatabase } from "../../src/server/db/database.js";
import { testDatabaseFor } from "./postgres.js";
import { Api, RecordingLauncher, type TestServer } from "./server-harness.js";

/** A clock a test moves by hand: the server's `now` for rate-limit windows and log retention. */
export class TestClock {
  private offsetMs = 0;
  now = (): Date => new Date(Date.now() + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** Moves to `ms` after the start of the clock's next UTC minute. */
  toNextMinute(ms = 0): void {
    this.toNext(60_000, ms);
  }
  /** Moves to `ms` after the start of the clock's next UTC hour. */
  toNextHour(ms = 0): void {
    this.toNext(3_600_000, ms);
  }
  private toNext(unitMs: number, ms: number): void {
    const now = this.now().getTime();
    this.advance((Math.floor(now / unitMs) + 1) * unitMs + ms - now);
  }
}

export interface BuiltApp extends TestServer {
  app: FastifyInstance;
  /** The services and workers behind the app. */
  core: Core;
}

/**
 * The same app as startServer builds, listening on 127.0.0.1 with a free port, but with a clock
 * the test controls and the Fastify instance in hand (its route table, its request-log service).
 */
export async function startBuiltApp(
  opts: {
    clock?: TestClock;
    rateLimit?: Partial<RateLimitConfig>;
    env?: NodeJS.ProcessEnv;
    /** The server's log level (default silent) and where its lines go (default stdout). */
    logLevel?: string;
    logStream?: LogStream;
  } = {},
): Promise<BuiltApp> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-app-"));
  const database = await testDatabaseFor(dataDir);
  const config = resolveConfig({
    ...(opts.env ? { env: opts.env } : {}),
    dataDir,
    port: 0,
    logLevel: opts.logLevel ?? "silent",
    ...(opts.logStream ? { logStream: opts.logStream } : {}),
    allowedMeetingHosts: ["127.0.0.1"],
    databaseUrl: database?.url ?? "",
    rateLimit: { perMinute: 0, perHour: 0, ...opts.rateLimit },
  });
  await mkdir(config.paths.recordings, { recursive: true });
  await mkdir(config.paths.bots, { recursive: true });
  const db = await openDatabase(config.database);
  const launcher = new RecordingLauncher();
  let url = "";
  const core = await createCore({
    config,
    db,
    secret: randomBytes(32),
    launcher,
    publicBaseUrl: () => url,
    log: createLogger(config),
    ...(opts.clock ? { now: opts.clock.now } : {}),
  });
  const app = await buildApp(core, () => url);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  core.start();
  return {
    app,
    core,
    api: new Api(url),
    url,
    dataDir,
    databaseUrl: database?.url ?? "",
    launcher,
    async close() {
      await core.releaseRequests();
      await app.close();
      await core.stop();
      await db.close();
      await rm(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}
