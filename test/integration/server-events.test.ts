import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deployedBot,
  type FakeRunner,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";

let server: TestServer;
let user: TestUser;
beforeAll(async () => {
  server = await startTestServer();
  user = await registerUser(server.api);
});
afterAll(() => server?.close());

const get = (p: string, token = user.token) => server.api.get(p, { token });
const types = (list: { eventType: string }[]) => list.map((e) => e.eventType);

async function intoCall(runner: FakeRunner) {
  await runner.status("JOINING_CALL");
  await runner.status("IN_CALL");
}

describe("GET /v1/bots/:id/events", () => {
  it("lists the bot's events in order with their data", async () => {
    const { botId, runner } = await deployedBot(server, user, { meetingTitle: "Design review" });
    await intoCall(runner);
    await runner.send({ type: "participant.joined", data: { participantId: "a", participantName: "Alice" } });
    await runner.send({ type: "participant.joined", data: { participantId: "b", participantName: "Bob" } });
    await runner.send({ type: "participant.left", data: { participantId: "a", participantName: "Alice" } });
    const res = await get(`/v1/bots/${botId}/events`);
    expect(res.status).toBe(200);
    expect(types(res.body)).toEqual([
      "BOT_JOINED",
      "PARTICIPANT_JOINED",
      "PARTICIPANT_JOINED",
      "PARTICIPANT_LEFT",
    ]);
    expect(res.body.map((e: { data: { participantName?: string } }) => e.data?.participantName)).toEqual([
      undefined,
      "Alice",
      "Bob",
      "Alice",
    ]);
    const ids = res.body.map((e: { id: number }) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (const e of res.body)
      expect(e).toEqual({
        id: expect.any(Number),
        eventType: e.eventType,
        eventTime: expect.any(String),
        data: e.data,
      });
  });
});

describe("GET /v1/bots/:id/logs", () => {
  it("filters by exact level and keeps the newest `limit` entries, oldest first", async () => {
    const { botId, runner } = await deployedBot(server, user);
    for (let i = 1; i <= 5; i++)
      await runner.send({ type: "log", data: { level: "info", message: `step ${i}` } });
    await runner.send({ type: "log", data: { level: "warn", message: "slow network" } });
    await runner.send({ type: "log", data: { level: "error", message: "camera blocked" } });

    const all = await get(`/v1/bots/${botId}/logs`);
    expect(all.body).toHaveLength(8); // "deployment started" + 7
    const last3 = await get(`/v1/bots/${botId}/logs?limit=3`);
    expect(last3.body.map((l: { message: string }) => l.message)).toEqual([
      "step 5",
      "slow network",
      "camera blocked",
    ]);
    const warn = await get(`/v1/bots/${botId}/logs?level=warn`);
    expect(warn.body.map((l: { level: string; message: string }) => [l.level, l.message])).toEqual([
      ["warn", "slow network"],
    ]);
    const infos = await get(`/v1/bots/${botId}/logs?level=info&limit=2`);
    expect(infos.body.map((l: { message: string }) => l.message)).toEqual(["step 4", "step 5"]);
  });

  it("answers 422 for a limit out of 1..1000 and an unknown level", async () => {
    const { botId } = await deployedBot(server, user);
    for (const [qs, loc] of [
      ["limit=0", "query.limit"],
      ["limit=1001", "query.limit"],
      ["level=debug", "query.level"],
    ]) {
      const res = await get(`/v1/bots/${botId}/logs?${qs}`);
      expect(res.status, qs).toBe(422);
      expect(res.body.detail[0].loc.join("."), qs).toBe(loc);
    }
    expect((await get(`/v1/bots/${botId}/logs?limit=1000`)).status).toBe(200);
  });
});

describe("GET /v1/events", () => {
  it("aggregates the caller's bots only, newest first, with botName and platform", async () => {
    const me = await registerUser(server.api);
    const stranger = await registerUser(server.api);
    const a = await deployedBot(server, me, { botDisplayName: "Alpha", meetingTitle: "A" });
    const b = await deployedBot(server, me, { botDisplayName: "Beta", meetingTitle: "B" });
    const theirs = await deployedBot(server, stranger);
    await intoCall(a.runner);
    await b.runner.status("JOINING_CALL");
    await b.runner.send({ type: "recording.started", data: { width: 640, height: 480, frameRate: 25 } });
    await intoCall(theirs.runner);

    const res = await get("/v1/events", me.token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 4, page: 1, page_size: 20 });
    expect(res.body.events.map((e: { botId: number; eventType: string }) => [e.botId, e.eventType])).toEqual([
      [b.botId, "RECORDING"],
      [b.botId, "JOINING_CALL"],
      [a.botId, "IN_CALL"],
      [a.botId, "JOINING_CALL"],
    ]);
    expect(res.body.events[0]).toEqual({
      id: expect.any(Number),
      botId: b.botId,
      botName: "Beta",
      platform: "google",
      eventType: "RECORDING",
      eventTime: expect.any(String),
      data: { meetingTitle: "B", platform: "google", width: 640, height: 480, frameRate: 25 },
      createdAt: expect.any(String),
    });

    const byBot = await get(`/v1/events?bot_id=${a.botId}`, me.token);
    expect(types(byBot.body.events)).toEqual(["IN_CALL", "JOINING_CALL"]);
    const byType = await get("/v1/events?event_type=JOINING_CALL", me.token);
    expect(byType.body.events.map((e: { botId: number }) => e.botId)).toEqual([b.botId, a.botId]);
    const both = await get(`/v1/events?bot_id=${b.botId}&event_type=RECORDING`, me.token);
    expect(both.body.total).toBe(1);
    const page = await get("/v1/events?page=2&page_size=3", me.token);
    expect(page.body).toMatchObject({ total: 4, page: 2, page_size: 3 });
    expect(page.body.events).toHaveLength(1);
    const foreign = await get(`/v1/events?bot_id=${theirs.botId}`, me.token);
    expect(foreign.body).toMatchObject({ total: 0, events: [] });
    expect((await get("/v1/events?platform=zoom", me.token)).body.total).toBe(0);
  });

  it("filters by start_date and end_date on eventTime", async () => {
    const me = await registerUser(server.api);
    const { runner } = await deployedBot(server, me);
    const at = (seq: number, iso: string, status: string) =>
      runner.sendRaw({ seq, type: "status", eventTime: iso, data: { status } });
    await at(1, "2030-01-01T10:00:00Z", "JOINING_CALL");
    await at(2, "2030-01-02T10:00:00Z", "IN_CALL");
    await at(3, "2030-01-03T10:00:00Z", "CALL_ENDED");
    const window = await get("/v1/events?start_date=2030-01-02&end_date=2030-01-03", me.token);
    expect(types(window.body.events)).toEqual(["IN_CALL"]);
    const after = await get("/v1/events?start_date=2030-01-02T10:00:00Z", me.token);
    expect(types(after.body.events)).toEqual(["CALL_ENDED", "IN_CALL"]);
  });

  it("answers 422 at loc query.* for bad filters and paging", async () => {
    for (const [qs, loc] of [
      ["event_type=BOT_JOINED", "query.event_type"],
      ["bot_id=abc", "query.bot_id"],
      ["page=0", "query.page"],
      ["page_size=500", "query.page_size"],
      ["platform=skype", "query.platform"],
      ["start_date=yesterday", "query.start_date"],
    ]) {
      const res = await get(`/v1/events?${qs}`);
      expect(res.status, qs).toBe(422);
      expect(res.body.detail[0].loc.join("."), qs).toBe(loc);
    }
  });
});
