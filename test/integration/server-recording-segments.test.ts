import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe } from "vitest";
import {
  deployedBot,
  type FakeRunner,
  makeSegmentedMp4,
  openServerDatabase,
  probeMedia,
  RecordingLauncher,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import type { LauncherHost } from "../../src/server/launcher/launcher.js";
import { expect, readRow, test } from "../helpers/fixtures.js";

let server: TestServer;
let user: TestUser;
let scratch: string;
let media: { whole: Uint8Array; segments: Uint8Array[] };
test.override("serverOptions", {
  // Fast sweeps for the lost runner; launches never time out here (bots report at once).
  watchdog: { intervalMs: 100, launchTimeoutMs: 600_000, heartbeatTimeoutMultiple: 3 },
  rateLimit: { perMinute: 0, perHour: 0 },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-segments-"));
  media = await makeSegmentedMp4(scratch, 6, 6);
  user = await registerUser(server.api);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** Concatenated bytes, as a file in the scratch dir: what a prefix of the segments plays as. */
async function probeBytes(name: string, parts: Uint8Array[]) {
  const file = path.join(scratch, name);
  await writeFile(file, Buffer.concat(parts));
  return probeMedia(file);
}

/** The stored recording, downloaded by its owner and probed. */
async function storedRecording(botId: number) {
  const res = await fetch(`${server.url}/v1/recordings/${botId}/stream`, {
    headers: { authorization: `Bearer ${user.token}` },
  });
  expect(res.status).toBe(200);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const file = path.join(scratch, `stored-${botId}.mp4`);
  await writeFile(file, bytes);
  const topBoxes = [0, 1].reduce<{ types: string[]; at: number }>(
    ({ types, at }) => {
      const view = Buffer.from(bytes.buffer, bytes.byteOffset + at, 8);
      return { types: [...types, view.toString("latin1", 4, 8)], at: at + view.readUInt32BE(0) };
    },
    { types: [], at: 0 },
  ).types;
  return { ...(await probeMedia(file)), topBoxes };
}

const segmentDir = (botId: number) => path.join(server.dataDir, "recordings", "segments", String(botId));

async function inCall(runner: FakeRunner) {
  expect((await runner.status("JOINING_CALL")).status).toBe(200);
  expect((await runner.status("IN_CALL")).status).toBe(200);
}

describe("the recording uploaded in segments", () => {
  test("joins segments that arrived out of order and twice into one faststart MP4 on complete", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await inCall(runner);
    const order = [2, 0, 5, 1, 2, 4, 3, 0];
    for (const seq of order) {
      const res = await runner.uploadSegment(seq, media.segments[seq] as Uint8Array);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ seq, sizeBytes: media.segments[seq]?.length });
    }
    const completed = await runner.completeRecording(6);
    expect(completed.status).toBe(201);
    expect(completed.body.sizeBytes).toBeGreaterThan(0);

    const whole = await probeBytes("whole.mp4", [media.whole]);
    const stored = await storedRecording(botId);
    expect(stored.durationSeconds).toBeCloseTo(whole.durationSeconds, 1);
    expect(stored.streams.sort()).toEqual(["audio", "video"]);
    // faststart: the index comes before the media.
    expect(stored.topBoxes).toEqual(["ftyp", "moov"]);
    expect(completed.body.durationSeconds).toBeCloseTo(whole.durationSeconds, 1);
    expect(existsSync(segmentDir(botId))).toBe(false);
  });

  test("refuses to complete while a segment is missing, and stores nothing", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await inCall(runner);
    for (const seq of [0, 1, 3]) {
      expect((await runner.uploadSegment(seq, media.segments[seq] as Uint8Array)).status).toBe(201);
    }
    const refused = await runner.completeRecording(4);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe("Segments missing: 2");
    expect((await server.api.get(`/v1/recordings/${botId}`, { token: user.token })).status).toBe(404);
    // The missing one arrives (a retry); now it completes.
    expect((await runner.uploadSegment(2, media.segments[2] as Uint8Array)).status).toBe(201);
    expect((await runner.completeRecording(4)).status).toBe(201);
  });

  test("answers bad input with clear errors", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const bytes = media.segments[0] as Uint8Array;
    expect((await runner.uploadSegment("first", bytes)).status).toBe(422);
    expect((await runner.uploadSegment(-1, bytes)).status).toBe(422);
    // Only canonical decimal seqs: none of these may be read as a number (an empty seq as 0, `0x10` as 16).
    for (const seq of ["", "0x10", "1e1", "010", "+1", "1.0", "%201", "0b1", "10000001"]) {
      const res = await runner.uploadSegment(seq, bytes);
      expect(res.status, `seq "${seq}"`).toBe(422);
      expect(validationIssues(res.body)[0]?.loc).toEqual(["path", "seq"]);
    }
    const json = await runner.uploadSegment(0, bytes, { contentType: "application/json" });
    expect(json.status).toBe(415);
    expect((await runner.uploadSegment(0, bytes, { token: "not-the-token" })).status).toBe(401);
    const zero = await server.api.post(`/v1/bot-callbacks/${botId}/recording/complete`, {
      body: { segments: 0 },
      token: runner.config.callback.token,
    });
    expect(zero.status).toBe(422);
    expect(existsSync(segmentDir(botId))).toBe(false);
  });

  test("makes a lost runner's segments, up to the first gap, its recording with recording.ready", async ({
    db,
  }) => {
    const hook = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "ready", url: "https://hooks.example.com/ready", events: ["recording.ready"] },
    });
    expect(hook.status).toBe(201);
    const { botId, runner } = await deployedBot(server, user, { heartbeatInterval: 500 });
    await inCall(runner);
    // Seq 3 never arrived: 0-2 are the recording, 4 is dropped.
    for (const seq of [0, 1, 2, 4]) {
      expect((await runner.uploadSegment(seq, media.segments[seq] as Uint8Array)).status).toBe(201);
    }
    // The runner goes silent; the watchdog fails it and salvages what it sent.
    const readyQueued = async () =>
      (
        await db.kysely
          .selectFrom("webhook_deliveries")
          .select("event")
          .where("bot_id", "=", botId)
          .where("event", "=", "recording.ready")
          .execute()
      ).length;
    await expect.poll(readyQueued, { timeout: 15_000, interval: 100 }).toBe(1);
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
    expect(bot.body.status).toBe("FATAL");
    expect(bot.body.deploymentError).toMatchObject({ code: "HEARTBEAT_TIMEOUT" });

    const prefix = await probeBytes("prefix.mp4", media.segments.slice(0, 3));
    const stored = await storedRecording(botId);
    expect(stored.durationSeconds).toBeCloseTo(prefix.durationSeconds, 1);
    expect(stored.durationSeconds).toBeLessThan(5);
    expect(stored.streams.sort()).toEqual(["audio", "video"]);
    const logs = await server.api.get(`/v1/bots/${botId}/logs`, { token: user.token });
    expect(JSON.stringify(logs.body)).toContain(
      "recording assembled from the 3 segments received before the runner was lost; 1 after a gap at seq 3 dropped",
    );
    expect(existsSync(segmentDir(botId))).toBe(false);
  });
});

describe("segments left by a server that stopped before salvaging them", () => {
  test("become the lost runner's recording when the server starts again", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-segments-restart-"));
    // No sweeps in the first life: the bot is failed by hand, as if the server died mid-salvage.
    const first = await startTestServer({ dataDir, watchdog: { intervalMs: 3_600_000 } });
    let botId: number;
    try {
      const owner = await registerUser(first.api);
      const deployed = await deployedBot(first, owner);
      botId = deployed.botId;
      await inCall(deployed.runner);
      for (const seq of [0, 1]) {
        expect((await deployed.runner.uploadSegment(seq, media.segments[seq] as Uint8Array)).status).toBe(
          201,
        );
      }
      const db = await openServerDatabase(first);
      try {
        await db.kysely
          .updateTable("bots")
          .set({
            status: "FATAL",
            deployment_error: JSON.stringify({ code: "HEARTBEAT_TIMEOUT", message: "silent" }),
          })
          .where("id", "=", botId)
          .execute();
      } finally {
        await db.close();
      }
    } finally {
      await first.close();
    }
    const second = await startTestServer({ dataDir });
    try {
      const db = await openServerDatabase(second);
      try {
        const recorded = () => readRow(db, "recordings", botId, "bot_id");
        await expect.poll(recorded, { timeout: 15_000, interval: 100 }).toBeDefined();
      } finally {
        await db.close();
      }
      // The segments go right after the recording's row is committed: wait for them too.
      const segments = path.join(dataDir, "recordings", "segments", String(botId));
      await expect.poll(() => existsSync(segments), { timeout: 15_000, interval: 50 }).toBe(false);
    } finally {
      await second.close();
      await (await testDatabaseFor(dataDir))?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a recording its owner deleted", () => {
  test("is not salvaged back from segments that arrived late, when the server starts again", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-segments-deleted-"));
    const first = await startTestServer({ dataDir, watchdog: { intervalMs: 3_600_000 } });
    let botId: number;
    try {
      const owner = await registerUser(first.api);
      const deployed = await deployedBot(first, owner);
      botId = deployed.botId;
      await inCall(deployed.runner);
      expect((await first.api.post(`/v1/bots/${botId}/kill`, { token: owner.token })).status).toBe(200);
      expect((await deployed.runner.upload(media.whole, 4000)).status).toBe(201);
      expect((await first.api.delete(`/v1/recordings/${botId}`, { token: owner.token })).status).toBe(204);
    } finally {
      await first.close();
    }
    // Segments a runner got in before the deletion was committed: they are still on disk.
    const dir = path.join(dataDir, "recordings", "segments", String(botId));
    await mkdir(dir, { recursive: true });
    for (const seq of [0, 1])
      await writeFile(path.join(dir, `${seq}.m4s`), media.segments[seq] as Uint8Array);

    const second = await startTestServer({ dataDir });
    try {
      await expect.poll(() => existsSync(dir), { timeout: 15_000, interval: 100 }).toBe(false);
      const db = await openServerDatabase(second);
      try {
        expect(await readRow(db, "recordings", botId, "bot_id")).toBeUndefined();
      } finally {
        await db.close();
      }
    } finally {
      await second.close();
      await (await testDatabaseFor(dataDir))?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a runner whose container or Pod cannot go on", () => {
  test("leaves its segments as the bot's recording once the launcher reports it", async () => {
    /** A launcher that watches its runners from outside, as the Docker and Kubernetes ones do. */
    class WatchingLauncher extends RecordingLauncher {
      host: LauncherHost | undefined;
      async attach(host: LauncherHost): Promise<void> {
        this.host = host;
      }
    }
    const launcher = new WatchingLauncher();
    const own = await startTestServer({ launcher });
    try {
      const owner = await registerUser(own.api);
      const { botId, runner } = await deployedBot(own, owner);
      await inCall(runner);
      for (const seq of [0, 1, 2]) {
        expect((await runner.uploadSegment(seq, media.segments[seq] as Uint8Array)).status).toBe(201);
      }
      expect(
        await launcher.host?.runnerFailed(botId, "OUT_OF_MEMORY", "the runner's Pod was OOMKilled"),
      ).toBe(true);
      await expect
        .poll(async () => (await own.api.get(`/v1/recordings/${botId}`, { token: owner.token })).status, {
          timeout: 15_000,
          interval: 100,
        })
        .toBe(200);
      const bot = await own.api.get(`/v1/bots/${botId}`, { token: owner.token });
      expect(bot.body.deploymentError).toMatchObject({ code: "OUT_OF_MEMORY" });
      const prefix = await probeBytes("oom-prefix.mp4", media.segments.slice(0, 3));
      const stored = (await own.api.get(`/v1/recordings/${botId}`, { token: owner.token })).body;
      expect(stored.durationSeconds).toBeCloseTo(prefix.durationSeconds, 1);
    } finally {
      await own.close();
    }
  });
});
