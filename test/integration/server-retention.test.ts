// Own servers, not the fixture: each test picks local or S3 storage and restarts a server on its data dir.
import { readdir } from "node:fs/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveConfig } from "../../src/server/config.js";
import type { Db } from "../../src/server/db/database.js";
import { claimDueDeletions, RETENTION_LEASE_MS } from "../../src/server/services/retention.js";
import { openStores, type Stores } from "../../src/server/storage/stores.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import {
  deployedBot,
  type FakeRunner,
  mp4Bytes,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  errorDetail,
} from "../helpers/server-harness.js";
import { alicesReport, storeCompletedContent } from "../helpers/stored-content.js";

/**
 * Retention and deletion on request (services/bot-data.ts, services/retention.ts) on real
 * servers, databases and storages: the local data dir and S3 (s3rver). A finished bot is given
 * every kind of meeting content there is; the test lists what is stored for it (rows and files),
 * lets the sweeper delete it, and proves each piece gone and that none comes back. Where it needs
 * a bot's retention to have run out, it writes the bot's data_expires_at through its own database
 * handle, as the server would find it hours later.
 */

const BUCKET = "meetbot-retention";
let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3Server([BUCKET]);
});
afterAll(async () => s3?.close());

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The tables that hold what a meeting produced, by bot. */
const CONTENT_TABLES = [
  "recordings",
  "recording_shares",
  "content_jobs",
  "transcripts",
  "summaries",
  "speaker_changes",
  "live_events",
  "live_utterances",
  "chat_messages",
  "bot_commands",
] as const;
/** Webhook deliveries whose payload is meeting content (said or written in it). */
const CONTENT_EVENTS = ["transcript.final", "chat.message", "summary.ready"];

interface Setup {
  server: TestServer;
  user: TestUser;
  db: Db;
  stores: Stores;
  dataDir: string;
  env: Record<string, string>;
}

/** A server on a data dir that outlives it (a restart finds it), sweeping every 50 ms. */
async function setUp(storage: "local" | "s3"): Promise<Setup> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-retention-"));
  cleanups.push(async () => {
    await rm(dataDir, { recursive: true, force: true });
    await (await testDatabaseFor(dataDir))?.drop();
  });
  const env = storage === "s3" ? s3.env(BUCKET) : {};
  const server = await start(dataDir, env);
  const db = await openServerDatabase(server);
  cleanups.push(() => db.close());
  const config = resolveConfig({ dataDir, env });
  const stores = await openStores(config.storage, config.paths);
  cleanups.push(async () => stores.close());
  return { server, user: await registerUser(server.api), db, stores, dataDir, env };
}

async function start(dataDir: string, env: Record<string, string>): Promise<TestServer> {
  const server = await startTestServer({
    dataDir,
    env: { ...process.env, ...env },
    rateLimit: { perMinute: 0, perHour: 0 },
    // Deliveries stay queued, for the test to read; no job runs on the stored transcript.
    webhooks: { worker: false },
    jobs: { worker: false },
    retention: { sweepIntervalMs: 50, worker: true },
  });
  cleanups.push(() => server.close());
  return server;
}

/**
 * A finished bot with every kind of content: a live transcript, the chat, a message the bot was
 * told to send, who spoke when, a failure artifact, a recording (its segments superseded by it),
 * a transcript and summary, a share link, and webhook deliveries that carry content.
 */
async function fullMeeting({ server, user, db }: Setup, retention: { hours: number }) {
  const hook = await server.api.post("/v1/webhooks", {
    token: user.token,
    body: { name: "all", url: "https://example.com/hooks", events: ["*"] },
  });
  expect(hook.status).toBe(201);
  const { botId, runner } = await deployedBot(server, user, {
    liveTranscript: { source: "captions" },
    retention,
  });
  const alice = { participantId: "p-1", name: "Alice Example" };
  const send = async (type: string, data: Record<string, unknown>) => {
    const res = await runner.send({ type, data } as Parameters<FakeRunner["send"]>[0]);
    expect(res.status, `${type} ${JSON.stringify(res.body)}`).toBe(200);
  };
  await send("status", { status: "JOINING_CALL" });
  await send("status", { status: "IN_CALL" });
  await send("recording.started", {
    width: 1280,
    height: 720,
    frameRate: 25,
    startedAt: new Date().toISOString(),
  });
  await send("participant.joined", { participantId: "p-1", participantName: "Alice Example" });
  await send("speaker.started", { participantId: "p-1", participantName: "Alice Example" });
  const line = { utteranceId: "u-1", speaker: alice, startMs: 100, endMs: 900, source: "captions" };
  await send("transcript.final", { ...line, text: "I will send the report tomorrow", language: "en" });
  await send("chat.message", {
    messageId: "m-1",
    sender: alice,
    text: "the report is due",
    sentAt: new Date().toISOString(),
    fromBot: false,
  });
  const told = await server.api.post(`/v1/bots/${botId}/chat`, {
    token: user.token,
    body: { text: "Notes are being taken" },
  });
  expect(told.status).toBe(202);
  await send("speaker.stopped", { participantId: "p-1", participantName: "Alice Example" });
  const artifact = await server.api.put(`/v1/bot-callbacks/${botId}/artifacts/failure.png`, {
    rawBody: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
    token: runner.config.callback.token,
    headers: { "content-type": "application/octet-stream" },
  });
  expect(artifact.status).toBe(201);
  expect((await runner.uploadSegment(0, mp4Bytes(2048))).status).toBe(201);
  await send("status", { status: "CALL_ENDED", subCode: "MEETING_ENDED" });
  expect((await runner.upload(mp4Bytes(4096), 2000)).status).toBe(201);
  await send("status", { status: "DONE" });
  // The live transcript's job (no worker runs here) makes way for a completed transcript and summary.
  await db.kysely.deleteFrom("content_jobs").where("bot_id", "=", botId).execute();
  const words = [{ text: "report", startMs: 100, endMs: 900, confidence: 0.9 }];
  await storeCompletedContent(db, botId, alicesReport({ participantId: "p-1", name: "Alice" }, words));
  const share = await server.api.post(`/v1/recordings/${botId}/share`, { token: user.token, body: {} });
  expect(share.status).toBe(201);
  return { botId, runner, share: share.body };
}

/** What is stored for the bot: rows per content table, content deliveries, and files. */
async function storedFor({ db, stores, dataDir, env }: Setup, botId: number) {
  const rows: Record<string, number> = {};
  for (const table of CONTENT_TABLES) {
    const { n } = await db.kysely
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as("n"))
      .where("bot_id", "=", botId)
      .executeTakeFirstOrThrow();
    rows[table] = Number(n);
  }
  const deliveries = await db.kysely
    .selectFrom("webhook_deliveries")
    .select("event")
    .where("bot_id", "=", botId)
    .execute();
  rows.contentDeliveries = deliveries.filter((d) => CONTENT_EVENTS.includes(d.event)).length;
  return { rows, files: await filesOf(stores, dataDir, env, botId) };
}

/** The bot's files: in the data dir (always: artifacts locally, clips, work dir) and the bucket. */
async function filesOf(stores: Stores, dataDir: string, env: Record<string, string>, botId: number) {
  const mine = new RegExp(`(^|/)(${botId}\\.mp4|${botId}/)`);
  const local = (await readdir(dataDir, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dataDir, path.join(entry.parentPath, entry.name)))
    .filter((file) => mine.test(file));
  const keys = env.MEETBOT_STORAGE === "s3" ? await s3Keys(stores) : [];
  return [...local, ...keys.filter((key) => mine.test(key)).map((key) => `s3:${key}`)].sort();
}

async function s3Keys(stores: Stores): Promise<string[]> {
  const bucket = (
    stores.recordings as unknown as { bucket: { keysUnder(prefix: string): Promise<string[]> } }
  ).bucket;
  return bucket.keysUnder("");
}

/** The data of the recording.deleted deliveries queued for the bot. */
async function deletionsSent(db: Db, botId: number): Promise<unknown[]> {
  const rows = await db.kysely
    .selectFrom("webhook_deliveries")
    .select("payload")
    .where("bot_id", "=", botId)
    .where("event", "=", "recording.deleted")
    .execute();
  return rows.map((row) => (JSON.parse(row.payload) as { data: unknown }).data);
}

async function untilNoFiles({ stores, dataDir, env }: Setup, botId: number): Promise<void> {
  await expect
    .poll(() => filesOf(stores, dataDir, env, botId), { timeout: 20_000, interval: 20 })
    .toEqual([]);
}

async function untilDataDeleted(server: TestServer, user: TestUser, botId: number) {
  return vi.waitFor(
    async () => {
      const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
      if (!bot.body.dataDeletedAt) throw new Error(`bot ${botId}'s data is not deleted yet`);
      return bot.body;
    },
    { timeout: 20_000, interval: 20 },
  );
}

describe.each(["local", "s3"] as const)("on %s storage", (storage) => {
  it("retention deletes every stored piece of a finished bot's meeting, keeps the bot and its events, and nothing comes back", async () => {
    const setup = await setUp(storage);
    const { server, user, db } = setup;
    const { botId, runner, share } = await fullMeeting(setup, { hours: 1 });

    const before = await storedFor(setup, botId);
    for (const table of CONTENT_TABLES) expect(before.rows[table], table).toBeGreaterThan(0);
    expect(before.rows.contentDeliveries).toBeGreaterThan(0);
    const where = storage === "s3" ? "s3:" : "";
    expect(before.files).toEqual(
      [`${where}recordings/${botId}.mp4`, `${where}bots/${botId}/artifacts/failure.png`].sort(),
    );
    const eventsBefore = (await server.api.get(`/v1/bots/${botId}/events`, { token: user.token })).body;
    const bot = (await server.api.get(`/v1/bots/${botId}`, { token: user.token })).body;
    expect(bot).toMatchObject({ retention: { hours: 1 }, dataDeletedAt: null });
    expect(bot.deploymentError).toBeNull();

    // An hour after it ended, as the sweeper will find it (its retention set from the bot's hours).
    const row = await db.kysely
      .selectFrom("bots")
      .select(["ended_at", "data_expires_at"])
      .where("id", "=", botId)
      .executeTakeFirstOrThrow();
    expect(Date.parse(row.data_expires_at!) - Date.parse(row.ended_at!)).toBe(3_600_000);
    await db.kysely
      .updateTable("bots")
      .set({ data_expires_at: new Date(Date.now() - 1000).toISOString() })
      .where("id", "=", botId)
      .execute();

    const after = await untilDataDeleted(server, user, botId);
    expect(after).toMatchObject({ status: "DONE", recording: null, retention: { hours: 1 } });
    // The rows went in one transaction; the files go right after it commits.
    await untilNoFiles(setup, botId);
    const gone = await storedFor(setup, botId);
    expect(gone.rows).toEqual(Object.fromEntries(Object.keys(before.rows).map((key) => [key, 0])));
    expect(gone.files).toEqual([]);
    // The bot's own record stays: its events, and a log line saying why its data went.
    expect((await server.api.get(`/v1/bots/${botId}/events`, { token: user.token })).body).toEqual(
      eventsBefore,
    );
    const logs = (await server.api.get(`/v1/bots/${botId}/logs`, { token: user.token })).body;
    expect(logs.map((log: { message: string }) => log.message)).toContain(
      "meeting data deleted (its retention ran out)",
    );
    expect(await deletionsSent(db, botId)).toEqual([{ botId, reason: "retention" }]);
    for (const route of ["", "/transcription", "/share", "/download"])
      expect((await server.api.get(`/v1/recordings/${botId}${route}`, { token: user.token })).status).toBe(
        404,
      );
    expect((await server.api.get(`/v1/transcripts/${botId}`, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`/v1/summaries/${botId}`, { token: user.token })).status).toBe(404);
    expect((await fetch(share.url, { headers: { accept: "application/json" } })).status).toBe(404);

    // Nothing comes back: not the runner's late uploads...
    expect((await runner.upload(mp4Bytes(4096), 2000)).status).toBe(401);
    expect((await runner.uploadSegment(1, mp4Bytes(2048))).status).toBe(401);
    // ...nor segments found on the storage when the server starts again: removed, not salvaged.
    await setup.stores.recordings.saveSegment(botId, 0, Readable.from([mp4Bytes(2048)]), 1 << 20);
    await server.close();
    const again = await start(setup.dataDir, setup.env);
    await untilNoFiles(setup, botId);
    expect((await again.api.get(`/v1/recordings/${botId}`, { token: user.token })).status).toBe(404);
    // The sweep does not take the bot again: one recording.deleted in all.
    expect(await deletionsSent(db, botId)).toHaveLength(1);
  });
});

describe("POST /v1/bots/{id}/delete-data", () => {
  it("deletes now, for the owner only, once the bot has ended; a runner winding down stores nothing more", async () => {
    const setup = await setUp("local");
    const { server, user, db } = setup;
    const hook = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "deletions", url: "https://example.com/hooks", events: ["recording.deleted"] },
    });
    expect(hook.status).toBe(201);
    const { botId, config, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await runner.uploadSegment(0, mp4Bytes(2048))).status).toBe(201);
    const url = `/v1/bots/${botId}/delete-data` as const;
    const running = await server.api.post(url, { token: user.token });
    expect(running.status).toBe(409);
    expect(errorDetail(running.body)).toContain("IN_CALL");
    const stranger = await registerUser(server.api, "Someone Else");
    expect((await server.api.post(url, { token: stranger.token })).status).toBe(404);
    // Killed: FATAL, while its runner may still be leaving and uploading for a while.
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);
    expect((await filesOf(setup.stores, setup.dataDir, setup.env, botId)).length).toBeGreaterThan(0);

    const deleted = await server.api.post(url, { token: user.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: botId, status: "FATAL", recording: null });
    expect(deleted.body.dataDeletedAt).toEqual(expect.any(String));
    // On request, the files are gone by the answer.
    expect(await filesOf(setup.stores, setup.dataDir, setup.env, botId)).toEqual([]);
    // The winding-down runner's segment, recording and chat are refused: its token ended.
    expect((await runner.uploadSegment(1, mp4Bytes(2048))).status).toBe(401);
    expect((await runner.upload(mp4Bytes(4096), 2000, { token: config.callback.token })).status).toBe(401);
    expect((await server.api.get(`/v1/recordings/${botId}`, { token: user.token })).status).toBe(404);
    // Again: the same answer, no second webhook.
    const again = await server.api.post(url, { token: user.token });
    expect(again.status).toBe(200);
    expect(again.body.dataDeletedAt).toBe(deleted.body.dataDeletedAt);
    expect(await deletionsSent(db, botId)).toEqual([{ botId, reason: "request" }]);
    expect((await server.api.post("/v1/bots/999999/delete-data", { token: user.token })).status).toBe(404);
  });
});

describe("the sweep's claim", () => {
  it("takes a bot by its own retention or, without one, the server's; once per lease; never one not ended or deleted", async () => {
    const setup = await setUp("local");
    const { server, db } = setup;
    await server.close(); // the test claims by hand, at times of its own
    const now = Date.now();
    const ago = (hours: number) => new Date(now - hours * 3_600_000).toISOString();
    const ids: Record<string, number> = {};
    const insert = async (name: string, values: Record<string, unknown>) => {
      const at = new Date(now).toISOString();
      const { id } = await db.kysely
        .insertInto("bots")
        .values({
          user_id: (await db.kysely.selectFrom("users").select("id").executeTakeFirstOrThrow()).id,
          bot_display_name: name,
          meeting_title: "",
          status: "DONE",
          platform: "google",
          meeting_info: "{}",
          heartbeat_interval: 5000,
          automatic_leave: "{}",
          created_at: at,
          updated_at: at,
          ...values,
        })
        .returning("id")
        .executeTakeFirstOrThrow();
      ids[name] = id;
    };
    await insert("own, expired", { retention_hours: 1, ended_at: ago(2), data_expires_at: ago(1) });
    await insert("own, not yet", { retention_hours: 48, ended_at: ago(25), data_expires_at: ago(-23) });
    await insert("server's, expired", { ended_at: ago(25) });
    await insert("server's, not yet", { ended_at: ago(23) });
    await insert("running", { status: "IN_CALL" });
    await insert("deleted", { ended_at: ago(30), data_deleted_at: ago(29) });
    const claim = (at: number, defaultHours: number | undefined) =>
      claimDueDeletions(db.kysely, db.dialect, {
        now: new Date(at),
        limit: 100,
        defaultHours,
        leaseMs: RETENTION_LEASE_MS,
      });
    const names = (claimed: { id: number }[]) =>
      claimed.map((c) => Object.keys(ids).find((name) => ids[name] === c.id)).sort();

    expect(names(await claim(now, undefined))).toEqual(["own, expired"]);
    expect(names(await claim(now, 24))).toEqual(["server's, expired"]); // the other is held
    expect(names(await claim(now + RETENTION_LEASE_MS, 24))).toEqual(["own, expired", "server's, expired"]);
  });
});
