import { Writable } from "node:stream";
import pino from "pino";
import { expect, it } from "vitest";
import { carryOnAfterStrayRejections } from "../../src/runner/main.js";

it("logs a rejection nobody handled, with its stack, until undone", () => {
  const lines: Array<{ level: number; msg: string; err: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const before = process.listeners("unhandledRejection");
  const undo = carryOnAfterStrayRejections(pino({ level: "info" }, sink));
  const added = process.listeners("unhandledRejection").filter((listener) => !before.includes(listener));
  expect(added).toHaveLength(1);
  const [listener] = added as [(reason: unknown, promise: Promise<unknown>) => void];
  listener(new Error("the chat feed failed with its browser"), Promise.resolve());
  listener("not an error", Promise.resolve());
  expect(lines.map((line) => [line.level, line.msg])).toEqual([
    [50, "a failed promise nobody handled (a bug); the bot carries on"],
    [50, "a failed promise nobody handled (a bug); the bot carries on"],
  ]);
  expect(lines[0]?.err).toMatch(/^Error: the chat feed failed with its browser\n\s+at /);
  expect(lines[1]?.err).toBe("not an error");
  undo();
  expect(process.listeners("unhandledRejection")).toEqual(before);
});
