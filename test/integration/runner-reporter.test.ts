import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { CallbackEvent } from "../../src/core/index.js";
import { Reporter } from "../../src/runner/reporter.js";

/** A real HTTP endpoint standing where the control plane's callback route would be. */
async function startReceiver(
  answer: (event: CallbackEvent, req: IncomingMessage) => number | { code: number; body: unknown },
) {
  const received: CallbackEvent[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const event = JSON.parse(body) as CallbackEvent;
      const answered = answer(event, req);
      const { code, body: reply } = typeof answered === "number" ? { code: answered, body: {} } : answered;
      if (code < 300) received.push(event);
      res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { received, baseUrl: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

const silent = pino({ level: "silent" });
const token = "test-callback-token-0123456789";
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0)) await fn();
});

/** A reporter for bot 3 of `baseUrl`, stopped after the test. */
function reporterFor(baseUrl: string, workDir: string, botId = 3): Reporter {
  const reporter = new Reporter({ botId, callback: { baseUrl, token } }, workDir, silent);
  cleanup.push(() => reporter.stop());
  return reporter;
}

describe("Reporter", () => {
  it("tells the runner once when the control plane has ended its bot (killed, timed out, deleted)", async () => {
    let serverStatus = "IN_CALL";
    const receiver = await startReceiver(() => ({
      code: 200,
      body: { applied: true, status: serverStatus },
    }));
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    const ended: string[] = [];
    reporter.onEndedByServer((why) => ended.push(why));
    reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(ended).toEqual([]);

    serverStatus = "FATAL"; // e.g. POST /v1/bots/{id}/kill
    reporter.report({ type: "heartbeat", data: {} });
    reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(ended).toEqual(["the control plane marked this bot FATAL"]);
  });

  it("does not take the server's echo of the runner's own end for a stop", async () => {
    const receiver = await startReceiver((event) => ({
      code: 200,
      body: { applied: true, status: event.type === "status" ? event.data.status : "CALL_ENDED" },
    }));
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    const ended: string[] = [];
    reporter.onEndedByServer((why) => ended.push(why));
    reporter.report({ type: "status", data: { status: "DONE" } });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(ended).toEqual([]);
  });

  it("takes a 404 (the bot was deleted) as the end of the bot", async () => {
    const receiver = await startReceiver(() => 404);
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    const ended: string[] = [];
    reporter.onEndedByServer((why) => ended.push(why));
    reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(ended).toEqual(["the control plane no longer knows this bot"]);
  });

  it("takes a 401 as the end of the bot, unless the server already has the runner's own end", async () => {
    let finished = false;
    const receiver = await startReceiver((event) => {
      if (finished) return 401; // the callback token died with the bot
      if (event.type === "status" && event.data.status === "DONE") finished = true;
      return { code: 200, body: { applied: true, status: "IN_CALL" } };
    });
    cleanup.push(receiver.close);
    const lines: { msg: string; seq?: number }[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const workDir = mkdtempSync(join(tmpdir(), "reporter-"));
    const reporter = new Reporter({ botId: 3, callback: { baseUrl: receiver.baseUrl, token } }, workDir, log);
    cleanup.push(() => reporter.stop());
    const ended: string[] = [];
    reporter.onEndedByServer((why) => ended.push(why));
    reporter.report({ type: "status", data: { status: "DONE" } });
    const late = reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(ended).toEqual([]);
    expect(lines.filter((l) => l.msg === "the bot has ended; event not taken").map((l) => l.seq)).toEqual([
      late,
    ]);

    // A runner whose bot ended long ago without it (its token expired): it is told to stop.
    const other = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    other.onEndedByServer((why) => ended.push(why));
    other.report({ type: "heartbeat", data: {} });
    expect(await other.flush(10_000)).toBe(true);
    expect(ended).toEqual(["the control plane no longer takes this bot's reports"]);
  });

  it("delivers events in order with seq from 1 and the bot's token", async () => {
    const auth: string[] = [];
    const receiver = await startReceiver((_e, req) => {
      auth.push(req.headers.authorization ?? "");
      return 200;
    });
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    reporter.report({ type: "status", data: { status: "JOINING_CALL" } });
    reporter.report({ type: "participant.joined", data: { participantId: "a", participantName: "Alice" } });
    reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(receiver.received.map((e) => [e.seq, e.type])).toEqual([
      [1, "status"],
      [2, "participant.joined"],
      [3, "heartbeat"],
    ]);
    expect(new Set(auth)).toEqual(new Set([`Bearer ${token}`]));
  });

  it("keeps retrying through server errors without losing or reordering events", async () => {
    let failuresLeft = 4;
    const receiver = await startReceiver(() => (failuresLeft-- > 0 ? 503 : 200));
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    for (let i = 0; i < 5; i++) reporter.report({ type: "log", data: { level: "info", message: `m${i}` } });
    expect(await reporter.flush(20_000)).toBe(true);
    expect(receiver.received.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it("spools to disk first, and a new run on the same work dir resends only what was not acknowledged", async () => {
    const workDir = mkdtempSync(join(tmpdir(), "reporter-"));
    // First run: the control plane is unreachable (nothing listens on this port).
    const down = await startReceiver(() => 200);
    await down.close();
    const first = new Reporter({ botId: 9, callback: { baseUrl: down.baseUrl, token } }, workDir, silent);
    first.report({ type: "status", data: { status: "JOINING_CALL" } });
    first.report({ type: "status", data: { status: "IN_CALL" } });
    expect(await first.flush(300)).toBe(false);
    first.stop();
    const spooled = readFileSync(join(workDir, "events.jsonl"), "utf8").trim().split("\n");
    expect(spooled.map((l) => JSON.parse(l).seq)).toEqual([1, 2]);

    // Second run: the server is back; the old events go first, new ones continue the numbering.
    const receiver = await startReceiver(() => 200);
    cleanup.push(receiver.close);
    const second = new Reporter(
      { botId: 9, callback: { baseUrl: receiver.baseUrl, token } },
      workDir,
      silent,
    );
    cleanup.push(() => second.stop());
    second.report({ type: "status", data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" } });
    expect(await second.flush(10_000)).toBe(true);
    expect(receiver.received.map((e) => e.seq)).toEqual([1, 2, 3]);

    // Third run: everything was acknowledged, so nothing is resent.
    const third = new Reporter({ botId: 9, callback: { baseUrl: receiver.baseUrl, token } }, workDir, silent);
    cleanup.push(() => third.stop());
    expect(third.idle).toBe(true);
  });

  it("does not block the queue on an event the server refuses for good", async () => {
    const receiver = await startReceiver((event) => (event.seq === 1 ? 409 : 200));
    cleanup.push(receiver.close);
    const reporter = reporterFor(receiver.baseUrl, mkdtempSync(join(tmpdir(), "reporter-")));
    reporter.report({ type: "status", data: { status: "IN_CALL" } });
    reporter.report({ type: "heartbeat", data: {} });
    expect(await reporter.flush(10_000)).toBe(true);
    expect(receiver.received.map((e) => e.seq)).toEqual([2]);
  });
});
