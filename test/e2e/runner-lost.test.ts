import { existsSync, readdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeDurationMs } from "../../src/media/untrusted-input.js";
import { openDatabase } from "../../src/server/db/database.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * A runner that dies in the call without a word (SIGKILL: a container or Pod that vanished with
 * its disk): what it uploaded in segments during the call becomes the bot's recording once the
 * watchdog gives up on it (FATAL HEARTBEAT_TIMEOUT), with recording.ready.
 */
const SEGMENT_INTERVAL_MS = 2_000;

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack({
    env: { MEETBOT_RECORDING_SEGMENT_INTERVAL_MS: String(SEGMENT_INTERVAL_MS) },
    // Silence for 3 heartbeats (3 s) is death; swept every 200 ms.
    watchdog: { intervalMs: 200, heartbeatTimeoutMultiple: 3 },
  });
});
afterAll(async () => {
  await stack?.close();
});

const segmentDir = (botId: number) => join(stack.dataDir, "recordings", "segments", String(botId));

const storedSegments = (botId: number) => {
  const dir = segmentDir(botId);
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".m4s")).length : 0;
};

/**
 * The segments the server holds for a bot, from the init segment on and without a gap, joined into
 * one file beside the stack's data (kept with it when a test fails): what it had received at this
 * moment, whatever the watchdog does with them after.
 */
async function copyHeldSegments(botId: number): Promise<string> {
  const parts: Buffer[] = [];
  for (let seq = 0; existsSync(join(segmentDir(botId), `${seq}.m4s`)); seq++)
    parts.push(await readFile(join(segmentDir(botId), `${seq}.m4s`)));
  const copy = join(stack.dataDir, `held-by-server-${botId}.mp4`);
  await writeFile(copy, Buffer.concat(parts));
  return copy;
}

describe("a runner that finishes its call", () => {
  it("completes the recording from its segments: one playable file", { timeout: 120_000 }, async () => {
    const { api, mock } = stack;
    const bot = await api.createBot({
      meetingInfo: {
        platform: "google",
        meetingUrl: `${mock.url}/meet/seg-ment-end?admit=open&participants=2`,
      },
      botDisplayName: "Segment Bot",
    });
    await api.deploy(bot.id);
    // Several segments' worth, however long the bot took to start recording.
    await stack.endOnceSeen("google", "seg-ment-end", bot.id, 2, 4_000);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 });
    expect(final.status).toBe("DONE");
    const logs = (await api.botLogs(bot.id)).map((l) => l.message).join("\n");
    // The server joined the segments (the whole-file upload would log "recording uploaded").
    expect(logs).toMatch(/recording assembled from \d+ segments \(\d+ bytes\)/);
    const stopped = (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STOPPED");
    const media = await stack.downloadRecording(bot.id);
    expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
    const recordedMs = Number(stopped?.data?.durationMs);
    expect(recordedMs).toBeGreaterThan(3_000);
    // What the runner's ffmpeg wrote, all of it: no segment lost on the way.
    expect(Math.abs(media.durationSeconds - recordedMs / 1000)).toBeLessThan(0.5);
    expect(storedSegments(bot.id)).toBe(0);
  });
});

describe("a runner killed with SIGKILL in the call", () => {
  it(
    "leaves a playable recording of every segment the server held, with recording.ready",
    { timeout: 120_000 },
    async () => {
      const { api, mock, launcher } = stack;
      const code = "sig-kill-run";
      const bot = await api.createBot({
        meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?admit=open&participants=2` },
        botDisplayName: "Lost Bot",
        heartbeatInterval: 1000,
        // Gets every event of its bot, recording.ready among them (never reachable: only queued here).
        callbackUrl: "https://hooks.example.com/lost-bot",
      });
      await api.deploy(bot.id);
      const started = await eventually(
        async () => (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
        `bot ${bot.id} recording`,
        60_000,
      );
      // Several segments in: the server holds seq 0 (the init segment) and media after it.
      await eventually(
        async () => (storedSegments(bot.id) >= 3 ? true : undefined),
        "three segments",
        30_000,
      );
      const pid = launcher.pid(bot.id);
      expect(pid).toBeDefined();
      // Taken just before the kill: a segment that arrives after it only adds to what is salvaged.
      const held = await copyHeldSegments(bot.id);
      const exited = launcher.waitForExit(bot.id);
      process.kill(pid as number, "SIGKILL");
      const killedAt = Date.now();
      expect(await exited).toEqual({ code: null, signal: "SIGKILL" });

      const ended = await eventually(
        async () => {
          const current = await api.bot(bot.id);
          return current.recording ? current : undefined;
        },
        "the salvaged recording",
        60_000,
      );
      expect(ended.status).toBe("FATAL");
      expect(ended.deploymentError?.code).toBe("HEARTBEAT_TIMEOUT");
      const media = await stack.downloadRecording(bot.id);
      expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
      // Everything the server held at the kill is in it. How much the runner had not yet sent
      // (about one segment interval on an idle machine) depends on the machine, not on the code.
      const heldSeconds = (await probeDurationMs(held)) / 1000;
      expect(heldSeconds).toBeGreaterThan(1);
      expect(media.durationSeconds).toBeGreaterThanOrEqual(heldSeconds - 0.1);
      // And nothing that was never recorded: no more than the recording's 0 s (its startedAt,
      // else when it was reported) to the kill.
      const startedAt = Date.parse(String(started.data?.startedAt ?? started.eventTime));
      const inCallSeconds = (killedAt - startedAt) / 1000;
      expect(media.durationSeconds).toBeLessThanOrEqual(inCallSeconds + 0.5);
      const logs = await api.botLogs(bot.id);
      expect(logs.map((l) => l.message).join("\n")).toMatch(
        /recording assembled from the \d+ segments received before the runner was lost/,
      );
      expect(storedSegments(bot.id)).toBe(0);
      const db = await openDatabase({ kind: "sqlite", file: join(stack.dataDir, "meetbot.sqlite") });
      try {
        const ready = await db.kysely
          .selectFrom("webhook_deliveries")
          .select("event")
          .where("bot_id", "=", bot.id)
          .where("event", "=", "recording.ready")
          .execute();
        expect(ready).toHaveLength(1);
      } finally {
        await db.close();
      }
    },
  );
});
