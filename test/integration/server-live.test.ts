import { afterAll, describe, expect, vi } from "vitest";
import { test } from "../helpers/fixtures.js";
import { WebSocket } from "ws";
import type { CallbackEventBody } from "../../src/core/index.js";
import { type SseEvent, StreamClient } from "../helpers/sse-client.js";
import {
  Api,
  deployedBot,
  mp4Bytes,
  type FakeRunner,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";

/**
 * The live meeting on the server's side: what a runner reports of it (transcript partials and
 * finals, chat messages) reaching a bot's live stream (GET /v1/bots/{id}/live) in order and
 * resumable, the chat list, webhooks (partials only to a subscription that names them), the bot
 * options, and the chat command.
 */

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
const clients: StreamClient[] = [];

test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  webhooks: { worker: false },
  logLevel: "error",
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
});
afterAll(async () => {
  for (const client of clients) client.close();
});

async function live(botId: number, headers: Record<string, string> = {}, user = owner) {
  const client = await StreamClient.open(server.url, user.token, headers, `/v1/bots/${botId}/live`);
  clients.push(client);
  return client;
}

async function send(runner: FakeRunner, event: CallbackEventBody) {
  const res = await runner.send(event);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const ALICE = { participantId: "p-1", name: "Alice Example" };
const utterance = (text: string, endMs: number) => ({
  utteranceId: "u-1",
  speaker: ALICE,
  text,
  startMs: 1000,
  endMs,
  source: "captions" as const,
  language: "en",
});
const chat = (messageId: string, text: string) => ({
  messageId,
  sender: ALICE,
  text,
  sentAt: "2026-11-26T09:00:05.000Z",
  fromBot: false,
});

/** A bot in a call whose runner reports a line growing, settling, and a chat message shown twice. */
async function meetingWithALine() {
  const bot = await deployedBot(server, owner, { liveTranscript: { source: "captions" } });
  await send(bot.runner, { type: "status", data: { status: "JOINING_CALL" } });
  await send(bot.runner, { type: "status", data: { status: "IN_CALL" } });
  return bot;
}

/**
 * `partialSeen(text)`: waits until a client has the partial of `text`. What comes next replaces it
 * (only the newest partial of a line is kept, and a final replaces them all), so a client that
 * every partial is meant to reach must have read each one first; on a loaded machine the stream
 * once read the first only after the second, and once the second only after the final.
 */
async function reportTheLine(
  runner: FakeRunner,
  partialSeen: (text: string) => Promise<unknown> = async () => {},
) {
  await send(runner, { type: "transcript.partial", data: utterance("I will", 1500) });
  await partialSeen("I will");
  await send(runner, { type: "transcript.partial", data: utterance("I will send the", 2100) });
  await partialSeen("I will send the");
  await send(runner, { type: "chat.message", data: chat("m-1", "hello all") });
  await send(runner, { type: "transcript.final", data: utterance("I will send the report", 2600) });
  // The chat panel re-rendered: the same message again, under a new seq.
  await send(runner, { type: "chat.message", data: chat("m-1", "hello all") });
}

const summary = (events: SseEvent[]) =>
  events.map((e) => (e.event.startsWith("transcript") ? `${e.event} ${e.data.data.text}` : e.event));

describe("GET /v1/bots/{id}/live", () => {
  test("sends what the runner reports, in order: every partial while the line grows, one final, each chat message once", async () => {
    const { botId, runner } = await meetingWithALine();
    const client = await live(botId);
    expect(client.status).toBe(200);
    await reportTheLine(runner, (text) =>
      client.until((list) => list.some((e) => e.event === "transcript.partial" && e.data.data.text === text)),
    );
    await send(runner, {
      type: "participant.joined",
      data: { participantId: "p-2", participantName: "Bob" },
    });
    const events = await client.until((list) => list.some((e) => e.event === "participant.joined"));
    expect(summary(events)).toEqual([
      "transcript.partial I will",
      "transcript.partial I will send the",
      "chat.message",
      "transcript.final I will send the report",
      "participant.joined",
    ]);
    const final = events[3] as SseEvent;
    expect(final.data).toMatchObject({
      botId,
      type: "transcript.final",
      data: utterance("I will send the report", 2600),
    });
    expect(Number(final.id)).toBe(final.data.id);
  });

  test("resumes after Last-Event-ID with nothing missed, and without the partials a final replaced", async () => {
    const { botId, runner } = await meetingWithALine();
    const first = await live(botId, { "last-event-id": "0" });
    await reportTheLine(runner);
    const seen = await first.until((list) => list.some((e) => e.event === "transcript.final"));
    const inCall = seen.find((e) => e.event === "status" && e.data.data.status === "IN_CALL") as SseEvent;
    expect(inCall).toBeDefined();
    first.close();
    // The client dropped after IN_CALL: a reconnect gets everything after it.
    const again = await live(botId, { "last-event-id": inCall.id });
    const resumed = await again.until((list) => list.some((e) => e.event === "transcript.final"));
    expect(summary(resumed)).toEqual(["chat.message", "transcript.final I will send the report"]);
  });

  test("is the owner's only: another user's bot is 404", async () => {
    const { botId } = await meetingWithALine();
    const client = await live(botId, {}, stranger);
    expect(client.status).toBe(404);
  });
});

/** A WebSocket client of the bot's live stream that keeps every message and how it closed. */
function socket(botId: number, headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/bots/${botId}/live/ws`, { headers });
  const received: Array<{ id: number; type: string; data: Record<string, unknown> }> = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on("message", (data) => received.push(JSON.parse(String(data))));
  const opened = new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return { ws, received, closed, opened };
}

describe("GET /v1/bots/{id}/live/ws", () => {
  test("sends the same events as JSON messages, with the token in a header or in the first message, and resumes", async () => {
    const { botId, runner } = await meetingWithALine();
    const byHeader = socket(botId, { authorization: `Bearer ${owner.token}` });
    await byHeader.opened;
    // Sent once the socket is open, maybe before the server has checked the token: the stream
    // starts where the socket opened, so it arrives all the same.
    await send(runner, {
      type: "participant.joined",
      data: { participantId: "p-2", participantName: "Bob" },
    });
    await vi.waitFor(() => expect(byHeader.received.map((e) => e.type)).toContain("participant.joined"), {
      timeout: 10_000,
    });
    await reportTheLine(runner, (text) =>
      vi.waitFor(
        () =>
          expect(
            byHeader.received.filter((e) => e.type === "transcript.partial").map((e) => e.data.text),
          ).toContain(text),
        { timeout: 10_000 },
      ),
    );
    await vi.waitFor(() => expect(byHeader.received.map((e) => e.type)).toContain("transcript.final"), {
      timeout: 10_000,
    });
    expect(
      byHeader.received.map((e) => (e.type.startsWith("transcript") ? `${e.type} ${e.data.text}` : e.type)),
    ).toEqual([
      "participant.joined",
      "transcript.partial I will",
      "transcript.partial I will send the",
      "chat.message",
      "transcript.final I will send the report",
    ]);
    byHeader.ws.close();
    // A browser: no headers; the credential and where to resume come in the first message.
    const first = byHeader.received[0] as { id: number };
    const byMessage = socket(botId);
    await byMessage.opened;
    byMessage.ws.send(JSON.stringify({ type: "auth", token: owner.token, lastEventId: first.id }));
    await send(runner, {
      type: "participant.left",
      data: { participantId: "p-1", participantName: "Alice Example" },
    });
    await vi.waitFor(() => expect(byMessage.received.map((e) => e.type)).toContain("participant.left"), {
      timeout: 10_000,
    });
    expect(byMessage.received.map((e) => e.type)).toEqual([
      "chat.message",
      "transcript.final",
      "participant.left",
    ]);
    byMessage.ws.close();
  });

  test("without a resume id starts where the socket opened: an event stored before the auth message arrives", async () => {
    const { botId, runner } = await meetingWithALine();
    const client = socket(botId);
    await client.opened;
    await send(runner, {
      type: "participant.joined",
      data: { participantId: "p-3", participantName: "Cleo" },
    });
    client.ws.send(JSON.stringify({ type: "auth", token: owner.token }));
    await vi.waitFor(() => expect(client.received.map((e) => e.type)).toContain("participant.joined"), {
      timeout: 10_000,
    });
    await send(runner, { type: "participant.left", data: { participantId: "p-3", participantName: "Cleo" } });
    await vi.waitFor(() => expect(client.received.map((e) => e.type)).toContain("participant.left"), {
      timeout: 10_000,
    });
    // Nothing from before the socket opened (the meeting's statuses), all that came after.
    expect(client.received.map((e) => e.type)).toEqual(["participant.joined", "participant.left"]);
    client.ws.close();
  });

  test("closes 4401 for a bad credential, 4404 for another user's bot, 4400 for a first message that is not auth", async () => {
    const { botId } = await meetingWithALine();
    const bad = socket(botId, { authorization: "Bearer not-a-token" });
    expect((await bad.closed).code).toBe(4401);
    const theirs = socket(botId);
    await theirs.opened;
    theirs.ws.send(JSON.stringify({ type: "auth", token: stranger.token }));
    expect((await theirs.closed).code).toBe(4404);
    const garbled = socket(botId);
    await garbled.opened;
    garbled.ws.send("hello");
    expect((await garbled.closed).code).toBe(4400);
  });
});

describe("the chat", () => {
  test("lists each message once, oldest first", async () => {
    const { botId, runner } = await meetingWithALine();
    await reportTheLine(runner);
    await send(runner, {
      type: "chat.message",
      data: { ...chat("m-2", "on it"), sender: null, fromBot: true, sentAt: "2026-11-26T09:00:09.000Z" },
    });
    const list = await server.api.get(`/v1/bots/${botId}/chat-messages`, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, page: 1 });
    expect(list.body.messages).toEqual([
      {
        messageId: "m-1",
        sender: ALICE,
        text: "hello all",
        sentAt: "2026-11-26T09:00:05.000Z",
        fromBot: false,
      },
      { messageId: "m-2", sender: null, text: "on it", sentAt: "2026-11-26T09:00:09.000Z", fromBot: true },
    ]);
    expect((await server.api.get(`/v1/bots/${botId}/chat-messages`, { token: stranger.token })).status).toBe(
      404,
    );
  });

  test("sends a message as a command the runner receives; too long for Meet is 422 before anything is queued", async () => {
    const { botId, config } = await meetingWithALine();
    const tooLong = await server.api.post(`/v1/bots/${botId}/chat`, {
      token: owner.token,
      body: { text: "x".repeat(501) },
    });
    expect(tooLong.status).toBe(422);
    expect(validationIssues(tooLong.body)[0]).toMatchObject({ loc: ["body", "text"] });
    expect(validationIssues(tooLong.body)[0]?.msg).toContain("500");
    const sent = await server.api.post(`/v1/bots/${botId}/chat`, {
      token: owner.token,
      body: { text: "x".repeat(500) },
    });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ kind: "chat", status: "queued" });
    const poll = await new Api(server.url).get(`/v1/bot-callbacks/${botId}/commands?wait=0`, {
      token: config.callback.token,
    });
    expect(poll.body.commands).toEqual([
      { commandId: sent.body.commandId, kind: "chat", payload: { text: "x".repeat(500) } },
    ]);
  });

  test("refuses a message to a bot that is not in a call (409)", async () => {
    const { botId } = await deployedBot(server, owner);
    const res = await server.api.post(`/v1/bots/${botId}/chat`, { token: owner.token, body: { text: "hi" } });
    expect(res.status).toBe(409);
  });
});

describe("bot options", () => {
  test("keeps liveTranscript and chat.onJoin, shows them, and gives them to the runner", async () => {
    const { botId, config } = await deployedBot(server, owner, {
      liveTranscript: { source: "captions", language: "en-US", fallback: true },
      chat: { onJoin: "This meeting is recorded" },
    });
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body.liveTranscript).toEqual({ source: "captions", language: "en-US", fallback: true });
    expect(bot.body.chat).toEqual({ onJoin: "This meeting is recorded" });
    expect(config.liveTranscript).toEqual({ source: "captions", language: "en-US", fallback: true });
    expect(config.chat).toEqual({ onJoin: "This meeting is recorded" });
  });

  test("keeps output.keepMicOn, gives it to the runner, and a PATCH replaces it whole", async () => {
    const { botId, config } = await deployedBot(server, owner, { output: { keepMicOn: true } });
    expect((await server.api.get(`/v1/bots/${botId}`, { token: owner.token })).body.output).toEqual({
      keepMicOn: true,
    });
    expect(config.output).toEqual({ keepMicOn: true });
    const base = { meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" } };
    const plain = await server.api.post("/v1/bots", { token: owner.token, body: base });
    expect(plain.body.output).toEqual({});
    const bad = await server.api.post("/v1/bots", {
      token: owner.token,
      body: { ...base, output: { keepMicOn: "yes" } },
    });
    expect(bad.status).toBe(422);
    expect(validationIssues(bad.body)[0]?.loc).toEqual(["body", "output", "keepMicOn"]);
    const patched = await server.api.patch(`/v1/bots/${plain.body.id}`, {
      token: owner.token,
      body: { output: { keepMicOn: false } },
    });
    expect(patched.body.output).toEqual({ keepMicOn: false });
    const cleared = await server.api.patch(`/v1/bots/${plain.body.id}`, {
      token: owner.token,
      body: { output: {} },
    });
    expect(cleared.body.output).toEqual({});
  });

  test("refuses an onJoin message longer than the platform's chat takes, and a bad source", async () => {
    const base = { meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" } };
    const tooLong = await server.api.post("/v1/bots", {
      token: owner.token,
      body: { ...base, chat: { onJoin: "y".repeat(501) } },
    });
    expect(tooLong.status).toBe(422);
    expect(validationIssues(tooLong.body)[0]?.loc).toEqual(["body", "chat", "onJoin"]);
    const badSource = await server.api.post("/v1/bots", {
      token: owner.token,
      body: { ...base, liveTranscript: { source: "telepathy" } },
    });
    expect(badSource.status).toBe(422);
    expect(validationIssues(badSource.body)[0]?.loc).toEqual(["body", "liveTranscript", "source"]);
    // PATCH to Meet with a message over 500 is refused too; the bot keeps what it had.
    const created = await server.api.post("/v1/bots", { token: owner.token, body: base });
    const patched = await server.api.patch(`/v1/bots/${created.body.id}`, {
      token: owner.token,
      body: { chat: { onJoin: "z".repeat(600) } },
    });
    expect(patched.status).toBe(422);
    expect((await server.api.get(`/v1/bots/${created.body.id}`, { token: owner.token })).body.chat).toEqual(
      {},
    );
  });
});

/** The bot's transcript once the job worker has stored it. */
async function storedTranscript(botId: number) {
  return vi.waitFor(
    async () => {
      const res = await server.api.get(`/v1/transcripts/${botId}`, { token: owner.token });
      expect(res.status).toBe(200);
      return res.body;
    },
    { timeout: 15_000, interval: 100 },
  );
}

describe("the stored transcript", () => {
  const final = (utteranceId: string, name: string | null, text: string, startMs: number) => ({
    utteranceId,
    speaker: name === null ? null : { participantId: `p-${name}`, name },
    text,
    startMs,
    endMs: startMs + 900,
    source: "captions" as const,
    language: "en",
  });

  test("is the finals, in the order they started, once the runner is done (not before)", async () => {
    const { botId, runner } = await meetingWithALine();
    await send(runner, { type: "transcript.final", data: final("u-2", "Bob", "on it", 4000) });
    await send(runner, {
      type: "transcript.final",
      data: final("u-1", "Alice", "I will send the report", 1000),
    });
    // A line that never settled is not in the transcript.
    await send(runner, { type: "transcript.partial", data: final("u-3", null, "and one more", 6000) });
    const upload = await runner.upload(mp4Bytes(4096), 8000);
    expect(upload.status).toBe(201);
    await send(runner, { type: "status", data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" } });
    const waiting = await server.api.get(`/v1/transcripts/${botId}/status`, { token: owner.token });
    expect(waiting.body).toMatchObject({ status: "queued", engine: "live" });
    await send(runner, { type: "status", data: { status: "DONE" } });
    const transcript = await storedTranscript(botId);
    expect(transcript).toMatchObject({
      engine: "live",
      language: "en",
      text: "I will send the report on it",
    });
    expect(transcript.utterances.map((u) => [u.speaker?.name, u.text])).toEqual([
      ["Alice", "I will send the report"],
      ["Bob", "on it"],
    ]);
  });

  test("is made from what a failing bot delivered: its recording so far, its finals so far", async () => {
    const { botId, runner } = await meetingWithALine();
    await send(runner, { type: "transcript.final", data: final("u-1", "Alice", "before the crash", 500) });
    expect((await runner.upload(mp4Bytes(4096), 1500)).status).toBe(201);
    await send(runner, { type: "status", data: { status: "FATAL", subCode: "BROWSER_CRASHED" } });
    const transcript = await storedTranscript(botId);
    expect(transcript.text).toBe("before the crash");
  });

  test("without a recording there is no transcript: the finals stay in the live stream", async () => {
    const { botId, runner } = await meetingWithALine();
    await send(runner, { type: "transcript.final", data: final("u-1", "Alice", "nothing recorded", 500) });
    await send(runner, { type: "status", data: { status: "FATAL", subCode: "RECORDING_FAILED" } });
    expect((await server.api.get(`/v1/transcripts/${botId}`, { token: owner.token })).status).toBe(404);
    const replay = await live(botId, { "last-event-id": "0" });
    const events = await replay.until((list) => list.some((e) => e.event === "transcript.final"));
    expect(events.find((e) => e.event === "transcript.final")?.data.data.text).toBe("nothing recorded");
  });

  test("refuses a bot asked for both a live transcript and a transcription (422)", async () => {
    const res = await server.api.post("/v1/bots", {
      token: owner.token,
      body: {
        meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" },
        liveTranscript: { source: "captions" },
        transcription: { engine: "pocketsphinx" },
      },
    });
    expect(res.status).toBe(422);
    expect(validationIssues(res.body)[0]?.loc).toEqual(["body", "transcription"]);
  });
});

describe("webhooks", () => {
  test("sends transcript.final and chat.message once to '*', and partials only to a subscription that names them", async () => {
    const user = await registerUser(server.api, "Webhook Owner");
    const all = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "all", url: "https://hooks.example.com/all", events: ["*"] },
    });
    const partials = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "partials", url: "https://hooks.example.com/partials", events: ["transcript.partial"] },
    });
    expect(all.status).toBe(201);
    const bot = await deployedBot(server, user, { liveTranscript: { source: "captions" } });
    await send(bot.runner, { type: "status", data: { status: "JOINING_CALL" } });
    await send(bot.runner, { type: "status", data: { status: "IN_CALL" } });
    await reportTheLine(bot.runner);
    const eventsOf = async (webhookId: number) => {
      const res = await server.api.get(`/v1/webhooks/${webhookId}/deliveries?page_size=100`, {
        token: user.token,
      });
      return (res.body.deliveries as Array<{ event: string }>).map((d) => d.event).sort();
    };
    const toAll = await eventsOf(all.body.id);
    expect(toAll.filter((e) => e.startsWith("transcript") || e.startsWith("chat"))).toEqual([
      "chat.message",
      "transcript.final",
    ]);
    expect(await eventsOf(partials.body.id)).toEqual(["transcript.partial", "transcript.partial"]);
  });
});
