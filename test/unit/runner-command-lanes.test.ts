import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { CallbackEventBody, PendingCommand } from "../../src/core/index.js";
import { CommandChannel } from "../../src/runner/commands.js";

/**
 * The runner's command lanes (core COMMAND_LANES): sounds wait for each other, while a stop, a
 * leave or a chat message never waits behind a sound that is playing. A poll server on loopback
 * hands the channel its commands; the handler stands in for the lifecycle.
 */
let server: Server | undefined;
let channel: CommandChannel | undefined;
afterEach(async () => {
  await channel?.stop(500);
  await new Promise((resolve) => server?.close(resolve));
});

/** A poll server that answers with `commands` (until each has a result) and empty lists after. */
async function pollServer(commands: PendingCommand[], done: Set<number>): Promise<string> {
  server = createServer((request, response) => {
    const open = commands.filter((command) => !done.has(command.commandId));
    const answer = () => {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ commands: open }));
    };
    // An empty answer waits a little, as the real long poll does.
    if (open.length === 0) setTimeout(answer, 100);
    else answer();
    request.resume();
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const play = (commandId: number): PendingCommand => ({ commandId, kind: "play_audio", payload: {} });

describe("the runner's command lanes", () => {
  it("a stop runs while a sound plays; a second sound waits for the first", async () => {
    const done = new Set<number>();
    const baseUrl = await pollServer(
      [play(1), play(2), { commandId: 3, kind: "stop_audio", payload: {} }],
      done,
    );
    const order: string[] = [];
    let endFirst!: () => void;
    const firstPlaying = new Promise<void>((resolve) => {
      endFirst = resolve;
    });
    const reported: CallbackEventBody[] = [];
    channel = new CommandChannel(
      { botId: 1, callback: { baseUrl, token: "t".repeat(32) } },
      async (command) => {
        order.push(`start ${command.commandId}`);
        if (command.commandId === 1) await firstPlaying;
        if (command.commandId === 3) endFirst();
        order.push(`end ${command.commandId}`);
        return undefined;
      },
      {
        report: (body) => {
          reported.push(body);
          if (body.type === "command.result") done.add(body.data.commandId);
          return reported.length;
        },
      },
      pino({ level: "silent" }),
      1,
    );
    channel.start();
    await expect.poll(() => done.size, { timeout: 5_000 }).toBe(3);
    // The stop (control lane) started and ended while sound 1 played; sound 2 only after sound 1.
    expect(order).toEqual(["start 1", "start 3", "end 3", "end 1", "start 2", "end 2"]);
    expect(reported.map((body) => body.type === "command.result" && body.data.commandId)).toEqual([3, 1, 2]);
  });

  it("pictures run in their own lane: shown while a sound plays, a hide after the show before it", async () => {
    const done = new Set<number>();
    const baseUrl = await pollServer(
      [
        play(1),
        { commandId: 2, kind: "show_image", payload: {} },
        { commandId: 3, kind: "hide_image", payload: {} },
      ],
      done,
    );
    const order: string[] = [];
    let endSound!: () => void;
    const sound = new Promise<void>((resolve) => {
      endSound = resolve;
    });
    let endShow!: () => void;
    const showing = new Promise<void>((resolve) => {
      endShow = resolve;
    });
    channel = new CommandChannel(
      { botId: 1, callback: { baseUrl, token: "t".repeat(32) } },
      async (command) => {
        order.push(`start ${command.commandId}`);
        if (command.commandId === 1) await sound;
        if (command.commandId === 2) await showing;
        order.push(`end ${command.commandId}`);
        if (command.commandId === 3) endSound();
        return undefined;
      },
      {
        report: (body) => {
          if (body.type === "command.result") done.add(body.data.commandId);
          return done.size;
        },
      },
      pino({ level: "silent" }),
      1,
    );
    channel.start();
    // The show started beside the sound; the hide waits for the show, not for the sound.
    await expect.poll(() => order, { timeout: 5_000 }).toEqual(["start 1", "start 2"]);
    endShow();
    await expect.poll(() => done.size, { timeout: 5_000 }).toBe(3);
    expect(order).toEqual(["start 1", "start 2", "end 2", "start 3", "end 3", "end 1"]);
  });
});
