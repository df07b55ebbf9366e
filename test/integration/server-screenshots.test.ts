// Own server (startBuiltApp), not the fixture: its TestClock moves the window and the deadline.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BotConfig, BotStatus, PendingCommand } from "../../src/core/index.js";
import { CommandChannel, type CommandHandler, CommandRefusal } from "../../src/runner/commands.js";
import { uploadArtifact } from "../../src/runner/upload.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import { deployedBot, type FakeRunner, registerUser, type TestUser } from "../helpers/server-harness.js";

/**
 * GET /v1/bots/{id}/screenshot through the runner's own end of the command channel and its real
 * artifact upload, with a handler standing in for the bot's page. The server's clock is a test
 * clock: the one-a-second window and the command's deadline move only when the test says so.
 */

const clock = new TestClock();
const quiet = pino({ level: "silent" });
/** A 1x1 PNG (a real one: its signature is what the server checks). */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
let server: BuiltApp;
let owner: TestUser;
let stranger: TestUser;
let dir: string;
const channels: CommandChannel[] = [];

beforeAll(async () => {
  server = await startBuiltApp({ clock, env: { MEETBOT_WEBHOOK_WORKER: "0" } });
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-screenshots-"));
});
afterAll(async () => {
  await Promise.all(channels.map((channel) => channel.stop(1000)));
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function reportStatus(runner: FakeRunner, status: BotStatus) {
  expect((await runner.send({ type: "status", data: { status } })).status).toBe(200);
}

const screenshot = (botId: number, user = owner) =>
  fetch(`${server.url}/v1/bots/${botId}/screenshot`, { headers: { authorization: `Bearer ${user.token}` } });

/**
 * A running bot whose runner answers screenshot commands with `shoot`'s bytes, uploaded as the
 * real runner does; `shots` counts the commands it ran.
 */
async function runningBot(shoot: (command: PendingCommand) => Promise<Buffer> = async () => PNG) {
  const { botId, config, runner } = await deployedBot(server, owner);
  await reportStatus(runner, "JOINING_CALL");
  const shots: number[] = [];
  const handler: CommandHandler = async (command) => {
    shots.push(command.commandId);
    const file = path.join(dir, `${botId}-${command.commandId}.png`);
    await writeFile(file, await shoot(command));
    await uploadArtifact(config, "live-view.png", file, quiet);
    return { artifact: "live-view.png", sizeBytes: PNG.length, takenAt: new Date().toISOString() };
  };
  const report = (body: Parameters<FakeRunner["send"]>[0]) => {
    void runner.send(body);
    return 0;
  };
  const channel = new CommandChannel(config as BotConfig, handler, { report }, quiet, 1);
  channels.push(channel);
  channel.start();
  return { botId, runner, shots };
}

describe("GET /v1/bots/{id}/screenshot", () => {
  it("answers the runner's PNG, with when it was taken, from the first join step on", async () => {
    const { botId, shots } = await runningBot();
    const res = await screenshot(botId);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Date.parse(res.headers.get("x-screenshot-taken-at") ?? "")).not.toBeNaN();
    expect(Buffer.from(await res.arrayBuffer()).equals(PNG)).toBe(true);
    expect(shots).toHaveLength(1);
  });

  it("401 without a credential, 404 for another user's bot; 409 before the runner started and after the call", async () => {
    const { botId, runner } = await deployedBot(server, owner);
    expect((await fetch(`${server.url}/v1/bots/${botId}/screenshot`)).status).toBe(401);
    expect((await screenshot(botId, stranger)).status).toBe(404);
    const early = await screenshot(botId);
    expect(early.status).toBe(409);
    expect(((await early.json()) as { detail: string }).detail).toContain("DEPLOYING");
    await reportStatus(runner, "JOINING_CALL");
    await reportStatus(runner, "IN_CALL");
    expect(
      (await runner.send({ type: "status", data: { status: "CALL_ENDED", subCode: "EVERYONE_LEFT" } }))
        .status,
    ).toBe(200);
    expect((await screenshot(botId)).status).toBe(409);
  });

  it("takes at most one a second: asks at once share one command, and an ask within the second gets the last", async () => {
    const { botId, shots } = await runningBot();
    const answers = await Promise.all([screenshot(botId), screenshot(botId), screenshot(botId)]);
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
    expect(shots).toHaveLength(1);
    expect((await screenshot(botId)).status).toBe(200);
    expect(shots).toHaveLength(1);
    clock.advance(1_001);
    expect((await screenshot(botId)).status).toBe(200);
    expect(shots).toHaveLength(2);
  });

  it("502 when the runner's upload is not a PNG (bytes from a runner are untrusted)", async () => {
    const { botId } = await runningBot(async () => Buffer.from("<html><script>alert(1)</script></html>"));
    const res = await screenshot(botId);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toBe("The bot's screenshot is not a PNG");
  });

  it("409 when the runner no longer has the page, 502 when it could not shoot it", async () => {
    const gone = await runningBot(async () => {
      throw new CommandRefusal("NOT_IN_CALL", "the bot has no meeting page (CALL_ENDED)");
    });
    expect((await screenshot(gone.botId)).status).toBe(409);
    const broken = await runningBot(async () => {
      throw new Error("page crashed");
    });
    const res = await screenshot(broken.botId);
    expect(res.status).toBe(502);
    expect(((await res.json()) as { detail: string }).detail).toContain("page crashed");
  });

  it("504 when the runner does not answer before the command's deadline", async () => {
    let taken!: () => void;
    const sent = new Promise<void>((resolve) => (taken = resolve));
    const { botId } = await runningBot(() => {
      taken();
      return new Promise<Buffer>(() => {});
    });
    const asking = screenshot(botId);
    await sent;
    clock.advance(16_000);
    const res = await asking;
    expect(res.status).toBe(504);
  });
});
