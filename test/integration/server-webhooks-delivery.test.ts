import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, describe } from "vitest";
import type { Db } from "../../src/server/db/database.js";
import { OutboundClient } from "../../src/server/webhooks/outbound.js";
import { enqueueWebhookEvents } from "../../src/server/webhooks/outbox.js";
import { attemptLeaseMs, claimDueDeliveries } from "../../src/server/webhooks/queue.js";
import { WebhookWorker } from "../../src/server/webhooks/worker.js";
import { testDialect } from "../helpers/postgres.js";
import {
  Api,
  deployedBot,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The delivery machinery with the clock in the test's hand: the server queues deliveries (its own
 * worker is off), and workers built here from the real code, on their own connections to the
 * server's database, send them when the test calls runDue() at the time the test has set.
 */

/** A clock that moves only when told to. */
class ManualClock {
  constructor(private ms: number) {}
  now = (): Date => new Date(this.ms);
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

const WORKER_OFF = {
  rateLimit: { perMinute: 0, perHour: 0 },
  outbound: { allowPrivateTargets: true },
  webhooks: { worker: false },
};
const LEASE_MS = 60_000;

let server: TestServer;
let receiver: WebhookReceiver;
let clock: ManualClock;
const cleanups: (() => Promise<unknown>)[] = [];
test.override("serverOptions", WORKER_OFF);
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  // Just ahead of the server's real clock, so that what it queues is due; then moved by hand.
  clock = new ManualClock(Date.now() + 1000);
  receiver = await new WebhookReceiver(clock.now).start();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await receiver?.close();
});

interface TestWorker {
  worker: WebhookWorker;
  db: Db;
  /** Stops the worker and closes its own connection; once. */
  close(): Promise<void>;
}

/** A worker over its own connection to `target`'s database (or over `db`), with small timeouts. */
async function testWorker(
  opts: {
    target?: TestServer;
    db?: Db;
    allowPrivateTargets?: boolean;
    responseTimeoutMs?: number;
    retentionMs?: number;
  } = {},
): Promise<TestWorker> {
  const db = opts.db ?? (await openServerDatabase(opts.target ?? server));
  const worker = new WebhookWorker({
    db: db.kysely,
    dialect: db.dialect,
    now: clock.now,
    log: pino({ level: "silent" }),
    outbound: new OutboundClient({
      allowPrivateTargets: opts.allowPrivateTargets ?? true,
      connectTimeoutMs: 1000,
      responseTimeoutMs: opts.responseTimeoutMs ?? 2000,
    }),
    concurrency: 8,
    pollIntervalMs: 50,
    leaseMs: LEASE_MS,
    stopGraceMs: 100,
    ...(opts.retentionMs ? { retentionMs: opts.retentionMs } : {}),
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await worker.stop();
      if (!opts.db) await db.close();
    })());
  cleanups.push(close);
  return { worker, db, close };
}

let paths = 0;
async function createWebhook(target: TestServer, owner: TestUser, events: string[] = ["bot.deploying"]) {
  const hookPath = `/d-${++paths}`;
  const res = await target.api.post("/v1/webhooks", {
    token: owner.token,
    body: { name: hookPath, url: receiver.endpoint(hookPath), events },
  });
  if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${JSON.stringify(res.body)}`);
  receiver.setSecret(hookPath, res.body.secret);
  // Its queue goes with it: nothing a test leaves queued comes due in the next one.
  cleanups.push(() =>
    target.api.delete(`/v1/webhooks/${res.body.id}`, { token: owner.token }).catch(() => {}),
  );
  return { id: res.body.id, path: hookPath };
}

async function deliveriesOf(target: TestServer, owner: TestUser, webhookId: number) {
  const res = await target.api.get(`/v1/webhooks/${webhookId}/deliveries?page_size=100`, {
    token: owner.token,
  });
  expect(res.status).toBe(200);
  return res.body.deliveries;
}

async function detailOf(owner: TestUser, webhookId: number, deliveryId: number) {
  return (await server.api.get(`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`, { token: owner.token }))
    .body;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

describe("the retry schedule", () => {
  test("retries 30 s, 1 min and 2 min after each failure, then delivers; every attempt is recorded and freshly signed", async () => {
    const { worker } = await testWorker();
    const owner = await registerUser(server.api);
    const hook = await createWebhook(server, owner);
    receiver.on(hook.path, (n) =>
      n <= 3 ? { status: 500, body: `down ${n}` } : { status: 200, body: "ok" },
    );
    await deployedBot(server, owner);
    const t0 = clock.now().getTime();

    expect(await worker.runDue()).toBe(1);
    let [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({
      status: "pending",
      attempt: 1,
      statusCode: 500,
      error: "bad_status",
      responseBody: "down 1",
      lastAttemptAt: new Date(t0).toISOString(),
      nextAttemptAt: new Date(t0 + 30_000).toISOString(),
    });

    const steps = [
      { at: 30_000, next: 90_000 },
      { at: 90_000, next: 210_000 },
    ];
    for (const { at, next } of steps) {
      clock.set(t0 + at - 1);
      expect(await worker.runDue()).toBe(0); // not a millisecond early
      clock.set(t0 + at);
      expect(await worker.runDue()).toBe(1);
      [delivery] = await deliveriesOf(server, owner, hook.id);
      expect(delivery).toMatchObject({ status: "pending", nextAttemptAt: new Date(t0 + next).toISOString() });
    }
    clock.set(t0 + 210_000);
    expect(await worker.runDue()).toBe(1);
    [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({ status: "succeeded", attempt: 4, statusCode: 200, nextAttemptAt: null });

    const detail = await detailOf(owner, hook.id, delivery!.id);
    expect(detail.attempts.map((a) => [a.attempt, a.statusCode, Date.parse(a.attemptedAt) - t0])).toEqual([
      [1, 500, 0],
      [2, 500, 30_000],
      [3, 500, 90_000],
      [4, 200, 210_000],
    ]);
    const got = receiver.at(hook.path);
    expect(got.map((d) => d.verification.ok)).toEqual([true, true, true, true]);
    expect(new Set(got.map((d) => d.headers["x-webhook-id"]))).toEqual(new Set([delivery!.deliveryId]));
    expect(new Set(got.map((d) => d.rawBody)).size).toBe(1);
    // Each attempt is signed at its own time, so the signature stays within the receivers' 5 minutes.
    expect(got.map((d) => Number(d.headers["x-webhook-timestamp"]))).toEqual(
      [0, 30_000, 90_000, 210_000].map((offset) => seconds(t0 + offset)),
    );
  });

  test("after the fifth retry fails the delivery is failed, and a redelivery starts a fresh schedule", async () => {
    const { worker } = await testWorker();
    const owner = await registerUser(server.api);
    const hook = await createWebhook(server, owner);
    receiver.on(hook.path, () => ({ status: 502 }));
    await deployedBot(server, owner);
    const t0 = clock.now().getTime();
    // 1 attempt, then 5 retries: 30 s, 1 m, 2 m, 4 m, 8 m after each failure (spec §6's table).
    for (const at of [0, 30_000, 90_000, 210_000, 450_000, 930_000]) {
      clock.set(t0 + at);
      expect(await worker.runDue(), `attempt at ${at / 1000} s`).toBe(1);
    }
    let [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({ status: "failed", attempt: 6, statusCode: 502, nextAttemptAt: null });
    clock.advance(24 * 3_600_000);
    expect(await worker.runDue()).toBe(0);
    expect(receiver.at(hook.path)).toHaveLength(6);

    const redeliver = await server.api.post(`/v1/webhooks/${hook.id}/deliveries/${delivery!.id}/redeliver`, {
      token: owner.token,
    });
    expect(redeliver.status).toBe(202);
    expect(redeliver.body).toMatchObject({ status: "pending", attempt: 6 });
    // Due at once by the server's clock, which is behind this one: the worker sends it now.
    expect(await worker.runDue()).toBe(1);
    [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({
      status: "pending",
      attempt: 7,
      nextAttemptAt: new Date(clock.now().getTime() + 30_000).toISOString(),
    });
    expect(receiver.at(hook.path)).toHaveLength(7);
  });

  test("counts a receiver that does not answer in time as a failure (response_timeout)", async () => {
    const { worker } = await testWorker({ responseTimeoutMs: 300 });
    const owner = await registerUser(server.api);
    const hook = await createWebhook(server, owner);
    receiver.on(hook.path, () => ({ hang: true }));
    await deployedBot(server, owner);
    expect(await worker.runDue()).toBe(1);
    const [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({
      status: "pending",
      attempt: 1,
      statusCode: null,
      error: "response_timeout",
    });
    expect(receiver.at(hook.path)).toHaveLength(1);
  });
});

describe("retention", () => {
  test("deletes finished deliveries and their attempts after the retention period; pending ones stay", async () => {
    const DAY = 24 * 60 * 60 * 1000;
    const { worker, db } = await testWorker({ retentionMs: 10 * DAY });
    const owner = await registerUser(server.api);
    const done = await createWebhook(server, owner);
    const failing = await createWebhook(server, owner);
    receiver.on(failing.path, () => ({ status: 503 }));
    await deployedBot(server, owner);
    const t0 = clock.now().getTime();
    expect(await worker.runDue()).toBe(2);
    const [succeeded] = await deliveriesOf(server, owner, done.id);
    expect(succeeded?.status).toBe("succeeded");
    expect((await deliveriesOf(server, owner, failing.id)).map((d) => d.status)).toEqual(["pending"]);

    clock.set(t0 + 10 * DAY - 1);
    expect(await worker.prune()).toBe(0);
    clock.set(t0 + 10 * DAY + 1);
    expect(await worker.prune()).toBe(1);
    expect(await deliveriesOf(server, owner, done.id)).toEqual([]);
    expect((await deliveriesOf(server, owner, failing.id)).map((d) => d.status)).toEqual(["pending"]);
    const attempts = await db.kysely
      .selectFrom("webhook_delivery_attempts")
      .select("id")
      .where("delivery_id", "=", succeeded!.id)
      .execute();
    expect(attempts).toEqual([]);
  });
});

describe("durability", () => {
  test("loses nothing and sends nothing twice across a server restart in the middle of the schedule", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-restart-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const first = await startTestServer({ ...WORKER_OFF, dataDir });
    cleanups.push(() => first.close());
    const owner = await registerUser(first.api);
    const hook = await createWebhook(first, owner);
    receiver.on(hook.path, (n) => (n <= 2 ? { status: 500 } : { status: 200 }));
    await deployedBot(first, owner);
    const t0 = clock.now().getTime();

    const before = await testWorker({ target: first });
    expect(await before.worker.runDue()).toBe(1);
    clock.set(t0 + 30_000);
    expect(await before.worker.runDue()).toBe(1);
    await before.close();
    await first.close();

    const second = await startTestServer({ ...WORKER_OFF, dataDir });
    cleanups.push(() => second.close());
    const after = await testWorker({ target: second });
    clock.set(t0 + 89_999);
    expect(await after.worker.runDue()).toBe(0);
    clock.set(t0 + 90_000);
    expect(await after.worker.runDue()).toBe(1);
    clock.advance(3_600_000);
    expect(await after.worker.runDue()).toBe(0);

    const [delivery] = await deliveriesOf(second, owner, hook.id);
    expect(delivery).toMatchObject({ status: "succeeded", attempt: 3 });
    const got = receiver.at(hook.path);
    expect(got).toHaveLength(3);
    expect(new Set(got.map((d) => d.headers["x-webhook-id"]))).toEqual(new Set([delivery!.deliveryId]));
  });

  test("a claim left by a worker that died is taken over once its lease runs out, and sent once", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(server, owner);
    await deployedBot(server, owner);
    const dead = await testWorker();
    // What a worker leaves behind when it dies between claiming and recording.
    const claimed = await claimDueDeliveries(dead.db.kysely, dead.db.dialect, {
      now: clock.now(),
      limit: 10,
      leaseMs: LEASE_MS,
    });
    expect(claimed.map((d) => d.webhook_id)).toContain(hook.id);
    const [inFlight] = await deliveriesOf(server, owner, hook.id);
    expect(inFlight?.status).toBe("sending");

    const { worker } = await testWorker();
    expect(await worker.runDue()).toBe(0);
    expect(receiver.at(hook.path)).toEqual([]);
    clock.advance(LEASE_MS);
    expect(await worker.runDue()).toBeGreaterThanOrEqual(1);
    expect(await worker.runDue()).toBe(0);
    expect(receiver.at(hook.path)).toHaveLength(1);
    const [delivery] = await deliveriesOf(server, owner, hook.id);
    expect(delivery).toMatchObject({ status: "succeeded", attempt: 1 });
  });

  test("leaves no delivery behind when the transaction of its event fails", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(server, owner, ["*"]);
    const { botId } = await deployedBot(server, owner);
    const { db } = await testWorker();
    const bot = await db.kysely
      .selectFrom("bots")
      .selectAll()
      .where("id", "=", botId)
      .executeTakeFirstOrThrow();
    const queuedBefore = (await deliveriesOf(server, owner, hook.id)).length;
    const failing = db.kysely.transaction().execute(async (trx) => {
      const now = clock.now().toISOString();
      const queued = await enqueueWebhookEvents(trx, bot, [{ event: "bot.joining", data: {} }], now, now);
      expect(queued).toBe(1);
      throw new Error("the event's own write failed");
    });
    await expect(failing).rejects.toThrow("the event's own write failed");
    expect(await deliveriesOf(server, owner, hook.id)).toHaveLength(queuedBefore);
  });
});

describe("endpoints", () => {
  test("a hanging endpoint holds one slot; other endpoints' deliveries go on meanwhile", async () => {
    const { worker } = await testWorker({ responseTimeoutMs: 30_000 });
    const owner = await registerUser(server.api);
    const slow = await createWebhook(server, owner);
    const fast = await createWebhook(server, owner);
    receiver.on(slow.path, () => ({ hang: true }));
    await deployedBot(server, owner);
    await deployedBot(server, owner);
    worker.start();
    await receiver.waitFor(() => receiver.at(fast.path).length === 2);
    // Both of the fast endpoint's deliveries arrived while the slow one's first is still open,
    // and the slow endpoint's second delivery waits behind its first.
    expect(receiver.inFlight.get(slow.path)).toBe(1);
    expect(receiver.at(slow.path)).toHaveLength(1);
    await worker.stop();
    // The abandoned attempt was not recorded: its lease runs out and it is sent again later.
    const slowLog = await deliveriesOf(server, owner, slow.id);
    expect(slowLog.map((d) => [d.status, d.attempt])).toEqual([
      ["pending", 0],
      ["sending", 0],
    ]);
  });

  test("refuses a private target at connect time in production mode: failed with refused_target, nothing reached", async () => {
    const guarded = await new WebhookReceiver(clock.now).start();
    cleanups.push(() => guarded.close());
    // Saved while private targets were allowed; sent by a worker in production mode.
    const { worker } = await testWorker({ allowPrivateTargets: false });
    const owner = await registerUser(server.api);
    const res = await server.api.post("/v1/webhooks", {
      token: owner.token,
      body: { name: "internal", url: guarded.endpoint("/internal"), events: ["bot.deploying"] },
    });
    expect(res.status).toBe(201);
    cleanups.push(() => server.api.delete(`/v1/webhooks/${res.body.id}`, { token: owner.token }));
    await deployedBot(server, owner);
    const t0 = clock.now().getTime();
    for (const at of [0, 30_000, 90_000, 210_000, 450_000, 930_000]) {
      clock.set(t0 + at);
      expect(await worker.runDue()).toBe(1);
    }
    const [delivery] = await deliveriesOf(server, owner, res.body.id);
    expect(delivery).toMatchObject({
      status: "failed",
      attempt: 6,
      statusCode: null,
      error: "refused_target",
    });
    expect(guarded.connections).toBe(0);
    expect(guarded.received).toEqual([]);
  });

  test("workers racing over the same queue send every delivery exactly once, in order per endpoint", async () => {
    // PostgreSQL: one pool each, claims with FOR UPDATE SKIP LOCKED. SQLite has one writer per
    // process, so there the workers share one connection (the race is then only between them).
    const first = await testWorker();
    const workers = [first];
    for (let i = 1; i < 4; i++)
      workers.push(testDialect === "postgres" ? await testWorker() : await testWorker({ db: first.db }));
    const owner = await registerUser(server.api);
    const hooks = [];
    for (let i = 0; i < 8; i++) hooks.push(await createWebhook(server, owner, ["*"]));
    receiver.delay(3); // lets requests to one endpoint overlap if the workers ever allowed it
    // Several rounds: each is a fresh start of all workers at once on a full queue.
    const rounds = 4;
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < 2; i++) {
        const { runner } = await deployedBot(server, owner);
        await runner.status("JOINING_CALL");
        await runner.status("IN_CALL");
      }
      const sent = await Promise.all(workers.map((w) => w.worker.runDue()));
      expect(
        sent.reduce((a, b) => a + b, 0),
        `round ${round}`,
      ).toBe(hooks.length * 2 * 3);
    }
    receiver.delay(0);
    const total = hooks.length * 2 * 3 * rounds;
    const ids = hooks.flatMap((h) => receiver.at(h.path).map((d) => d.headers["x-webhook-id"]));
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    for (const hook of hooks) {
      const log = await deliveriesOf(server, owner, hook.id);
      expect(log.every((d) => d.status === "succeeded" && d.attempt === 1)).toBe(true);
      // Arrival order is queue order (the log is newest first).
      expect(receiver.at(hook.path).map((d) => d.headers["x-webhook-id"])).toEqual(
        log.map((d) => d.deliveryId).reverse(),
      );
      expect(receiver.maxInFlight.get(hook.path)).toBe(1);
    }
  });
});

describe("a server that dies during POST /v1/webhooks/{id}/test", () => {
  test("holds the webhook's real deliveries no longer than a worker's claim; the test is then sent once more", async () => {
    clock.set(Date.now()); // the receiver checks the child's signatures, made on the real clock
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-test-crash-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env, MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1" };
    delete env.DATABASE_URL; // SQLite in dataDir, which the rest of the test opens too
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli.ts", "serve", "--port", "0", "--data-dir", dataDir],
      { env, stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    cleanups.push(async () => {
      child.kill("SIGKILL");
      await exited;
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = / on (http:\/\/\S+)/.exec(out);
        if (match) resolve(match[1] as string);
      });
      child.once("exit", (code) => reject(new Error(`meetbot serve exited ${code}`)));
    });
    const crashing = { api: new Api(url) } as TestServer;
    const owner = await registerUser(crashing.api);
    const hook = await createWebhook(crashing, owner);
    receiver.on(hook.path, (n) => (n === 1 ? { hang: true } : { status: 200 }));
    crashing.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token }).catch(() => {});
    await receiver.waitFor(() => receiver.at(hook.path).length === 1);
    child.kill("SIGKILL"); // mid-send: the test delivery stays "sending", its claim unreleased
    await exited;
    const crashedAt = Date.now();

    // The same data dir served again; a real delivery is queued behind the interrupted test.
    const again = await startTestServer({ ...WORKER_OFF, dataDir, databaseUrl: "" });
    cleanups.push(() => again.close());
    await deployedBot(again, owner);
    const { worker } = await testWorker({ target: again });
    clock.set(crashedAt + 5_000);
    expect(await worker.runDue()).toBe(0); // the claim holds the endpoint, as any claim does...
    // ...for as long as a worker's claim (the spec's 10 s connect and 30 s response timeouts).
    clock.set(crashedAt + attemptLeaseMs({ connectTimeoutMs: 10_000, responseTimeoutMs: 30_000 }));
    expect(await worker.runDue()).toBe(2); // the test once more, then the real delivery
    expect(receiver.at(hook.path).map((d) => d.event)).toEqual([
      "webhook.test",
      "webhook.test",
      "bot.deploying",
    ]);
    const log = await deliveriesOf(again, owner, hook.id);
    expect(log.map((d) => [d.event, d.status, d.attempt])).toEqual([
      ["bot.deploying", "succeeded", 1],
      ["webhook.test", "succeeded", 1],
    ]);
  });
});
