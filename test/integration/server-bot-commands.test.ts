// Own server (startBuiltApp), not the fixture: its TestClock moves commands past their deadline.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type {
  BotConfig,
  BotStatus,
  CallbackEventBody,
  PendingCommand,
  SubCode,
} from "../../src/core/index.js";
import { CommandChannel, type CommandHandler, CommandRefusal } from "../../src/runner/commands.js";
import { Reporter } from "../../src/runner/reporter.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import {
  Api,
  deployedBot,
  type FakeRunner,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";

/**
 * Commands to a running bot (POST /v1/bots/{id}/leave, GET /v1/bots/{id}/commands/{cid}) through
 * the runner's own end of the channel (src/runner/commands.ts: the long poll, the results), with
 * a handler standing in for the bot's lifecycle. The deadline is driven by the server's clock.
 */

const clock = new TestClock();
let server: BuiltApp;
let owner: TestUser;
let stranger: TestUser;
const channels: CommandChannel[] = [];
const reporters: Reporter[] = [];

beforeAll(async () => {
  server = await startBuiltApp({ clock, env: { MEETBOT_WEBHOOK_WORKER: "0" } });
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
});
afterAll(async () => {
  await Promise.all(channels.map((channel) => channel.stop(1000)));
  for (const reporter of reporters) reporter.stop();
  await server?.close();
});

const quiet = pino({ level: "silent" });

/** The bot's warn-level log lines, as its owner reads them. */
async function warnings(botId: number, user = owner): Promise<string[]> {
  const logs = await server.api.get(`/v1/bots/${botId}/logs?level=warn`, { token: user.token });
  return (logs.body as { message: string }[]).map((line) => line.message);
}

/** A bot whose (fake) runner has reported it into the call. */
async function botInCall(on: TestServer = server, user = owner) {
  const bot = await deployedBot(on, user);
  await reportStatus(bot.runner, "JOINING_CALL");
  await reportStatus(bot.runner, "IN_CALL");
  return bot;
}

async function reportStatus(runner: FakeRunner, status: BotStatus, subCode?: SubCode) {
  const res = await runner.send({ type: "status", data: { status, ...(subCode ? { subCode } : {}) } });
  expect(res.status).toBe(200);
}

/**
 * The runner's command channel for `config`, handing each command it runs to `handler`; its
 * results go out through `reporter` (a real Reporter, or the fake runner's numbering of events).
 */
function channelFor(
  config: BotConfig,
  handler: CommandHandler,
  reporter: Pick<Reporter, "report">,
  waitS = 2,
) {
  const channel = new CommandChannel(config, handler, reporter, quiet, waitS);
  channels.push(channel);
  channel.start();
  return channel;
}

/** Reports through the fake runner, which numbers them after the statuses it has sent. */
const through = (runner: FakeRunner) => ({
  report: (body: CallbackEventBody) => {
    void runner.send(body);
    return 0;
  },
});

const leave = (botId: number, user = owner, on: TestServer = server) =>
  on.api.post(`/v1/bots/${botId}/leave`, { token: user.token });
const command = (botId: number, commandId: number, user = owner, on: TestServer = server) =>
  on.api.get(`/v1/bots/${botId}/commands/${commandId}`, { token: user.token });
/** What a runner's poll answers right now (wait 0), as the runner's own token asks. */
const pollNow = (config: BotConfig, on: TestServer = server) =>
  new Api(on.url).get(`/v1/bot-callbacks/${config.botId}/commands?wait=0`, {
    token: config.callback.token,
  });

describe("POST /v1/bots/{id}/leave", () => {
  it("is refused 409 while the bot is not in a call, and 404 for another user's bot", async () => {
    const { botId, runner } = await deployedBot(server, owner);
    const early = await leave(botId);
    expect(early.status).toBe(409);
    expect(early.body.detail).toContain("DEPLOYING");
    await reportStatus(runner, "JOINING_CALL");
    await reportStatus(runner, "IN_CALL");
    expect((await leave(botId, stranger)).status).toBe(404);
    await reportStatus(runner, "CALL_ENDED", "EVERYONE_LEFT");
    expect((await leave(botId)).status).toBe(409);
  });

  it("reaches the runner's channel, runs once, and is done with the runner's answer", async () => {
    const { botId, config, runner } = await botInCall();
    const queued = await leave(botId);
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ botId, kind: "leave", status: "queued", error: null, result: null });
    // Asked again while the first is open: the same command, not a second leave.
    const again = await leave(botId);
    expect(again.body.commandId).toBe(queued.body.commandId);

    let release!: () => void;
    const running = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handler = vi.fn(async (_command: PendingCommand) => {
      await running;
      return { leftAt: "now" };
    });
    channelFor(config, handler, through(runner));
    await vi.waitFor(() => expect(handler).toHaveBeenCalledTimes(1), { timeout: 10_000 });
    const sent = await command(botId, queued.body.commandId);
    expect(sent.body.status).toBe("sent");
    expect(sent.body.sentAt).not.toBeNull();
    // Still open, so every poll lists it again; the channel does not run it twice.
    expect((await pollNow(config)).body.commands.map((c: PendingCommand) => c.commandId)).toEqual([
      queued.body.commandId,
    ]);
    release();
    await vi.waitFor(
      async () => expect((await command(botId, queued.body.commandId)).body.status).toBe("done"),
      { timeout: 10_000 },
    );
    const done = await command(botId, queued.body.commandId);
    expect(done.body).toMatchObject({ status: "done", result: { leftAt: "now" }, error: null });
    expect(done.body.completedAt).not.toBeNull();
    expect(handler).toHaveBeenCalledTimes(1);
    expect((await pollNow(config)).body.commands).toEqual([]);
    // Another user cannot read it; an unknown id is 404.
    expect((await command(botId, queued.body.commandId, stranger)).status).toBe(404);
    expect((await command(botId, queued.body.commandId + 1000)).status).toBe(404);
  });

  it("fails with the runner's code and message when the runner refuses it", async () => {
    const { botId, config, runner } = await botInCall();
    const queued = await leave(botId);
    channelFor(
      config,
      async () => {
        throw new CommandRefusal("NOT_IN_CALL", "the bot is not in the call (CALL_ENDED)");
      },
      through(runner),
    );
    await vi.waitFor(
      async () => expect((await command(botId, queued.body.commandId)).body.status).toBe("failed"),
      { timeout: 10_000 },
    );
    expect((await command(botId, queued.body.commandId)).body.error).toEqual({
      code: "NOT_IN_CALL",
      message: "the bot is not in the call (CALL_ENDED)",
    });
  });
});

describe("the runner's end of the channel", () => {
  it("needs the bot's own callback token", async () => {
    const { botId, config } = await botInCall();
    const other = await botInCall();
    const wrong = await new Api(server.url).get(`/v1/bot-callbacks/${botId}/commands?wait=0`, {
      token: other.config.callback.token,
    });
    expect(wrong.status).toBe(401);
    const queued = await leave(botId);
    // Another bot's runner cannot answer this bot's command: its report is noted, nothing more.
    const hijack = await other.runner.send({
      type: "command.result",
      data: { commandId: queued.body.commandId, status: "done" },
    });
    expect(hijack.status).toBe(200);
    expect((await command(botId, queued.body.commandId)).body.status).toBe("queued");
    expect(await warnings(other.botId)).toEqual([
      `result of command ${queued.body.commandId} (done) not kept: no such command`,
    ]);
    expect((await pollNow(config)).body.commands).toHaveLength(1);
  });

  it("refuses a wait that is not 0 to 30 whole seconds (422, the spec's error shape)", async () => {
    const { botId, config } = await botInCall();
    for (const wait of ["31", "-1", "1.5", "soon", ""]) {
      const res = await new Api(server.url).get(`/v1/bot-callbacks/${botId}/commands?wait=${wait}`, {
        token: config.callback.token,
      });
      expect(res.status, `wait=${wait}`).toBe(422);
      expect(validationIssues(res.body)[0]?.loc).toEqual(["query", "wait"]);
    }
  });

  it("a result after the command has an outcome is not kept but noted; a malformed one is 422", async () => {
    const { botId, runner } = await botInCall();
    const queued = await leave(botId);
    const { commandId } = queued.body;
    const bad = await runner.send({ type: "command.result", data: { commandId, status: "maybe" } } as never);
    expect(bad.status).toBe(422);
    const first = await runner.send({ type: "command.result", data: { commandId, status: "done" } });
    expect(first.status).toBe(200);
    expect((await command(botId, commandId)).body.status).toBe("done");
    const second = await runner.send({
      type: "command.result",
      data: { commandId, status: "failed", error: { code: "COMMAND_FAILED", message: "late" } },
    });
    expect(second.status).toBe(200);
    expect((await command(botId, commandId)).body).toMatchObject({ status: "done", error: null });
    expect(await warnings(botId)).toEqual([
      `result of command ${commandId} (failed) not kept: the command is already done`,
    ]);
  });

  it("a poll waiting for a command answers with it once it is queued", async () => {
    const { botId, config } = await botInCall();
    const waiting = new Api(server.url).get(`/v1/bot-callbacks/${botId}/commands?wait=20`, {
      token: config.callback.token,
    });
    // Queued while the poll waits: the poll answers with it, not with an empty list at its end.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const queued = await leave(botId);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.commands).toEqual([{ commandId: queued.body.commandId, kind: "leave", payload: {} }]);
  });
});

describe("commands that never get an answer", () => {
  it("fail DEADLINE_EXCEEDED once their deadline passes, and the runner's late answer is not kept", async () => {
    const { botId, config, runner } = await botInCall();
    const queued = await leave(botId);
    expect((await pollNow(config)).body.commands).toHaveLength(1);
    clock.advance(61_000);
    const failed = await command(botId, queued.body.commandId);
    expect(failed.body.status).toBe("failed");
    expect(failed.body.error?.code).toBe("DEADLINE_EXCEEDED");
    expect((await pollNow(config)).body.commands).toEqual([]);
    // Finished after the deadline, by the report's own time.
    const late = await runner.sendRaw({
      type: "command.result",
      data: { commandId: queued.body.commandId, status: "done" },
      seq: 1_000,
      eventTime: clock.now().toISOString(),
    });
    expect(late.status).toBe(200);
    expect((await command(botId, queued.body.commandId)).body.error?.code).toBe("DEADLINE_EXCEEDED");
    expect(await warnings(botId)).toEqual([
      `result of command ${queued.body.commandId} (done) not kept: the command is already failed (DEADLINE_EXCEEDED)`,
    ]);
    // A new leave may be asked now.
    const next = await leave(botId);
    expect(next.status).toBe(202);
    expect(next.body.commandId).not.toBe(queued.body.commandId);
  });

  it("keeps a result that arrives after the deadline when the runner finished before it (spooled while the server was away)", async () => {
    const { botId, runner } = await botInCall();
    const inTime = await leave(botId);
    clock.advance(61_000);
    // Stamped with the runner's time, a minute before the server's clock now: within the deadline.
    const spooled = await runner.send({
      type: "command.result",
      data: { commandId: inTime.body.commandId, status: "done" },
    });
    expect(spooled.status).toBe(200);
    expect((await command(botId, inTime.body.commandId)).body).toMatchObject({ status: "done", error: null });

    // Finished after its deadline (the report's own time says so): not kept.
    const overdue = await leave(botId);
    clock.advance(61_000);
    const late = await runner.sendRaw({
      type: "command.result",
      data: { commandId: overdue.body.commandId, status: "done" },
      seq: 1_000,
      eventTime: clock.now().toISOString(),
    });
    expect(late.status).toBe(200);
    expect((await command(botId, overdue.body.commandId)).body.error?.code).toBe("DEADLINE_EXCEEDED");
    expect(await warnings(botId)).toEqual([
      `result of command ${overdue.body.commandId} (done) not kept: its deadline has passed`,
    ]);
  });

  it("a result finished in time replaces a DEADLINE_EXCEEDED the server presumed before it arrived", async () => {
    const { botId, runner } = await botInCall();
    const queued = await leave(botId);
    const { commandId } = queued.body;
    const finishedAt = new Date(clock.now().getTime() + 5_000).toISOString();
    clock.advance(61_000);
    expect((await command(botId, commandId)).body.error?.code).toBe("DEADLINE_EXCEEDED");
    // The runner finished it 5 s in, but could only report it now (spooled through an outage).
    const spooled = await runner.sendRaw({
      type: "command.result",
      data: { commandId, status: "done", result: { left: true } },
      seq: 1_000,
      eventTime: finishedAt,
    });
    expect(spooled.status).toBe(200);
    expect((await command(botId, commandId)).body).toMatchObject({
      status: "done",
      result: { left: true },
      error: null,
    });
    const logs = await server.api.get(`/v1/bots/${botId}/logs`, { token: owner.token });
    const messages = (logs.body as { message: string }[]).map((line) => line.message);
    expect(messages).toContain(
      `result of command ${commandId} (done) kept over DEADLINE_EXCEEDED: the runner finished it at ${finishedAt}, in time, and could not report it sooner`,
    );
    expect(await warnings(botId)).toEqual([]);
  });

  it("a result finished before the server ended the bot replaces BOT_ENDED; one finished after does not", async () => {
    const finishedBeforeKill = async () => {
      const { botId, runner } = await botInCall();
      const first = await leave(botId);
      const beforeKill = clock.now().toISOString();
      clock.advance(1_000);
      expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: owner.token })).status).toBe(200);
      expect((await command(botId, first.body.commandId)).body.error?.code).toBe("BOT_ENDED");
      return { botId, runner, commandId: first.body.commandId, beforeKill };
    };
    const inTime = await finishedBeforeKill();
    await inTime.runner.sendRaw({
      type: "command.result",
      data: { commandId: inTime.commandId, status: "done" },
      seq: 1_000,
      eventTime: inTime.beforeKill,
    });
    expect((await command(inTime.botId, inTime.commandId)).body).toMatchObject({
      status: "done",
      error: null,
    });

    const tooLate = await finishedBeforeKill();
    clock.advance(1_000);
    await tooLate.runner.sendRaw({
      type: "command.result",
      data: { commandId: tooLate.commandId, status: "done" },
      seq: 1_000,
      eventTime: clock.now().toISOString(),
    });
    expect((await command(tooLate.botId, tooLate.commandId)).body.error?.code).toBe("BOT_ENDED");
    expect(await warnings(tooLate.botId)).toContain(
      `result of command ${tooLate.commandId} (done) not kept: the command is already failed (BOT_ENDED)`,
    );
  });

  it("fail BOT_ENDED when the bot ends first", async () => {
    const { botId, runner } = await botInCall();
    const queued = await leave(botId);
    await reportStatus(runner, "FATAL", "BROWSER_CRASHED");
    const failed = await command(botId, queued.body.commandId);
    expect(failed.body.status).toBe("failed");
    expect(failed.body.error).toMatchObject({ code: "BOT_ENDED" });
    expect(failed.body.error?.message).toContain("FATAL");
  });
});

describe("a server restart", () => {
  /**
   * A bot in a call on a server of its own (on `dataDir`), reported there by a real Reporter, as
   * the runner's events and command results go: spooled on disk and resent until taken.
   */
  async function botOnOwnServer(dataDir: string) {
    const first = await startTestServer({ dataDir });
    const port = Number(new URL(first.url).port);
    const user = await registerUser(first.api);
    const { botId, config } = await deployedBot(first, user);
    const reporter = new Reporter(config, await mkdtemp(path.join(dataDir, "runner-")), quiet);
    reporters.push(reporter);
    reporter.report({ type: "status", data: { status: "JOINING_CALL" } });
    reporter.report({ type: "status", data: { status: "IN_CALL" } });
    expect(await reporter.flush(10_000)).toBe(true);
    // The runner's address stays the server's: the next one starts on the same port.
    const restart = () => startTestServer({ dataDir, port });
    return { first, restart, user, botId, config, reporter };
  }

  async function dropAll(dataDir: string) {
    await rm(dataDir, { recursive: true, force: true });
    await (await testDatabaseFor(dataDir))?.drop();
  }

  it("loses no command: a leave queued before it reaches the runner after it, and runs once", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-commands-"));
    let first: TestServer | undefined;
    let second: TestServer | undefined;
    try {
      const bot = await botOnOwnServer(dataDir);
      first = bot.first;
      const { botId, config, user } = bot;
      // A poll that waits across the shutdown: it is answered (empty) as the server closes.
      const waiting = new Api(first.url).get(`/v1/bot-callbacks/${botId}/commands?wait=30`, {
        token: config.callback.token,
      });
      const queued = await leave(botId, user, first);
      expect((await waiting).body.commands.map((c: PendingCommand) => c.commandId)).toContain(
        queued.body.commandId,
      );
      await first.close();
      first = undefined;
      second = await bot.restart();
      const handler = vi.fn(async () => undefined);
      channelFor(config, handler, bot.reporter);
      await vi.waitFor(
        async () =>
          expect((await command(botId, queued.body.commandId, user, second)).body.status).toBe("done"),
        { timeout: 10_000 },
      );
      expect(handler).toHaveBeenCalledTimes(1);
    } finally {
      await first?.close();
      await second?.close();
      await dropAll(dataDir);
    }
  });

  it("a result the runner has while the server is away is in before the bot's last status", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-commands-"));
    let first: TestServer | undefined;
    let second: TestServer | undefined;
    try {
      const bot = await botOnOwnServer(dataDir);
      first = bot.first;
      const { botId, config, user, reporter } = bot;
      let release!: () => void;
      const sending = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handler = vi.fn(async () => {
        await sending;
        return { messageId: "m-1" };
      });
      const queued = await first.api.post(`/v1/bots/${botId}/chat`, {
        token: user.token,
        body: { text: "Sent while the server was away" },
      });
      expect(queued.status).toBe(202);
      channelFor(config, handler, reporter);
      await vi.waitFor(() => expect(handler).toHaveBeenCalledTimes(1), { timeout: 10_000 });
      await first.close();
      first = undefined;
      // Done while nobody listens; then the call ends and the runner finishes, all reported later.
      release();
      await vi.waitFor(() => expect(handler).toHaveResolved(), { timeout: 10_000 });
      reporter.report({ type: "status", data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" } });
      reporter.report({ type: "status", data: { status: "DONE" } });
      second = await bot.restart();
      expect(await reporter.flush(20_000)).toBe(true);
      const done = await command(botId, queued.body.commandId, user, second);
      expect(done.body).toMatchObject({ status: "done", result: { messageId: "m-1" }, error: null });
      const after = await second.api.get(`/v1/bots/${botId}`, { token: user.token });
      expect(after.body.status).toBe("DONE");
      expect(handler).toHaveBeenCalledTimes(1);
    } finally {
      await first?.close();
      await second?.close();
      await dropAll(dataDir);
    }
  }, 40_000);

  it("answers a waiting poll at once when the server closes", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-commands-"));
    const alone = await startTestServer({ dataDir });
    try {
      const user = await registerUser(alone.api);
      const { botId, config } = await botInCall(alone, user);
      const waiting = new Api(alone.url).get(`/v1/bot-callbacks/${botId}/commands?wait=30`, {
        token: config.callback.token,
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      // close() would wait the poll's 30 s out (past this test's timeout) if it were not answered.
      await alone.close();
      const answer = await waiting;
      expect(answer.status).toBe(200);
      expect(answer.body.commands).toEqual([]);
    } finally {
      await dropAll(dataDir);
    }
  }, 20_000);
});
