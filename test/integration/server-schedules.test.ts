import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, vi } from "vitest";
import type { Db } from "../../src/server/db/database.js";
import { claimDueSchedules, SCHEDULE_LEASE_MS } from "../../src/server/services/schedules.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import {
  FakeRunner,
  openServerDatabase,
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
  defined,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * Scheduled bots (joinAt) on real servers, real clocks and real databases (SQLite, or PostgreSQL
 * under scripts/with-postgres.sh), with the recording launcher. No test waits for the 30 s a
 * joinAt must be ahead: servers run with a lead close to it, so a bot created 40 s ahead is due
 * about a second later; where a test needs a time already past (a server that was down), it
 * writes the bot's join_at through its own database handle, as the server would have found it.
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A data dir (and so a database: the SQLite file in it, or the PostgreSQL database named after
 * it) that outlives the servers started on it; removed after the test.
 */
async function sharedDataDir(): Promise<string> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-schedule-"));
  cleanups.push(async () => {
    await rm(dataDir, { recursive: true, force: true });
    await (await testDatabaseFor(dataDir))?.drop();
  });
  return dataDir;
}

/** A server on `dataDir` whose schedule polls fast; `leadMs` 0: a bot 40 s ahead is not due during a test. */
async function scheduleServer(dataDir: string, opts: { leadMs?: number; graceMs?: number } = {}) {
  const server = await startTestServer({
    dataDir,
    rateLimit: { perMinute: 0, perHour: 0 },
    // Nothing here is about deliveries: they stay queued, for the test to read.
    webhooks: { worker: false },
    schedule: {
      leadMs: opts.leadMs ?? 0,
      ...(opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}),
      pollIntervalMs: 20,
      worker: true,
    },
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= server.close());
  cleanups.push(close);
  return { ...server, close };
}

/** A joinAt `ms` from now, as the API takes it. */
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

async function createBot(server: TestServer, user: TestUser, extra: Record<string, unknown> = {}) {
  return server.api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, meetingTitle: "Planning", botDisplayName: "Notetaker", ...extra },
  });
}

/** Polls the API until the bot leaves READY_TO_DEPLOY; its detail then. */
async function untilDeployedOrFailed(server: TestServer, user: TestUser, botId: number) {
  return vi.waitFor(
    async () => {
      const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
      if (bot.body.status === "READY_TO_DEPLOY") throw new Error(`bot ${botId} is still waiting`);
      return bot.body;
    },
    { timeout: 10_000, interval: 20 },
  );
}

async function withDb<T>(server: TestServer, use: (db: Db) => Promise<T>): Promise<T> {
  const db = await openServerDatabase(server);
  try {
    return await use(db);
  } finally {
    await db.close();
  }
}

// The file's server, for the tests of the API only: nothing is due, no worker deploys.
test.override("serverOptions", { schedule: { leadMs: 0, worker: false } });

describe("joinAt", () => {
  let server: TestServer;
  let user: TestUser;
  test.beforeAll(async ({ server: fileServer }) => {
    server = fileServer;
    user = await registerUser(server.api);
  });

  test("is checked: ISO 8601 UTC, 30 s to 90 days ahead, in the spec's validation shape", async () => {
    for (const joinAt of [
      inMs(10_000),
      new Date(Date.now() - 60_000).toISOString(),
      inMs(91 * 24 * 3600_000),
      "2030-01-01T10:00:00+02:00",
      "next tuesday",
    ]) {
      const res = await createBot(server, user, { joinAt });
      expect(res.status, joinAt).toBe(422);
      expect(validationIssues(res.body)[0]?.loc, joinAt).toEqual(["body", "joinAt"]);
    }
    const created = await createBot(server, user, { joinAt: inMs(40_000).replace(/\.\d+Z$/, "Z") });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "READY_TO_DEPLOY" });
    // Stored and shown in one form (milliseconds, Z).
    expect(created.body.joinAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
  });

  test("PATCH moves or removes the schedule; GET /v1/bots?scheduled=true lists the waiting ones, soonest first", async () => {
    const other = await registerUser(server.api);
    const late = (await createBot(server, other, { joinAt: inMs(3_600_000) })).body;
    const soon = (await createBot(server, other, { joinAt: inMs(120_000) })).body;
    const unscheduled = (await createBot(server, other)).body;
    const moved = (await createBot(server, other, { joinAt: inMs(7_200_000) })).body;
    const list = async () =>
      (await server.api.get("/v1/bots?scheduled=true", { token: other.token })).body.bots.map(
        (bot: { id: number }) => bot.id,
      );
    expect(await list()).toEqual([soon.id, late.id, moved.id]);

    const earlier = inMs(60_000);
    const patched = await server.api.patch(`/v1/bots/${moved.id}`, {
      token: other.token,
      body: { joinAt: earlier },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.joinAt).toBe(new Date(earlier).toISOString());
    expect(await list()).toEqual([moved.id, soon.id, late.id]);

    const tooSoon = await server.api.patch(`/v1/bots/${late.id}`, {
      token: other.token,
      body: { joinAt: inMs(1000) },
    });
    expect(tooSoon.status).toBe(422);
    expect(validationIssues(tooSoon.body)[0]?.loc).toEqual(["body", "joinAt"]);

    const removed = await server.api.patch(`/v1/bots/${late.id}`, {
      token: other.token,
      body: { joinAt: null },
    });
    expect(removed.body.joinAt).toBeNull();
    expect(await list()).toEqual([moved.id, soon.id]);

    // Deployed by hand before its time: deployed as today, and no longer waiting.
    const deployed = await server.api.post(`/v1/bots/${soon.id}/deploy`, { token: other.token });
    expect(deployed.status).toBe(200);
    expect(await list()).toEqual([moved.id]);
    // DELETE cancels.
    expect((await server.api.delete(`/v1/bots/${moved.id}`, { token: other.token })).status).toBe(204);
    expect(await list()).toEqual([]);
    // Without the filter, every bot, newest first, as before.
    const all = (await server.api.get("/v1/bots", { token: other.token })).body.bots;
    expect(all.map((bot: { id: number }) => bot.id)).toEqual([unscheduled.id, soon.id, late.id]);
  });

  test("a claim is a lease: held until it runs out; a PATCH voids it", async () => {
    const bot = (await createBot(server, user, { joinAt: inMs(40_000) })).body;
    await withDb(server, async (db) => {
      const now = new Date();
      const claim = (at: Date) =>
        claimDueSchedules(db.kysely, db.dialect, {
          now: at,
          limit: 100,
          leadMs: 60_000,
          leaseMs: SCHEDULE_LEASE_MS,
        });
      const first = (await claim(now)).filter((c) => c.id === bot.id);
      expect(first).toHaveLength(1);
      expect((await claim(now)).map((c) => c.id)).not.toContain(bot.id);
      // Its process died: another takes it once the lease has run out.
      const later = new Date(now.getTime() + SCHEDULE_LEASE_MS);
      const again = (await claim(later)).filter((c) => c.id === bot.id);
      expect(again).toHaveLength(1);
      expect(again[0]!.schedule_claim_token).not.toBe(first[0]!.schedule_claim_token);
      // Moving the schedule voids the claim held on the old time.
      await server.api.patch(`/v1/bots/${bot.id}`, { token: user.token, body: { joinAt: inMs(50_000) } });
      const row = await db.kysely
        .selectFrom("bots")
        .select(["schedule_claim_token", "schedule_lease_until"])
        .where("id", "=", bot.id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ schedule_claim_token: null, schedule_lease_until: null });
      // A bot whose deploy time has not come is not claimed (a lead of 0, 50 s ahead).
      const notYet = await claimDueSchedules(db.kysely, db.dialect, {
        now: new Date(),
        limit: 100,
        leadMs: 0,
        leaseMs: SCHEDULE_LEASE_MS,
      });
      expect(notYet.map((c) => c.id)).not.toContain(bot.id);
    });
  });
});

describe("the server deploys a scheduled bot", () => {
  test("by itself, a lead before its joinAt, exactly as a deploy by hand; the bot joins within the lead", async () => {
    const leadMs = 39_000;
    const server = await scheduleServer(await sharedDataDir(), { leadMs });
    const user = await registerUser(server.api);
    const joinAt = inMs(40_000);
    const created = await createBot(server, user, { joinAt });
    expect(created.body.status).toBe("READY_TO_DEPLOY");
    const botId = created.body.id;

    const bot = await untilDeployedOrFailed(server, user, botId);
    expect(bot.status).toBe("DEPLOYING");
    expect(bot.joinAt).toBe(joinAt);
    const logs = (await server.api.get(`/v1/bots/${botId}/logs`, { token: user.token })).body;
    const started = defined(
      logs.find((log) => log.message.startsWith("deployment started")),
      "the deployment log",
    );
    expect(started.message).toBe(`deployment started by its schedule (to join at ${joinAt})`);
    expect(Date.parse(started.createdAt)).toBeGreaterThanOrEqual(Date.parse(joinAt) - leadMs);

    // The runner it was given is a runner like any other: it reports, and the bot is in the call.
    const runner = new FakeRunner(server.launcher.configFor(botId));
    expect((await runner.status("JOINING_CALL")).status).toBe(200);
    expect((await runner.status("IN_CALL")).status).toBe(200);
    const events = (await server.api.get(`/v1/bots/${botId}/events`, { token: user.token })).body;
    const joined = defined(
      events.find((event) => event.eventType === "BOT_JOINED"),
      "BOT_JOINED",
    );
    expect(Date.parse(joined.eventTime)).toBeLessThan(Date.parse(joinAt));
    // Deployed once, however many rounds the worker made since.
    expect(server.launcher.launched.filter((config) => config.botId === botId)).toHaveLength(1);
    expect((await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token })).status).toBe(409);
  });

  test("after a restart, from the schedule stored; one whose time passed longer than the grace ago fails SCHEDULE_MISSED", async () => {
    // The first server stores the schedules and stops before any is due.
    const dataDir = await sharedDataDir();
    const first = await scheduleServer(dataDir, { leadMs: 0 });
    const user = await registerUser(first.api);
    const hook = await first.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "errors", url: "https://example.com/hooks", events: ["bot.error"] },
    });
    expect(hook.status).toBe(201);
    const onTime = (await createBot(first, user, { joinAt: inMs(40_000) })).body.id;
    const late = (await createBot(first, user, { joinAt: inMs(40_000) })).body.id;
    const missed = (await createBot(first, user, { joinAt: inMs(40_000) })).body.id;
    await first.close();
    // While no server ran, `late` became 1 min late and `missed` 10 min (the grace is 5 min).
    await withDb(first, async (db) => {
      const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
      await db.kysely
        .updateTable("bots")
        .set({ join_at: ago(60_000) })
        .where("id", "=", late)
        .execute();
      await db.kysely
        .updateTable("bots")
        .set({ join_at: ago(600_000) })
        .where("id", "=", missed)
        .execute();
    });

    const second = await scheduleServer(dataDir, { leadMs: 39_000, graceMs: 300_000 });
    const get = (id: number) => untilDeployedOrFailed(second, user, id);
    expect((await get(onTime)).status).toBe("DEPLOYING");
    const lateBot = await get(late);
    expect(lateBot.status, JSON.stringify(lateBot.deploymentError)).toBe("DEPLOYING");
    const failed = await get(missed);
    expect(failed.status).toBe("FATAL");
    expect(failed.deploymentError).toMatchObject({ code: "SCHEDULE_MISSED" });
    expect(defined(failed.deploymentError, "deploymentError").message).toContain("no server could deploy it");
    expect(second.launcher.launched.map((config) => config.botId).sort()).toEqual([onTime, late].sort());
    const events = (await second.api.get(`/v1/bots/${missed}/events`, { token: user.token })).body;
    expect(events.map((event: { eventType: string }) => event.eventType)).toEqual(["ERROR"]);
    expect(events[0]?.data).toMatchObject({ code: "SCHEDULE_MISSED" });
    await withDb(second, async (db) => {
      const queued = await db.kysely
        .selectFrom("webhook_deliveries")
        .select(["event", "payload"])
        .where("bot_id", "=", missed)
        .execute();
      expect(queued.map((row) => row.event)).toEqual(["bot.error"]);
      expect(JSON.parse(queued[0]!.payload).data).toMatchObject({ code: "SCHEDULE_MISSED" });
    });
  });

  test("once, with two server processes on one database", async () => {
    // Two processes on one database (SQLite file or PostgreSQL), both polling every 20 ms; the
    // bots come due about a second after they are created, while both are looking.
    const dataDir = await sharedDataDir();
    const one = await scheduleServer(dataDir, { leadMs: 39_000 });
    const two = await scheduleServer(dataDir, { leadMs: 39_000 });
    const user = await registerUser(one.api);
    const ids: number[] = [];
    for (let i = 0; i < 8; i++) ids.push((await createBot(one, user, { joinAt: inMs(40_000) })).body.id);
    for (const id of ids) expect((await untilDeployedOrFailed(one, user, id)).status).toBe("DEPLOYING");
    const launched = [...one.launcher.launched, ...two.launcher.launched].map((config) => config.botId);
    expect(launched.sort((x, y) => x - y)).toEqual(ids);
  });
});
