import { connect, type Socket } from "node:net";
import { afterEach, describe, vi } from "vitest";
import {
  deployedBot,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  errorDetail,
} from "../helpers/server-harness.js";
import { StreamClient } from "../helpers/sse-client.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * GET /v1/events/stream over real HTTP: live delivery, resume, isolation between users, the
 * per-user limit, stalled clients, close, and events written by another server on the database.
 */

const NO_RATE_LIMIT = { rateLimit: { perMinute: 0, perHour: 0 } };
test.override("serverOptions", NO_RATE_LIMIT);

/** A client that sends the request, reads the first bytes of the answer (the stream is open) and no more. */
function stalledClient(server: TestServer, token: string, lastEventId: number): Promise<Socket> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(
        `GET /v1/events/stream HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n` +
          `Last-Event-ID: ${lastEventId}\r\n\r\n`,
      );
    });
    socket.once("data", () => {
      socket.pause();
      resolve(socket);
    });
    socket.on("error", () => {}); // reset when the server cuts it off
    socket.once("error", reject);
  });
}

/** Opens streams until one is allowed (the server frees a slot when it notices a closed one). */
function openWhenAllowed(server: TestServer, token: string): Promise<StreamClient> {
  return vi.waitFor(
    async () => {
      const client = await StreamClient.open(server.url, token);
      if (client.status !== 200) throw new Error(`stream answered ${client.status}, not yet 200`);
      return client;
    },
    { interval: 5, timeout: 10_000 },
  );
}

// Tests that need a stream setting of their own start a server of their own.
const servers: TestServer[] = [];
const clients: StreamClient[] = [];
const sockets: Socket[] = [];

async function ownServer(opts: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const started = await startTestServer({ ...NO_RATE_LIMIT, ...opts });
  servers.unshift(started);
  return started;
}

async function stream(
  target: TestServer,
  user: TestUser | undefined,
  headers: Record<string, string> = {},
  path?: string,
): Promise<StreamClient> {
  const client = await StreamClient.open(target.url, user?.token, headers, path);
  clients.push(client);
  return client;
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const s of servers.splice(0)) await s.close();
});

describe("GET /v1/events/stream", () => {
  test("sends a bot's status events live as its runner reports them, each the JSON of GET /v1/events", async ({
    server: s,
    user,
  }) => {
    const client = await stream(s, user);
    expect(client.status).toBe(200);
    expect(client.contentType).toMatch(/^text\/event-stream/);

    const { botId, runner } = await deployedBot(s, user);
    await runner.status("JOINING_CALL");
    await client.until((events) => events.length === 1);
    expect(client.events[0]).toMatchObject({
      event: "JOINING_CALL",
      data: { botId, eventType: "JOINING_CALL" },
    });
    expect(client.retry).toBeGreaterThan(0);

    await runner.status("IN_CALL");
    await runner.send({
      type: "recording.started",
      data: { width: 1280, height: 720, frameRate: 25, startedAt: new Date().toISOString() },
    });
    await runner.status("CALL_ENDED");
    await runner.status("DONE");
    await client.until((events) => events.some((e) => e.event === "DONE"));
    expect(client.events.map((e) => e.event)).toEqual([
      "JOINING_CALL",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);

    const listed = await s.api.get("/v1/events?page_size=100", { token: user.token });
    expect(client.events.map((e) => e.data)).toEqual([...listed.body.events].reverse());
    expect(client.events.map((e) => e.id)).toEqual(client.events.map((e) => String(e.data.id)));
  });

  test("never sends another user's events", async ({ server: s }) => {
    const alice = await registerUser(s.api, "Alice");
    const bob = await registerUser(s.api, "Bob");
    const aliceStream = await stream(s, alice);
    const bobStream = await stream(s, bob);
    const aliceBot = await deployedBot(s, alice);
    const bobBot = await deployedBot(s, bob);

    await bobBot.runner.status("JOINING_CALL");
    await bobBot.runner.status("IN_CALL");
    await aliceBot.runner.status("JOINING_CALL");
    await bobStream.until((events) => events.length === 2);
    // Streams send in id order: Bob's events, older than Alice's, would have come before hers.
    await aliceStream.until((events) => events.length === 1);
    expect(aliceStream.events.map((e) => e.data.botId)).toEqual([aliceBot.botId]);
    expect(bobStream.events.map((e) => e.data.botId)).toEqual([bobBot.botId, bobBot.botId]);
  });

  test("resumes exactly after Last-Event-ID (or ?since): the missed events in order, then live ones", async ({
    server: s,
    user,
  }) => {
    const { botId, runner } = await deployedBot(s, user);
    for (const status of ["JOINING_CALL", "IN_WAITING_ROOM", "IN_CALL", "CALL_ENDED"] as const) {
      await runner.status(status);
    }
    const listed = await s.api.get("/v1/events?page_size=100", { token: user.token });
    const ids: number[] = listed.body.events.map((e: { id: number }) => e.id).reverse();
    expect(ids).toHaveLength(4);

    const resumed = await stream(s, user, { "last-event-id": String(ids[1]) });
    const since = await stream(s, user, {}, `/v1/events/stream?since=${ids[2]}`);
    await resumed.until((events) => events.length === 2);
    await since.until((events) => events.length === 1);
    await runner.status("DONE");
    await resumed.until((events) => events.length === 3);
    await since.until((events) => events.length === 2);

    const done = (await s.api.get(`/v1/events?bot_id=${botId}&event_type=DONE`, { token: user.token })).body
      .events[0]?.id;
    expect(resumed.events.map((e) => Number(e.id))).toEqual([ids[2], ids[3], done]);
    expect(since.events.map((e) => Number(e.id))).toEqual([ids[3], done]);
  });

  test("catches up on more events than one read takes, in order, without a gap", async ({
    server: s,
    user,
  }) => {
    const { botId } = await deployedBot(s, user);
    const count = 1234; // more than two reads of STREAM_BATCH
    await insertEvents(s, botId, count, 10);

    const client = await stream(s, user, { "last-event-id": "0" });
    await client.until((events) => events.length === count);
    expect(client.events.every((e) => e.data.botId === botId)).toBe(true);
    const ids = client.events.map((e) => Number(e.id));
    expect(new Set(ids).size).toBe(count);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  test("keeps a quiet stream alive with ping comments", async () => {
    const s = await ownServer({ eventStream: { heartbeatMs: 20 } });
    const user = await registerUser(s.api);
    const client = await stream(s, user);
    await client.until(() => client.pings >= 2);
    expect(client.events).toEqual([]);
  });

  test("answers 401 without a credential and 422 for a Last-Event-ID that is not an id", async ({
    server: s,
    user,
  }) => {
    const anonymous = await stream(s, undefined);
    expect(anonymous.status).toBe(401);
    const bad = await stream(s, user, { "last-event-id": "yesterday" });
    expect(bad.status).toBe(422);
  });

  test("allows a user a limited number of open streams (429 beyond), and a slot again once one closes", async () => {
    const s = await ownServer({ eventStream: { perUser: 2 } });
    const user = await registerUser(s.api);
    const other = await registerUser(s.api, "Other");
    const first = await stream(s, user);
    await stream(s, user);
    const third = await stream(s, user);
    expect(third.status).toBe(429);
    expect(errorDetail(third.body)).toMatch(/Too many open event streams: 2 per user/);
    expect((await stream(s, other)).status).toBe(200); // the limit is per user

    first.close();
    clients.push(await openWhenAllowed(s, user.token));
  });

  test("disconnects a client that stops reading, instead of holding what it does not take", async () => {
    // One stream per user: the server has let go of the stalled one when another may open.
    const s = await ownServer({ eventStream: { perUser: 1, stallTimeoutMs: 200 } });
    const user = await registerUser(s.api);
    const { botId } = await deployedBot(s, user);
    // Far more than the socket buffers on both ends hold, so that the stream must stop.
    await insertEvents(s, botId, 2000, 16 * 1024);

    sockets.push(await stalledClient(s, user.token, 0));
    const refused = await stream(s, user);
    expect(refused.status).toBe(429);
    const next = await openWhenAllowed(s, user.token);
    clients.push(next);
    expect(next.status).toBe(200);
  });

  test("ends every stream when the server closes, a stalled one too", async () => {
    const s = await startTestServer(NO_RATE_LIMIT);
    const user = await registerUser(s.api);
    const { botId } = await deployedBot(s, user);
    await insertEvents(s, botId, 2000, 16 * 1024);
    const reading = await stream(s, user);
    sockets.push(await stalledClient(s, user.token, 0));
    await reading.until(() => reading.retry !== undefined);

    await s.close();
    await reading.untilEnded();
    expect(reading.ended).toBe(true);
  });

  test("delivers events that another server on the same database appended", async () => {
    const a = await ownServer({ eventStream: { pollIntervalMs: 50 } });
    // Same data dir (so the same secret and, on SQLite, the same file) and the same database.
    const b = await ownServer({
      dataDir: a.dataDir,
      databaseUrl: a.databaseUrl,
      eventStream: { pollIntervalMs: 50 },
      webhooks: { worker: false },
      jobs: { worker: false },
    });
    const user = await registerUser(a.api);
    const onB = await stream(b, user);
    const { botId, runner } = await deployedBot(a, user); // its runner reports to server A
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await onB.until((events) => events.length === 2);
    expect(onB.events.map((e) => [e.event, e.data.botId])).toEqual([
      ["JOINING_CALL", botId],
      ["IN_CALL", botId],
    ]);
  });
});

/** Writes `count` RECORDING events of `bytes` padding each straight into the server's database. */
async function insertEvents(s: TestServer, botId: number, count: number, bytes: number): Promise<void> {
  const db = await openServerDatabase(s);
  try {
    const now = new Date().toISOString();
    const data = JSON.stringify({ padding: "x".repeat(bytes) });
    for (let done = 0; done < count; done += 100) {
      const rows = Array.from({ length: Math.min(100, count - done) }, () => ({
        bot_id: botId,
        event_type: "RECORDING",
        event_time: now,
        data,
        created_at: now,
      }));
      await db.kysely.insertInto("aggregated_events").values(rows).execute();
    }
  } finally {
    await db.close();
  }
}
