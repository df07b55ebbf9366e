import pino from "pino";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import type { BotConfig, CallbackEventBody, PendingCommand } from "../../src/core/index.js";
import { CommandChannel, CommandRefusal } from "../../src/runner/commands.js";
import type { RecorderPort } from "../../src/runner/ports.js";
import { RecordingClock } from "../../src/runner/recording-clock.js";
import { RecordingPause } from "../../src/runner/recording-pause.js";
import type { Db } from "../../src/server/db/database.js";
import {
  deployedBot,
  type FakeRunner,
  openServerDatabase,
  registerUser,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";
import { eventually } from "../helpers/stack.js";

/**
 * Pausing and resuming a bot's recording through the API (POST /v1/bots/{id}/pause-recording and
 * /resume-recording): the commands reach the runner's own channel and its RecordingPause (the
 * runner's real clock and command handling; only ffmpeg is a stand-in recorder), whose reports
 * become the bot's events RECORDING_PAUSED / RECORDING_RESUMED and the webhooks recording.paused /
 * recording.resumed; the stored speaker timeline leaves the paused time out.
 */

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
let db: Db;
const channels: CommandChannel[] = [];

test.override("serverOptions", { webhooks: { worker: false }, jobs: { worker: false } });
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
  db = await openServerDatabase(server);
  const hook = await server.api.post("/v1/webhooks", {
    token: owner.token,
    body: { name: "all", url: "https://example.com/hooks", events: ["*"] },
  });
  expect(hook.status).toBe(201);
});
afterAll(async () => {
  await Promise.all(channels.map((channel) => channel.stop(1000)));
  await db?.close();
});

const quiet = pino({ level: "silent" });

/** A recorder that notes what it was asked (a resume with the ms paused in all). */
class NotingRecorder implements RecorderPort {
  readonly asked: Array<[string] | [string, number]> = [];
  async start(): Promise<Date> {
    return new Date();
  }
  async stop(): Promise<never> {
    throw new Error("not in this test");
  }
  async pause(): Promise<void> {
    this.asked.push(["pause"]);
  }
  async resume(pausedMs: number): Promise<void> {
    this.asked.push(["resume", pausedMs]);
  }
}

/** A bot in a call whose runner's channel hands pause and resume to a RecordingPause. */
async function recordingBot() {
  const bot = await deployedBot(server, owner);
  await bot.runner.status("JOINING_CALL");
  await bot.runner.status("IN_CALL");
  const recorder = new NotingRecorder();
  let wallMs = Date.parse("2026-11-26T10:00:00.000Z");
  const clock = new RecordingClock(new Date(wallMs), () => wallMs);
  const pause = new RecordingPause({
    clock,
    recorder,
    report: (body) => void bot.runner.send(body),
    onFailure: () => {},
    log: quiet,
  });
  const handler = async (command: PendingCommand) => {
    if (command.kind === "pause_recording") return pause.pause();
    if (command.kind === "resume_recording") return pause.resume();
    throw new CommandRefusal("UNKNOWN_COMMAND", command.kind);
  };
  channels.push(channelFor(bot.config, handler, bot.runner));
  return { ...bot, recorder, advance: (ms: number) => (wallMs += ms) };
}

function channelFor(config: BotConfig, handler: (c: PendingCommand) => Promise<object>, runner: FakeRunner) {
  const reporter = {
    report: (body: CallbackEventBody) => {
      void runner.send(body);
      return 0;
    },
  };
  const channel = new CommandChannel(
    config,
    async (command) => ({ ...(await handler(command)) }),
    reporter,
    quiet,
    2,
  );
  channel.start();
  return channel;
}

const ask = (botId: number, what: "pause" | "resume", user = owner) =>
  what === "pause"
    ? server.api.post(`/v1/bots/${botId}/pause-recording`, { token: user.token })
    : server.api.post(`/v1/bots/${botId}/resume-recording`, { token: user.token });

/** Asks, and waits for the command's outcome. */
async function asked(botId: number, what: "pause" | "resume") {
  const queued = await ask(botId, what);
  expect(queued.status).toBe(202);
  expect(queued.body).toMatchObject({ kind: `${what}_recording`, status: "queued" });
  return eventually(async () => {
    const res = await server.api.get(`/v1/bots/${botId}/commands/${queued.body.commandId}`, {
      token: owner.token,
    });
    return ["done", "failed"].includes(res.body.status) ? res.body : undefined;
  }, `the ${what} command`);
}

const eventsOf = async (botId: number) =>
  (
    (await server.api.get(`/v1/bots/${botId}/events`, { token: owner.token })).body as {
      eventType: string;
      data: Record<string, unknown>;
    }[]
  ).filter((e) => e.eventType.startsWith("RECORDING_"));

const webhooksOf = async (botId: number) =>
  (
    await db.kysely
      .selectFrom("webhook_deliveries")
      .select(["event", "payload"])
      .where("bot_id", "=", botId)
      .where("event", "in", ["recording.paused", "recording.resumed"])
      .orderBy("id")
      .execute()
  ).map((row) => ({ event: row.event, data: (JSON.parse(row.payload) as { data: unknown }).data }));

describe("POST /v1/bots/{id}/pause-recording and /resume-recording", () => {
  test("are refused 409 (the spec's shape) unless the bot is in a call, and 404 for another user's bot", async () => {
    const { botId, runner } = await deployedBot(server, owner);
    for (const what of ["pause", "resume"] as const) {
      const res = await ask(botId, what);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: expect.stringContaining("not in a call") });
    }
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await ask(botId, "pause", stranger)).status).toBe(404);
    expect((await ask(999_999, "pause")).status).toBe(404);
  });

  test("pause, pause again, resume: one RECORDING_PAUSED and one RECORDING_RESUMED, with their webhooks", async () => {
    const bot = await recordingBot();
    bot.advance(5_000);
    const paused = await asked(bot.botId, "pause");
    expect(paused).toMatchObject({
      status: "done",
      result: { paused: true, changed: true, recordingMs: 5_000 },
    });
    bot.advance(1_000);
    // Idempotent: a second pause is done and changes nothing.
    const again = await asked(bot.botId, "pause");
    expect(again).toMatchObject({
      status: "done",
      result: { paused: true, changed: false, recordingMs: 5_000 },
    });
    bot.advance(7_000);
    const resumed = await asked(bot.botId, "resume");
    expect(resumed).toMatchObject({
      status: "done",
      result: { paused: false, changed: true, recordingMs: 5_000 },
    });
    expect((await asked(bot.botId, "resume")).result).toEqual({
      paused: false,
      changed: false,
      recordingMs: 5_000,
    });
    // The recorder went on with all 8 s paused left out.
    expect(bot.recorder.asked).toEqual([["pause"], ["resume", 8_000]]);

    const events = await eventually(async () => {
      const list = await eventsOf(bot.botId);
      return list.length >= 2 ? list : undefined;
    }, "the pause events");
    expect(events.map(({ eventType, data }) => ({ eventType, data }))).toEqual([
      {
        eventType: "RECORDING_PAUSED",
        data: { recordingMs: 5_000, pausedAt: "2026-11-26T10:00:05.000Z" },
      },
      {
        eventType: "RECORDING_RESUMED",
        data: { recordingMs: 5_000, resumedAt: "2026-11-26T10:00:13.000Z", pausedMs: 8_000 },
      },
    ]);
    expect(await webhooksOf(bot.botId)).toEqual([
      { event: "recording.paused", data: { recordingMs: 5_000, pausedAt: "2026-11-26T10:00:05.000Z" } },
      {
        event: "recording.resumed",
        data: { recordingMs: 5_000, resumedAt: "2026-11-26T10:00:13.000Z", pausedMs: 8_000 },
      },
    ]);
  });

  test("a runner that is not recording a call answers NOT_IN_CALL", async () => {
    const { botId, config, runner } = await deployedBot(server, owner);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    channels.push(
      channelFor(
        config,
        async () => {
          throw new CommandRefusal("NOT_IN_CALL", "the bot is not recording a call (CALL_ENDED)");
        },
        runner,
      ),
    );
    const outcome = await asked(botId, "pause");
    expect(outcome).toMatchObject({ status: "failed", error: { code: "NOT_IN_CALL" } });
  });
});
