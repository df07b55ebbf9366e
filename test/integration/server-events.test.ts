import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  deployedBot,
  type FakeRunner,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
  errorDetail,
} from "../helpers/server-harness.js";

/** These tests make many requests as one user: the rate limit is server-rate-limit.test's subject. */
const UNLIMITED = { rateLimit: { perMinute: 0, perHour: 0 } };

test.override("serverOptions", UNLIMITED);

// The file's helpers read these: the file's server, and each test's own fresh user.
let server: TestServer;
let user: TestUser;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});
test.beforeEach(({ user: testUser }) => {
  user = testUser;
});

const get = <P extends string>(p: P, token = user.token) => server.api.get(p, { token });
const types = (list: { eventType: string }[]) => list.map((e) => e.eventType);

async function intoCall(runner: FakeRunner) {
  await runner.status("JOINING_CALL");
  await runner.status("IN_CALL");
}

describe("GET /v1/bots/:id/events", () => {
  test("lists the bot's events in order with their data", async () => {
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
    expect(res.body.map((e) => e.data?.participantName)).toEqual([undefined, "Alice", "Bob", "Alice"]);
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
  test("treats level as a minimum severity and keeps the newest `limit` entries, oldest first", async () => {
    const { botId, runner } = await deployedBot(server, user);
    for (let i = 1; i <= 5; i++)
      await runner.send({ type: "log", data: { level: "info", message: `step ${i}` } });
    await runner.send({ type: "log", data: { level: "warn", message: "slow network" } });
    await runner.send({ type: "log", data: { level: "error", message: "camera blocked" } });
    await runner.send({ type: "log", data: { level: "info", message: "step 6" } });

    const messages = (res: { body: { message: string }[] }) => res.body.map((l) => l.message);
    const all = await get(`/v1/bots/${botId}/logs`);
    expect(all.status).toBe(200);
    expect(all.body).toHaveLength(9); // "deployment started" + 8
    for (const entry of all.body)
      expect(entry).toEqual({
        id: expect.any(Number),
        level: expect.stringMatching(/^(info|warn|error)$/),
        message: expect.any(String),
        createdAt: expect.stringMatching(/Z$/),
      });
    expect(messages(await get(`/v1/bots/${botId}/logs?limit=3`))).toEqual([
      "slow network",
      "camera blocked",
      "step 6",
    ]);
    const warn = await get(`/v1/bots/${botId}/logs?level=warn`);
    expect(warn.body.map((l: { level: string; message: string }) => [l.level, l.message])).toEqual([
      ["warn", "slow network"],
      ["error", "camera blocked"],
    ]);
    expect(messages(await get(`/v1/bots/${botId}/logs?level=error`))).toEqual(["camera blocked"]);
    expect(await get(`/v1/bots/${botId}/logs?level=info`)).toMatchObject({ body: all.body });
    expect(messages(await get(`/v1/bots/${botId}/logs?level=warn&limit=1`))).toEqual(["camera blocked"]);
  });

  test("answers 422 for a limit out of 1..1000 (not clamped) and an unknown level", async () => {
    const { botId } = await deployedBot(server, user);
    for (const [qs, loc] of [
      ["limit=0", "query.limit"],
      ["limit=1001", "query.limit"],
      ["limit=-5", "query.limit"],
      ["limit=2.5", "query.limit"],
      ["limit=lots", "query.limit"],
      ["level=debug", "query.level"],
      ["level=WARN", "query.level"],
    ]) {
      const res = await get(`/v1/bots/${botId}/logs?${qs}`);
      expect(res.status, qs).toBe(422);
      expect(validationIssues(res.body)[0]?.loc.join("."), qs).toBe(loc);
    }
    expect((await get(`/v1/bots/${botId}/logs?limit=1000`)).status).toBe(200);
  });
});

describe("GET /v1/events", () => {
  test("aggregates the caller's bots only, newest first, with botName and platform", async () => {
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

  test("filters by start_date and end_date on eventTime", async () => {
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
    // end_date is exclusive; a date-time without an offset is UTC; an offset is honoured.
    const before = await get("/v1/events?end_date=2030-01-02T10:00:00", me.token);
    expect(types(before.body.events)).toEqual(["JOINING_CALL"]);
    const offset = await get(
      `/v1/events?start_date=${encodeURIComponent("2030-01-02T11:00:00+01:00")}`,
      me.token,
    );
    expect(types(offset.body.events)).toEqual(["CALL_ENDED", "IN_CALL"]);
  });

  test("filters by platform and combines every filter with paging", async () => {
    const me = await registerUser(server.api);
    const zoom = await deployedBot(server, me, {
      botDisplayName: "Zed",
      meetingInfo: { platform: "zoom", meetingId: "12345678901" },
    });
    const meet = await deployedBot(server, me);
    await intoCall(zoom.runner);
    await intoCall(meet.runner);
    const byPlatform = await get("/v1/events?platform=zoom", me.token);
    expect(byPlatform.body.total).toBe(2);
    expect(
      byPlatform.body.events.map((e: { botId: number; platform: string; botName: string }) => [
        e.botId,
        e.platform,
        e.botName,
      ]),
    ).toEqual([
      [zoom.botId, "zoom", "Zed"],
      [zoom.botId, "zoom", "Zed"],
    ]);
    const start = new Date(Date.now() - 60_000).toISOString();
    const end = new Date(Date.now() + 60_000).toISOString();
    const all = await get(
      `/v1/events?platform=google&bot_id=${meet.botId}&event_type=IN_CALL&start_date=${start}&end_date=${end}&page=1&page_size=100`,
      me.token,
    );
    expect(all.body).toMatchObject({ total: 1, page: 1, page_size: 100 });
    expect(all.body.events[0]).toMatchObject({ botId: meet.botId, eventType: "IN_CALL" });
    const mismatch = await get(`/v1/events?platform=google&bot_id=${zoom.botId}`, me.token);
    expect(mismatch.body).toMatchObject({ total: 0, events: [] });
    // A page past the end is empty, not an error; total still counts everything.
    const past = await get("/v1/events?page=50&page_size=100", me.token);
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ total: 4, page: 50, page_size: 100, events: [] });
  });

  test("answers 401 without a credential on every event and log route", async () => {
    const { botId } = await deployedBot(server, user);
    for (const p of ["/v1/events", `/v1/bots/${botId}/events`, `/v1/bots/${botId}/logs`]) {
      const res = await server.api.get(p);
      expect(res.status, p).toBe(401);
      expect(typeof errorDetail(res.body), p).toBe("string");
    }
  });

  test("answers 404 for another user's bot's events and logs, exactly like a missing bot", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.send({ type: "log", data: { level: "error", message: "secret detail" } });
    const stranger = await registerUser(server.api);
    for (const p of [
      `/v1/bots/${botId}/events`,
      `/v1/bots/${botId}/logs`,
      `/v1/bots/${botId}/logs?level=error`,
    ]) {
      const foreign = await get(p, stranger.token);
      expect(foreign.status, p).toBe(404);
      expect(foreign.body, p).toEqual({ detail: "Bot not found" });
    }
    expect((await get(`/v1/bots/999999/logs`)).body).toEqual({ detail: "Bot not found" });
    const theirs = await get(`/v1/events?bot_id=${botId}`, stranger.token);
    expect(theirs.body).toMatchObject({ total: 0, events: [] });
  });

  test("answers 422 at loc query.* for bad filters and paging", async () => {
    for (const [qs, loc] of [
      ["event_type=BOT_JOINED", "query.event_type"],
      ["bot_id=abc", "query.bot_id"],
      ["page=0", "query.page"],
      ["page_size=500", "query.page_size"],
      ["platform=skype", "query.platform"],
      ["start_date=yesterday", "query.start_date"],
      ["start_date=2030-02-30", "query.start_date"],
      ["end_date=2030-01-02T25:00:00Z", "query.end_date"],
      ["start_date=March%207%2C%202030", "query.start_date"],
      ["start_date=2030-01-03&end_date=2030-01-02", "query.end_date"],
      ["start_date=2030-01-02&end_date=2030-01-02", "query.end_date"],
      ["bot_id=0", "query.bot_id"],
      ["bot_id=1e3", "query.bot_id"],
      ["page=1.5", "query.page"],
      ["page_size=0", "query.page_size"],
      ["page_size=101", "query.page_size"],
      ["page=abc", "query.page"],
    ]) {
      const res = await get(`/v1/events?${qs}`);
      expect(res.status, qs).toBe(422);
      expect(validationIssues(res.body)[0]?.loc.join("."), qs).toBe(loc);
    }
    expect((await get("/v1/events?page_size=100")).status).toBe(200);
  });
});
