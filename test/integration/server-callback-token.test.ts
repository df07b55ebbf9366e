import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  deployedBot,
  type FakeRunner,
  openServerDatabase,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";

/**
 * A bot's callback token dies with the bot (src/server/services/callback-token.ts): once the
 * runner's last report is in and what it uploads is stored, its events and uploads are 401.
 */

const UNLIMITED = { rateLimit: { perMinute: 0, perHour: 0 } };

test.override("serverOptions", UNLIMITED);

// The file's helpers read these: the file's server, and each test's own fresh user.
let server: TestServer;
let user: TestUser;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});
test.beforeEach(({ user: testUser }) => {
  user = testUser;
});

const get = <P extends string>(path: P) => server.api.get(path, { token: user.token });
const heartbeat = { type: "heartbeat", data: {} } as const;
const EXPIRED = { status: 401, body: { detail: "Callback token expired: the bot has ended" } };
const answer = (res: { status: number; body: unknown }) => ({ status: res.status, body: res.body });
const artifact = (runner: FakeRunner, name: string) =>
  server.api.put(`/v1/bot-callbacks/${runner.config.botId}/artifacts/${name}`, {
    rawBody: mp4Bytes(64),
    token: runner.config.callback.token,
    headers: { "content-type": "application/octet-stream" },
  });

async function inCall(runner: FakeRunner) {
  for (const s of ["JOINING_CALL", "IN_CALL", "CALL_ENDED"] as const) {
    expect((await runner.status(s)).status).toBe(200);
  }
}

describe("a bot's callback token", () => {
  test("dies once the bot is DONE with its recording stored: events (replays too) and uploads are 401", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await inCall(runner);
    const recording = mp4Bytes(4096);
    expect((await runner.upload(recording, 1_000)).status).toBe(201);
    const done = await runner.status("DONE");
    expect(done.body).toEqual({ applied: true, status: "DONE" });
    const doneSeq = 4;

    expect(answer(await runner.send(heartbeat))).toEqual(EXPIRED);
    // A replay of an event the server already applied (the runner's spool resending it).
    expect(answer(await runner.send({ type: "status", data: { status: "DONE" } }, { seq: doneSeq }))).toEqual(
      EXPIRED,
    );
    expect(answer(await runner.upload(mp4Bytes(16), 5))).toEqual(EXPIRED);
    expect(answer(await artifact(runner, "late.png"))).toEqual(EXPIRED);

    // Nothing of it was taken: the recording and the bot are as they were.
    const bot = (await get(`/v1/bots/${botId}`)).body;
    expect(bot).toMatchObject({ status: "DONE", recording: { sizeBytes: recording.length } });
    // Another token is still refused as before, with the same answer as any wrong token.
    const wrong = await runner.send(heartbeat, { token: "x".repeat(43) });
    expect(answer(wrong)).toEqual({ status: 401, body: { detail: "Invalid callback token" } });
  });

  test("after a DONE reported before the upload, lives until the recording is stored", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await inCall(runner);
    expect((await runner.status("DONE")).body).toEqual({ applied: true, status: "DONE" });
    expect((await runner.send(heartbeat)).status).toBe(200);
    expect((await runner.upload(mp4Bytes(2048), 800)).status).toBe(201);
    expect(answer(await runner.send(heartbeat))).toEqual(EXPIRED);
    expect((await get(`/v1/bots/${botId}`)).body.recording).toMatchObject({ sizeBytes: 2048 });
  });

  test("dies with the runner's own FATAL, after the artifacts and partial recording it uploaded first", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await artifact(runner, "failure.png")).status).toBe(201);
    expect((await runner.upload(mp4Bytes(1024), 300)).status).toBe(201);
    const fatal = await runner.status("FATAL", { subCode: "BROWSER_CRASHED", artifacts: ["failure.png"] });
    expect(fatal.body).toEqual({ applied: true, status: "FATAL" });
    expect(answer(await runner.send(heartbeat))).toEqual(EXPIRED);
    expect(answer(await artifact(runner, "trace.zip"))).toEqual(EXPIRED);
    const bot = (await get(`/v1/bots/${botId}`)).body;
    expect(bot.deploymentError?.artifacts).toEqual([`/v1/bots/${botId}/artifacts/failure.png`]);
    expect(bot.recording).toMatchObject({ sizeBytes: 1024 });
  });

  test("outlives a kill while the runner winds down, and dies with its last report", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);

    // Still taken: its events (a refused status is still heard), its recording.
    expect((await runner.status("CALL_ENDED", { subCode: "LEFT_ON_REQUEST" })).status).toBe(409);
    expect((await runner.send(heartbeat)).status).toBe(200);
    expect((await runner.upload(mp4Bytes(512), 200)).status).toBe(201);
    // Its last report: refused (the bot is FATAL KILLED), and the token dies with it.
    expect((await runner.status("DONE")).status).toBe(409);
    expect(answer(await runner.send(heartbeat))).toEqual(EXPIRED);
    expect((await get(`/v1/bots/${botId}`)).body).toMatchObject({
      status: "FATAL",
      recording: { sizeBytes: 512 },
    });
  });

  test("dies when the owner deletes the recording: a failed bot's runner cannot bring it back", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);
    expect((await runner.upload(mp4Bytes(512), 200)).status).toBe(201);
    expect((await server.api.delete(`/v1/recordings/${botId}`, { token: user.token })).status).toBe(204);

    // Still within the hour its token would have lived: every upload is refused, nothing comes back.
    expect(answer(await runner.upload(mp4Bytes(512), 200))).toEqual(EXPIRED);
    expect(answer(await runner.uploadSegment(0, mp4Bytes(512)))).toEqual(EXPIRED);
    expect(answer(await runner.completeRecording(1))).toEqual(EXPIRED);
    expect((await get(`/v1/bots/${botId}`)).body).toMatchObject({ status: "FATAL", recording: null });
    expect((await get(`/v1/recordings/${botId}`)).status).toBe(404);
  });

  test("after a kill, dies at the end of the wind-down even if the runner never reports again", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);
    expect((await runner.send(heartbeat)).status).toBe(200);

    const db = await openServerDatabase(server);
    try {
      const { callback_token_expires_at: expiresAt } = await db.kysely
        .selectFrom("bots")
        .select("callback_token_expires_at")
        .where("id", "=", botId)
        .executeTakeFirstOrThrow();
      const killedAt = await db.kysely
        .selectFrom("bot_logs")
        .select("created_at")
        .where("bot_id", "=", botId)
        .where("message", "=", "KILLED: killed on request")
        .executeTakeFirstOrThrow();
      // An hour after the kill (RUNNER_WIND_DOWN_MS)...
      expect(Date.parse(expiresAt ?? "") - Date.parse(killedAt.created_at)).toBe(60 * 60 * 1000);
      // ...which this test does not wait for: the hour is made to have passed.
      await db.kysely
        .updateTable("bots")
        .set({ callback_token_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("id", "=", botId)
        .execute();
    } finally {
      await db.close();
    }
    expect(answer(await runner.send(heartbeat))).toEqual(EXPIRED);
    expect(answer(await runner.upload(mp4Bytes(16), 5))).toEqual(EXPIRED);
  });
});
