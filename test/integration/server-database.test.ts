import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import {
  type DatabaseOptions,
  type Db,
  isUniqueViolation,
  openDatabase,
} from "../../src/server/db/database.js";
import { migrateToLatest, migrations } from "../../src/server/db/migrations.js";
import { lockBot } from "../../src/server/services/bot-state.js";
import { scratchDatabase, testDialect } from "../helpers/postgres.js";
import { StartupError } from "../../src/server/startup-error.js";
import { startServer } from "../../src/server/main.js";
import { deployedBot, TEST_MEETING } from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * What the services rely on from either database. This file runs on the suite's database: SQLite,
 * and PostgreSQL when `make test` runs the integration suite again under scripts/with-postgres.sh.
 */

let scratch: { options: DatabaseOptions; dispose(): Promise<void> };
let db: Db;
beforeAll(async () => {
  scratch = await scratchDatabase();
  db = await openDatabase(scratch.options);
});
afterAll(async () => {
  await db?.close();
  await scratch?.dispose();
});

test(`runs on the suite's database (${testDialect})`, () => {
  expect(db.dialect).toBe(testDialect);
});

const now = new Date().toISOString();
let emails = 0;
async function insertUser(email = `db-${++emails}@example.com`): Promise<number> {
  const row = await db.kysely
    .insertInto("users")
    .values({ email, name: "Db Test", password_hash: "x", created_at: now })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

async function insertBot(userId: number): Promise<number> {
  const row = await db.kysely
    .insertInto("bots")
    .values({
      user_id: userId,
      bot_display_name: "Notetaker",
      meeting_title: "Sync",
      status: "DEPLOYING",
      platform: "google",
      meeting_info: "{}",
      heartbeat_interval: 5000,
      automatic_leave: "{}",
      created_at: now,
      updated_at: now,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

describe("migrations", () => {
  test("apply once: migrating again and reopening change neither schema nor data", async () => {
    const tables = async (d: Db) =>
      (await d.kysely.introspection.getTables())
        .map((t) => `${t.name}(${t.columns.map((c) => c.name).join(",")})`)
        .sort();
    const userId = await insertUser();
    const before = await tables(db);
    expect(before.map((t) => t.split("(")[0])).toEqual(
      expect.arrayContaining(["users", "bots", "recordings", "api_keys", "user_identities"]),
    );

    await migrateToLatest(db.kysely, db.dialect);
    const again = await openDatabase(scratch.options);
    try {
      expect(await tables(again)).toEqual(before);
      const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
        again.kysely,
      );
      expect(applied.rows.map((r) => r.name)).toEqual(Object.keys(migrations(db.dialect)).sort());
      const user = await again.kysely
        .selectFrom("users")
        .select("id")
        .where("id", "=", userId)
        .executeTakeFirst();
      expect(user).toEqual({ id: userId });
    } finally {
      await again.close();
    }
  });
});

describe("values come back as the services expect", () => {
  test("counts, sums, averages, bigint sizes and real latencies are JS numbers", async () => {
    const userId = await insertUser();
    const botId = await insertBot(userId);
    const size = 6_000_000_123; // past 32 bits: size_bytes is a bigint column
    await db.kysely
      .insertInto("recordings")
      .values({ bot_id: botId, format: "mp4", size_bytes: size, duration_ms: 1500, created_at: now })
      .execute();
    for (const latency of [1.5, 2.5]) {
      await db.kysely
        .insertInto("api_request_logs")
        .values({
          user_id: userId,
          credential_kind: "access_token",
          method: "GET",
          path: "/v1/bots",
          route: "/v1/bots",
          status_code: 200,
          latency_ms: latency,
          created_at: now,
        })
        .execute();
    }

    const recording = await db.kysely
      .selectFrom("recordings")
      .select(["size_bytes", "duration_ms"])
      .where("bot_id", "=", botId)
      .executeTakeFirstOrThrow();
    expect(recording).toStrictEqual({ size_bytes: size, duration_ms: 1500 });

    const stats = await db.kysely
      .selectFrom("api_request_logs")
      .where("user_id", "=", userId)
      .select((eb) => [
        eb.fn.countAll().as("requests"),
        eb.fn.sum("status_code").as("status_sum"),
        eb.fn.avg("latency_ms").as("latency_avg"),
        eb.fn.max("latency_ms").as("latency_max"),
      ])
      .executeTakeFirstOrThrow();
    expect(stats).toStrictEqual({ requests: 2, status_sum: 400, latency_avg: 2, latency_max: 2.5 });

    const sizes = await db.kysely
      .selectFrom("recordings")
      .where("bot_id", "=", botId)
      .select((eb) => [eb.fn.sum("size_bytes").as("total"), eb.fn.count("bot_id").as("n")])
      .executeTakeFirstOrThrow();
    expect(sizes).toStrictEqual({ total: size, n: 1 });
  });
});

describe("constraint violations", () => {
  test("a unique or primary key violation is recognised the same way; other violations are not", async () => {
    const caught = async (work: Promise<unknown>) => {
      try {
        await work;
      } catch (err) {
        return err;
      }
      throw new Error("expected the statement to fail");
    };
    await insertUser("dup@example.com");
    expect(isUniqueViolation(await caught(insertUser("dup@example.com")))).toBe(true);

    const botId = await insertBot(await insertUser());
    const receipt = { bot_id: botId, seq: 1, event_type: "status", received_at: now };
    await db.kysely.insertInto("callback_receipts").values(receipt).execute();
    const again = db.kysely.insertInto("callback_receipts").values(receipt).execute();
    expect(isUniqueViolation(await caught(again))).toBe(true);

    const orphan = db.kysely
      .insertInto("callback_receipts")
      .values({ ...receipt, bot_id: 2_000_000_000 })
      .execute();
    expect(isUniqueViolation(await caught(orphan))).toBe(false); // a foreign key violation
  });
});

describe("lockBot", () => {
  let released: (() => void) | undefined;
  afterEach(() => released?.()); // never leave a transaction hanging on a failed assertion

  test("makes a second transaction on the same bot wait for the first, then read its write", async () => {
    const botId = await insertBot(await insertUser());
    const order: string[] = [];
    const gate = new Promise<void>((resolve) => (released = resolve));
    let locked!: () => void;
    const hasLock = new Promise<void>((resolve) => (locked = resolve));

    const first = db.kysely.transaction().execute(async (trx) => {
      await lockBot(trx, db.dialect, botId);
      locked();
      await gate;
      await trx.updateTable("bots").set({ status: "JOINING_CALL" }).where("id", "=", botId).execute();
      order.push("first wrote JOINING_CALL");
    });
    await hasLock;
    const second = db.kysely.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, db.dialect, botId);
      order.push(`second read ${bot?.status}`);
    });
    await secondIsWaiting();
    expect(order).toEqual([]);
    released?.();
    await Promise.all([first, second]);
    expect(order).toEqual(["first wrote JOINING_CALL", "second read JOINING_CALL"]);
  });

  /**
   * PostgreSQL: the second transaction's SELECT ... FOR UPDATE is seen blocked on the row lock.
   * SQLite has one connection and runs one transaction at a time: the second cannot even begin.
   */
  async function secondIsWaiting(): Promise<void> {
    if (db.dialect === "sqlite") return new Promise((resolve) => setTimeout(resolve, 50));
    const waiting = async () => {
      const { rows } = await sql<{ waiting: number }>`
        select count(*) as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`.execute(db.kysely);
      return rows[0]?.waiting;
    };
    await expect
      .poll(waiting, { interval: 10, message: "the second transaction waits for the row lock" })
      .toBe(1);
  }
});

describe("through the API", () => {
  test("concurrent copies of one runner event are applied exactly once", async ({ server, user }) => {
    const { botId, runner } = await deployedBot(server, user);
    const event = {
      seq: 1,
      type: "participant.joined",
      eventTime: now,
      data: { participantId: "p1", participantName: "Alice" },
    };
    const answers = await Promise.all(Array.from({ length: 8 }, () => runner.sendRaw(event)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.filter((a) => a.body.applied === true)).toHaveLength(1);
    const events = await server.api.get(`/v1/bots/${botId}/events`, { token: user.token });
    expect(
      events.body.filter((e: { eventType: string }) => e.eventType === "PARTICIPANT_JOINED"),
    ).toHaveLength(1);
  });

  test("a second registration of an e-mail is 409 however it races", async ({ server }) => {
    const body = { email: `race-${Date.now()}@example.com`, password: "correct horse battery", name: "R" };
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => server.api.post("/v1/auth/register", { body })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
  });
});

describe("values PostgreSQL cannot store", () => {
  // SQLite stores a NUL character and 64-bit integers; PostgreSQL's text and integer columns
  // refuse them. Either way such input is the client's mistake: never a 5xx.
  test("an id past 32 bits, a seq past 32 bits and NUL characters are never a 5xx", async ({
    server,
    user,
  }) => {
    const { token } = user;
    const { runner } = await deployedBot(server, user);
    const huge = 99_999_999_999;
    const answers = {
      bot: await server.api.get(`/v1/bots/${huge}`, { token }),
      recording: await server.api.get(`/v1/recordings/${huge}`, { token }),
      eventsOfBot: await server.api.get(`/v1/events?bot_id=${huge}`, { token }),
      callback: await server.api.post(`/v1/bot-callbacks/${huge}/event`, { token: "x", body: {} }),
      seq: await runner.sendRaw({
        seq: huge,
        type: "log",
        eventTime: now,
        data: { level: "info", message: "late" },
      }),
      logWithNul: await runner.send({ type: "log", data: { level: "info", message: "a\u0000b" } }),
      loginWithNul: await server.api.post("/v1/auth/login", {
        body: { email: "a\u0000@example.com", password: "12345678" },
      }),
      botWithNul: await server.api.post("/v1/bots", {
        token,
        body: { meetingInfo: TEST_MEETING, meetingTitle: "a\u0000b", botDisplayName: "Notetaker" },
      }),
    };
    const serverErrors = Object.entries(answers).filter(([, res]) => res.status >= 500);
    expect(serverErrors.map(([name, res]) => `${name}: ${res.status}`)).toEqual([]);
  });
});

describe("startup", () => {
  /** A loopback port nothing listens on: connecting to it is refused at once. */
  async function closedPort(): Promise<number> {
    const server = createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-startup-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  test("an unreachable PostgreSQL is a StartupError naming where and why, never the password", async () => {
    const port = await closedPort();
    const databaseUrl = `postgres://meetbot:s3cret-pw@127.0.0.1:${port}/meetbot`;
    const failure = await startServer({ port: 0, dataDir, databaseUrl, logLevel: "silent" }).catch((e) => e);
    expect(failure).toBeInstanceOf(StartupError);
    expect(failure.message).toBe(
      `cannot connect to PostgreSQL at 127.0.0.1:${port}/meetbot: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  test("a DATABASE_URL that is not postgres:// is refused", async () => {
    const failure = await startServer({ port: 0, dataDir, databaseUrl: "mysql://db/meetbot" }).catch(
      (e) => e,
    );
    expect(failure).toBeInstanceOf(StartupError);
    expect(failure.message).toMatch(/^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//);
  });

  test("meetbot serve exits 1 with the reason on one line, no stack trace", async () => {
    const port = await closedPort();
    const failure = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/cli.ts", "serve", "--port", "0", "--data-dir", dataDir],
      { env: { ...process.env, DATABASE_URL: `postgresql://u:pw@127.0.0.1:${port}/db` }, timeout: 30_000 },
    ).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect(failure).toMatchObject({ code: 1, stdout: "" });
    expect((failure as { stderr: string }).stderr).toBe(
      `meetbot serve: cannot connect to PostgreSQL at 127.0.0.1:${port}/db: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    );
  });
});
