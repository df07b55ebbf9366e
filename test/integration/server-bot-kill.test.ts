import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, describe } from "vitest";
import type { BotConfig } from "../../src/core/index.js";
import { Reporter } from "../../src/runner/reporter.js";
import { uploadRecording } from "../../src/runner/upload.js";
import {
  deployedBot,
  RecordingLauncher,
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/** These tests make many requests as one user: the rate limit is server-rate-limit.test's subject. */
const UNLIMITED = { rateLimit: { perMinute: 0, perHour: 0 } };

/**
 * POST /v1/bots/{id}/kill against the runner's own client code: the real Reporter (spool, retries,
 * its handling of refusals) and the real recording upload, driven through the events a runner
 * sends after SIGTERM (src/runner/lifecycle.ts: leave, CALL_ENDED LEFT_ON_REQUEST, recording
 * stopped, upload, DONE). Only the browser and ffmpeg are left out; the e2e suite has them.
 */

let server: TestServer;
let user: TestUser;
let scratch: string;
test.override("serverOptions", UNLIMITED);
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  user = await registerUser(server.api);
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-kill-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  seq?: number;
}

/** A runner's reporter for `config`, with what it logs kept for the test to read. */
async function runnerReporter(config: BotConfig) {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as LogLine);
      done();
    },
  });
  const log = pino({ level: "debug" }, sink);
  const workDir = await mkdtemp(path.join(scratch, "work-"));
  return { reporter: new Reporter(config, workDir, log), log, lines, workDir };
}

const get = <P extends string>(p: P) => server.api.get(p, { token: user.token });
const kill = (botId: number) => server.api.post(`/v1/bots/${botId}/kill`, { token: user.token });
const types = (list: { eventType: string }[]) => list.map((e) => e.eventType);

describe("kill a bot in a call", () => {
  test("makes it FATAL KILLED, SIGTERMs the runner, and keeps the recording the runner still delivers", async () => {
    const { botId, config } = await deployedBot(server, user, { meetingTitle: "Board meeting" });
    const { reporter, log, lines, workDir } = await runnerReporter(config);
    reporter.report({ type: "status", data: { status: "JOINING_CALL" } });
    reporter.report({ type: "status", data: { status: "IN_CALL" } });
    reporter.report({
      type: "recording.started",
      data: { width: 640, height: 360, frameRate: 25, startedAt: new Date().toISOString() },
    });
    reporter.report({ type: "participant.joined", data: { participantId: "p1", participantName: "Ada" } });
    expect(await reporter.flush(10_000)).toBe(true);

    const killed = await kill(botId);
    expect(killed.status).toBe(200);
    expect(killed.body).toEqual({ message: "Bot terminated", botId, status: "FATAL" });
    expect(server.launcher.stopped).toEqual(expect.arrayContaining([botId]));
    expect((await get(`/v1/bots/${botId}`)).body).toMatchObject({
      status: "FATAL",
      deploymentError: { code: "KILLED", message: "killed on request" },
      recording: null,
      transcription: null,
      summary: null,
    });

    // The runner got SIGTERM: it leaves, finalizes and uploads, reporting as it goes.
    const recording = path.join(workDir, "recording.mp4");
    const bytes = mp4Bytes(256 * 1024);
    await writeFile(recording, bytes);
    const callEnded = reporter.report({
      type: "status",
      data: { status: "CALL_ENDED", subCode: "LEFT_ON_REQUEST" },
    });
    reporter.report({ type: "recording.stopped", data: { durationMs: 2_500, sizeBytes: bytes.length } });
    expect(await reporter.flush(10_000)).toBe(true); // (only to keep the log order below fixed)
    await uploadRecording(config, { path: recording, durationMs: 2_500 }, log); // rejects if refused
    expect(existsSync(recording)).toBe(false); // the server has it: the runner's copy is gone
    const done = reporter.report({ type: "status", data: { status: "DONE" } });
    const late = reporter.report({ type: "heartbeat", data: {} });
    // The refusals neither block the queue nor make it retry: everything is handled, promptly.
    expect(await reporter.flush(10_000)).toBe(true);
    reporter.stop();

    // The runner saw exactly two refusals, as warnings, and nothing it counts as lost.
    const refused = lines.filter((l) => l.msg === "control plane refused event");
    expect(refused.map((l) => [l.level, l.seq])).toEqual([
      [40, callEnded],
      [40, done],
    ]);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.msg === "callback failed, retrying")).toEqual([]);
    // Its DONE was its last report: the token died with it, and the heartbeat after it was
    // turned away, as the runner expects.
    const notTaken = lines.filter((l) => l.msg === "the bot has ended; event not taken");
    expect(notTaken.map((l) => [l.level, l.seq])).toEqual([[30, late]]);

    // The bot stays FATAL KILLED, with its recording.
    const bot = (await get(`/v1/bots/${botId}`)).body;
    expect(bot).toMatchObject({
      status: "FATAL",
      deploymentError: { code: "KILLED", message: "killed on request" },
      recording: { botId, sizeBytes: bytes.length, durationSeconds: 2.5 },
    });
    const link = await get(`/v1/recordings/${botId}/download`);
    expect(link.status).toBe(200);
    const file = await fetch(link.body.url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);

    // Per-bot events: the recording events are kept; no BOT_LEFT, since CALL_ENDED was not applied.
    const events = (await get(`/v1/bots/${botId}/events`)).body;
    expect(types(events)).toEqual([
      "BOT_JOINED",
      "RECORDING_STARTED",
      "PARTICIPANT_JOINED",
      "ERROR",
      "RECORDING_STOPPED",
    ]);
    expect(events[3]?.data).toEqual({ code: "KILLED", error: "killed on request" });
    expect(events[4]?.data).toMatchObject({ durationMs: 2_500, sizeBytes: bytes.length });
    const aggregated = (await get(`/v1/events?bot_id=${botId}`)).body.events;
    expect(types(aggregated)).toEqual(["FATAL", "RECORDING", "IN_CALL", "JOINING_CALL"]);
    expect(aggregated[0]?.data).toMatchObject({ subCode: "KILLED", meetingTitle: "Board meeting" });

    // The log tells the story without warnings: refused reports are info, the kill an error.
    const logs = (await get(`/v1/bots/${botId}/logs`)).body;
    expect(logs.map((l) => [l.level, l.message])).toEqual([
      ["info", "deployment started"],
      ["error", "KILLED: killed on request"],
      ["info", `CALL_ENDED reported after the bot ended FATAL; not applied (seq ${callEnded})`],
      ["info", `recording uploaded (${bytes.length} bytes)`],
      ["info", `DONE reported after the bot ended FATAL; not applied (seq ${done})`],
    ]);
    expect((await get(`/v1/bots/${botId}/logs?level=warn`)).body).toHaveLength(1);

    // Still FATAL: a second kill is a conflict and stops nothing more.
    const stops = server.launcher.stopped.length;
    const again = await kill(botId);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: "Bot is not running (status is FATAL)" });
    expect(server.launcher.stopped).toHaveLength(stops);
  });
});

describe("kill a bot before it is in the call", () => {
  test("keeps the server's KILLED when the runner reports its own FATAL afterwards, adding its artifacts", async () => {
    const { botId, config } = await deployedBot(server, user);
    const { reporter, lines } = await runnerReporter(config);
    reporter.report({ type: "status", data: { status: "JOINING_CALL" } });
    expect(await reporter.flush(10_000)).toBe(true);
    expect((await kill(botId)).status).toBe(200);

    // src/runner/lifecycle.ts: a stop before the call ends the bot FATAL KILLED, with artifacts.
    reporter.report({ type: "log", data: { level: "error", message: "bot failed" } });
    reporter.report({
      type: "status",
      data: {
        status: "FATAL",
        subCode: "KILLED",
        message: "stopped on request before the call started",
        artifacts: ["failure.png"],
      },
    });
    expect(await reporter.flush(10_000)).toBe(true);
    reporter.stop();
    expect(lines.filter((l) => l.msg === "control plane refused event")).toHaveLength(1);

    const bot = (await get(`/v1/bots/${botId}`)).body;
    expect(bot.status).toBe("FATAL");
    // What the runner saw is kept where the owner looks for it.
    expect(bot.deploymentError).toEqual({
      code: "KILLED",
      message: "killed on request",
      artifacts: [`/v1/bots/${botId}/artifacts/failure.png`],
    });
    expect(types((await get(`/v1/bots/${botId}/events`)).body)).toEqual(["ERROR"]);
    const errors = (await get(`/v1/bots/${botId}/logs?level=error`)).body;
    expect(errors.map((l: { message: string }) => l.message)).toEqual([
      "KILLED: killed on request",
      "bot failed",
    ]);
  });
});

/** A launcher whose launch waits for the test, to land a kill while the runner is starting. */
class GatedLauncher extends RecordingLauncher {
  private release: (() => void) | null = null;
  starting: Promise<void> | null = null;

  override async launch(config: BotConfig): Promise<void> {
    let started = () => {};
    this.starting = new Promise((resolve) => {
      started = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      this.release = resolve;
    });
    started();
    await gate;
    await super.launch(config);
  }

  open(): void {
    this.release?.();
  }
}

/** A launcher that cannot stop runners (e.g. its container API is down). */
class StuckLauncher extends RecordingLauncher {
  override async stop(botId: number): Promise<void> {
    await super.stop(botId);
    throw new Error("container API unreachable");
  }
}

describe("kill and the launcher", () => {
  test("stops a runner that the launcher was still starting when the kill came", async () => {
    const launcher = new GatedLauncher();
    const own = await startTestServer({ ...UNLIMITED, launcher });
    try {
      const owner = await registerUser(own.api);
      const { id } = (
        await own.api.post("/v1/bots", { token: owner.token, body: { meetingInfo: TEST_MEETING } })
      ).body;
      const deploy = own.api.post(`/v1/bots/${id}/deploy`, { token: owner.token });
      await expect.poll(() => launcher.starting, { timeout: 5_000, interval: 5 }).not.toBeNull();
      const killed = await own.api.post(`/v1/bots/${id}/kill`, { token: owner.token });
      expect(killed.status).toBe(200);
      expect(launcher.stopped).toEqual([id]); // nothing to stop yet
      launcher.open();
      expect((await deploy).status).toBe(200);
      // The deploy saw the kill once the runner existed, and stopped it.
      expect(launcher.launched.map((c) => c.botId)).toEqual([id]);
      expect(launcher.stopped).toEqual([id, id]);
      expect((await own.api.get(`/v1/bots/${id}`, { token: owner.token })).body.status).toBe("FATAL");
    } finally {
      await own.close();
    }
  });

  test("still answers FATAL when the launcher cannot stop the runner, and says so in the bot's log", async () => {
    const launcher = new StuckLauncher();
    const own = await startTestServer({ ...UNLIMITED, launcher });
    try {
      const owner = await registerUser(own.api);
      const { botId } = await deployedBot(own, owner);
      const killed = await own.api.post(`/v1/bots/${botId}/kill`, { token: owner.token });
      expect(killed.status).toBe(200);
      expect(killed.body.status).toBe("FATAL");
      expect(launcher.stopped).toEqual([botId]);
      const errors = await own.api.get(`/v1/bots/${botId}/logs?level=error`, { token: owner.token });
      expect(errors.body.map((l: { message: string }) => l.message)).toEqual([
        "KILLED: killed on request",
        "could not stop the runner: container API unreachable",
      ]);
    } finally {
      await own.close();
    }
  });
});
