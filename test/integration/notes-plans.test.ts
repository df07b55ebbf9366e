import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import {
  PlanLimiter,
  planHeadersOnEveryResponse,
  planRateLimit,
  setUserPlan,
} from "../../src/notes/plan-limits.js";
import type { Plan } from "../../src/notes/plans.js";
import { requireUser } from "../../src/server/auth/guard.js";
import { DownloadSigner } from "../../src/server/auth/signed-urls.js";
import { JwtIssuer } from "../../src/server/auth/tokens.js";
import { resolveConfig } from "../../src/server/config.js";
import { type Db, openDatabase } from "../../src/server/db/database.js";
import { NotFoundError } from "../../src/server/errors.js";
import { createApiServer, createLogger } from "../../src/server/http/api-server.js";
import { ApiKeyService } from "../../src/server/services/api-keys.js";
import type { ServiceContext } from "../../src/server/services/context.js";
import { UserService } from "../../src/server/services/users.js";
import { StartupError } from "../../src/server/startup-error.js";
import { LocalArtifactStore } from "../../src/server/storage/artifacts.js";
import { LocalRecordingStore } from "../../src/server/storage/recordings.js";
import { WakeSignal } from "../../src/server/wake-signal.js";
import { TestClock } from "../helpers/built-app.js";
import { type TestDatabase, testDatabaseFor } from "../helpers/postgres.js";
import { Api, type ApiResponse, RecordingLauncher, errorDetail } from "../helpers/server-harness.js";

/**
 * The notes interface's plan limits on the real database, with the real auth hook
 * and API keys in front of them, over real HTTP, on an app from the builder both interfaces share
 * (createApiServer) with a stand-in route or two: the hooks as the notes app mounts them. The clock is the test's, set just after an
 * hour begins, so that no window ends during a test unless the test moves it on.
 */

/** One server process: its own database connection, limiter and HTTP app. */
interface Process {
  db: Db;
  limiter: PlanLimiter;
  users: UserService;
  apiKeys: ApiKeyService;
  api: Api;
  close(): Promise<void>;
}

interface Stand {
  dataDir: string;
  /** "" on SQLite. */
  databaseUrl: string;
  clock: TestClock;
  processes: Process[];
  close(): Promise<void>;
}

let stand: Stand | undefined;
afterEach(async () => {
  await stand?.close();
  stand = undefined;
});

async function start(opts: { defaultPlan?: Plan; processes?: number } = {}): Promise<Stand> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-plans-"));
  const database: TestDatabase | undefined = await testDatabaseFor(dataDir);
  const clock = new TestClock();
  clock.toNextHour(1_000);
  const secret = randomBytes(32);
  const processes: Process[] = [];
  for (let i = 0; i < (opts.processes ?? 1); i++) {
    processes.push(
      await startProcess(dataDir, database?.url ?? "", secret, clock, opts.defaultPlan ?? "free"),
    );
  }
  stand = {
    dataDir,
    databaseUrl: database?.url ?? "",
    clock,
    processes,
    async close() {
      for (const process of processes) await process.close();
      await rm(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
  return stand;
}

async function startProcess(
  dataDir: string,
  databaseUrl: string,
  secret: Uint8Array,
  clock: TestClock,
  defaultPlan: Plan,
): Promise<Process> {
  const config = resolveConfig({ dataDir, port: 0, logLevel: "silent", databaseUrl, env: {} });
  const db = await openDatabase(config.database);
  const app: FastifyInstance = await createApiServer(config, createLogger(config));
  let url = "";
  const ctx: ServiceContext = {
    db: db.kysely,
    dialect: db.dialect,
    config,
    launcher: new RecordingLauncher(),
    jwt: new JwtIssuer(secret),
    signer: new DownloadSigner(secret),
    store: new LocalRecordingStore(config.paths.recordings),
    artifactStore: new LocalArtifactStore(config.paths.bots),
    publicBaseUrl: () => url,
    now: clock.now,
    log: app.log,
    outbox: new WakeSignal(),
    jobs: new WakeSignal(),
  };
  const apiKeys = new ApiKeyService(ctx);
  const users = new UserService(ctx, apiKeys);
  const limiter = new PlanLimiter(db.kysely, defaultPlan, clock.now);

  app.addHook("onSend", planHeadersOnEveryResponse(limiter));
  await app.register(async (authenticated) => {
    authenticated.addHook(
      "onRequest",
      requireUser((token) => users.resolveBearer(token)),
    );
    authenticated.addHook("onRequest", planRateLimit(limiter));
    authenticated.get("/v1/meetings", async () => ({ data: [], has_more: false, next_cursor: null }));
    authenticated.get("/v1/meetings/:id", async () => {
      throw new NotFoundError("Meeting not found");
    });
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    db,
    limiter,
    users,
    apiKeys,
    api: new Api(url),
    async close() {
      await app.close();
      await db.close();
    },
  };
}

interface User {
  id: number;
  email: string;
  /** An access token and an API key: two credentials, one budget. */
  token: string;
  key: string;
}

async function newUser(process: Process, plan?: Plan): Promise<User> {
  const email = `user-${randomUUID()}@example.com`;
  const registered = await process.users.register({ email, password: "correct horse battery", name: "P" });
  const id = Number(String(registered.user_id).replace(/^usr_/, ""));
  const { key } = await process.apiKeys.create(id, { name: "notes" });
  if (plan) await setUserPlan(process.db.kysely, email, plan);
  return { id, email, token: registered.access_token, key };
}

const headers = (res: ApiResponse) => ({
  limit: res.headers.get("x-ratelimit-limit"),
  remaining: res.headers.get("x-ratelimit-remaining"),
  reset: res.headers.get("x-ratelimit-reset"),
});
const hourEnd = (clock: TestClock) => String(Math.ceil((clock.now().getTime() + 1) / 3_600_000) * 3600);

/** `count` requests, a few at a time; their statuses and headers in the order they were sent. */
async function spend(api: Api, tokens: string[], count: number): Promise<ApiResponse[]> {
  const responses: ApiResponse[] = [];
  for (let i = 0; i < count; i += 10) {
    const batch = Array.from({ length: Math.min(10, count - i) }, (_, j) =>
      api.get("/v1/meetings", { token: tokens[(i + j) % tokens.length] as string }),
    );
    responses.push(...(await Promise.all(batch)));
  }
  return responses;
}

describe("plan limits per user, counted in the database", () => {
  it("free: 100 an hour across the user's access token and API key, then 429 with Retry-After and {detail}", async () => {
    const { processes, clock } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p);
    const other = await newUser(p);

    const first = await p.api.get("/v1/meetings", { token: user.token });
    expect(first.status).toBe(200);
    expect(headers(first)).toEqual({ limit: "100", remaining: "99", reset: hourEnd(clock) });
    const second = await p.api.get("/v1/meetings", { token: user.key });
    expect(headers(second).remaining).toBe("98");

    const rest = await spend(p.api, [user.token, user.key], 98);
    expect(rest.map((r) => r.status)).toEqual(Array(98).fill(200));
    expect(rest.map((r) => Number(headers(r).remaining)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 98 }, (_, i) => i),
    );

    const secondsLeft = () => Math.ceil(3600 - (clock.now().getTime() % 3_600_000) / 1000);
    const atMost = secondsLeft();
    const limited = await p.api.get("/v1/meetings", { token: user.key });
    const atLeast = secondsLeft();
    expect(limited.status).toBe(429);
    expect(errorDetail(limited.body)).toMatch(
      /^Rate limit exceeded: the free plan allows 100 requests per hour/,
    );
    expect(headers(limited)).toEqual({ limit: "100", remaining: "0", reset: hourEnd(clock) });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(atLeast);
    expect(retryAfter).toBeLessThanOrEqual(atMost);
    expect((await p.api.get("/v1/meetings", { token: user.token })).status).toBe(429);

    // Another user's budget is their own.
    expect(headers(await p.api.get("/v1/meetings", { token: other.key })).remaining).toBe("99");

    // A new hour, a new budget; the refused requests were not counted against anything.
    clock.toNextHour(1_000);
    const next = await p.api.get("/v1/meetings", { token: user.token });
    expect(next.status).toBe(200);
    expect(headers(next)).toEqual({ limit: "100", remaining: "99", reset: hourEnd(clock) });
  });

  it("pro: 1000 an hour", async () => {
    const { processes } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p, "pro");
    const responses = await spend(p.api, [user.key], 1000);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1000);
    expect(responses.every((r) => headers(r).limit === "1000")).toBe(true);
    const limited = await p.api.get("/v1/meetings", { token: user.key });
    expect(limited.status).toBe(429);
    expect(headers(limited)).toMatchObject({ limit: "1000", remaining: "0" });
    expect(errorDetail(limited.body)).toMatch(/the pro plan allows 1000 requests per hour/);
  });

  it("enterprise: never refused, its headers say 2147483647 (a number, for integer parsers), nothing is counted", async () => {
    const { processes, clock } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p, "enterprise");
    const responses = await spend(p.api, [user.token, user.key], 150);
    expect(responses.map((r) => r.status)).toEqual(Array(150).fill(200));
    for (const res of [responses[0], responses[149]] as ApiResponse[]) {
      expect(headers(res)).toEqual({ limit: "2147483647", remaining: "2147483647", reset: hourEnd(clock) });
    }
    const rows = await p.db.kysely
      .selectFrom("plan_usage")
      .selectAll()
      .where("user_id", "=", user.id)
      .execute();
    expect(rows).toEqual([]);
  });

  it("a user never given a plan has the configured default; one given a plan keeps it", async () => {
    const { processes } = await start({ defaultPlan: "pro" });
    const [p] = processes as [Process];
    const unset = await newUser(p);
    const free = await newUser(p, "free");
    expect(headers(await p.api.get("/v1/meetings", { token: unset.key })).limit).toBe("1000");
    expect(headers(await p.api.get("/v1/meetings", { token: free.key })).limit).toBe("100");
    const stored = await p.db.kysely
      .selectFrom("users")
      .select(["id", "plan"])
      .where("id", "in", [unset.id, free.id])
      .orderBy("id")
      .execute();
    expect(stored).toEqual([
      { id: unset.id, plan: null },
      { id: free.id, plan: "free" },
    ]);
  });

  it("MEETBOT_DEFAULT_PLAN: free by default, one of the plans, anything else stops startup", () => {
    const config = (env: Record<string, string>) => resolveConfig({ dataDir: tmpdir(), env });
    expect(config({}).notes.defaultPlan).toBe("free");
    expect(config({ MEETBOT_DEFAULT_PLAN: "enterprise" }).notes.defaultPlan).toBe("enterprise");
    expect(() => config({ MEETBOT_DEFAULT_PLAN: "gold" })).toThrow(StartupError);
    expect(() => config({ MEETBOT_DEFAULT_PLAN: "gold" })).toThrow(
      'MEETBOT_DEFAULT_PLAN: must be one of free, pro, enterprise (got "gold")',
    );
  });
});

describe("the X-RateLimit-* headers on every response", () => {
  it("an error after authentication counts and shows the user's budget", async () => {
    const { processes, clock } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p);
    const missing = await p.api.get("/v1/meetings/mtg_nope", { token: user.key });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "Meeting not found" });
    expect(headers(missing)).toEqual({ limit: "100", remaining: "99", reset: hourEnd(clock) });
  });

  it("a 401 or an unknown path shows the default plan's whole budget and spends nobody's", async () => {
    const { processes, clock } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p);
    await p.api.get("/v1/meetings", { token: user.key });

    const none = await p.api.get("/v1/meetings");
    const wrong = await p.api.get("/v1/meetings", { token: `${user.key.slice(0, -4)}0000` });
    const unknown = await p.api.get("/v1/nowhere", { token: user.key });
    for (const [res, status] of [
      [none, 401],
      [wrong, 401],
      [unknown, 404],
    ] as const) {
      expect(res.status).toBe(status);
      expect(errorDetail(res.body)).toEqual(expect.any(String));
      expect(headers(res)).toEqual({ limit: "100", remaining: "100", reset: hourEnd(clock) });
    }
    expect(headers(await p.api.get("/v1/meetings", { token: user.key })).remaining).toBe("98");
  });

  it("a 401 under an enterprise default says 2147483647, the number an unlimited plan shows", async () => {
    const { processes, clock } = await start({ defaultPlan: "enterprise" });
    const res = await (processes[0] as Process).api.get("/v1/meetings");
    expect(res.status).toBe(401);
    expect(headers(res)).toEqual({ limit: "2147483647", remaining: "2147483647", reset: hourEnd(clock) });
  });

  it("are decimal integers on every plan, as a client that parses integers reads them", async () => {
    const { processes } = await start();
    const [p] = processes as [Process];
    for (const plan of ["free", "pro", "enterprise"] as const) {
      const user = await newUser(p, plan);
      const h = headers(await p.api.get("/v1/meetings", { token: user.key }));
      for (const value of [h.limit, h.remaining, h.reset]) expect(value, plan).toMatch(/^[0-9]+$/);
    }
  });
});

describe("several server processes on one database", () => {
  it("share one count: 130 requests at once through two processes, exactly 100 allowed", async () => {
    const { processes } = await start({ processes: 2 });
    const [a, b] = processes as [Process, Process];
    const user = await newUser(a);
    const responses = await Promise.all(
      Array.from({ length: 130 }, (_, i) =>
        (i % 2 ? a : b).api.get("/v1/meetings", { token: i % 3 ? user.key : user.token }),
      ),
    );
    expect(responses.filter((r) => r.status === 200)).toHaveLength(100);
    expect(responses.filter((r) => r.status === 429)).toHaveLength(30);
    // Every allowed request saw its own place in the one count.
    const remaining = responses.filter((r) => r.status === 200).map((r) => Number(headers(r).remaining));
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // A plan changed by another process (the CLI) applies at the next request.
    await setUserPlan(b.db.kysely, user.email, "pro");
    const after = await a.api.get("/v1/meetings", { token: user.key });
    expect(after.status).toBe(200);
    expect(headers(after)).toMatchObject({ limit: "1000", remaining: "899" });
  });

  it("old windows are deleted; the previous one is kept", async () => {
    const { processes, clock } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p);
    const windows = async () =>
      (
        await p.db.kysely
          .selectFrom("plan_usage")
          .select(["window_start", "count"])
          .where("user_id", "=", user.id)
          .orderBy("window_start")
          .execute()
      ).map((row) => `${row.window_start.slice(11, 13)}h:${row.count}`);
    const hour = () => clock.now().toISOString().slice(11, 13);

    const h0 = hour();
    await spend(p.api, [user.key], 3);
    clock.toNextHour(1_000);
    const h1 = hour();
    await spend(p.api, [user.key], 2);
    // In time order (windows() sorts by the window's full start: 23h comes before 00h).
    expect(await windows()).toEqual([`${h0}h:3`, `${h1}h:2`]);
    clock.toNextHour(1_000);
    const h2 = hour();
    await spend(p.api, [user.key], 1);
    expect(await windows()).toEqual([`${h1}h:2`, `${h2}h:1`]);
  });
});

describe("meetbot users set-plan", { timeout: 60_000 }, () => {
  const cli = (args: string[], databaseUrl: string) =>
    promisify(execFile)(process.execPath, ["--import", "tsx", "src/cli.ts", "users", "set-plan", ...args], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      },
      timeout: 30_000,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  it("changes the plan of the user with that e-mail, in the server's database, and says what changed", async () => {
    const { processes, dataDir, databaseUrl } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p);
    const dir = ["--data-dir", dataDir];

    const upgraded = await cli([user.email.toUpperCase(), "pro", ...dir], databaseUrl);
    expect(upgraded).toMatchObject({ code: 0, stderr: "" });
    expect(upgraded.stdout).toBe(`${user.email}: plan free (the default) -> pro\n`);
    expect(headers(await p.api.get("/v1/meetings", { token: user.key })).limit).toBe("1000");

    const back = await cli([user.email, "default", ...dir], databaseUrl);
    expect(back).toMatchObject({ code: 0, stdout: `${user.email}: plan pro -> free (the default)\n` });
    const row = await p.db.kysely
      .selectFrom("users")
      .select("plan")
      .where("id", "=", user.id)
      .executeTakeFirst();
    expect(row).toEqual({ plan: null });
    expect(headers(await p.api.get("/v1/meetings", { token: user.key })).limit).toBe("100");
  });

  it("an unknown e-mail or plan: a clear message, a non-zero exit, nothing changed", async () => {
    const { processes, dataDir, databaseUrl } = await start();
    const [p] = processes as [Process];
    const user = await newUser(p, "pro");
    const dir = ["--data-dir", dataDir];

    const nobody = await cli(["nobody@example.com", "enterprise", ...dir], databaseUrl);
    expect(nobody).toMatchObject({
      code: 1,
      stdout: "",
      stderr: 'meetbot users set-plan: no user has the e-mail "nobody@example.com"\n',
    });
    const gold = await cli([user.email, "gold", ...dir], databaseUrl);
    expect(gold).toMatchObject({
      code: 2,
      stdout: "",
      stderr: 'meetbot users set-plan: unknown plan "gold" (one of free, pro, enterprise, or default)\n',
    });
    const missing = await cli([user.email, ...dir], databaseUrl);
    expect(missing).toMatchObject({ code: 2, stderr: "meetbot users set-plan: expected <email> <plan>\n" });
    const row = await p.db.kysely
      .selectFrom("users")
      .select("plan")
      .where("id", "=", user.id)
      .executeTakeFirst();
    expect(row).toEqual({ plan: "pro" });
  });
});
