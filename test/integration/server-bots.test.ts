import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  registerUser,
  startTestServer,
  TEST_MEETING,
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

const createBot = (body: Record<string, unknown>, token = user.token) =>
  server.api.post("/v1/bots", { token, body });

describe("POST /v1/bots", () => {
  it("creates a READY_TO_DEPLOY bot with the spec's fields", async () => {
    const res = await createBot({
      meetingInfo: TEST_MEETING,
      botDisplayName: "Scribe",
      meetingTitle: "Standup",
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(Number),
      botDisplayName: "Scribe",
      meetingTitle: "Standup",
      status: "READY_TO_DEPLOY",
      meetingInfo: TEST_MEETING,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      recording: null,
    });
  });

  it("accepts the real platforms' hosts and zoom by meeting id", async () => {
    const meet = await createBot({
      meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
    });
    const zoom = await createBot({
      meetingInfo: { platform: "zoom", meetingId: "123456789", meetingPassword: "x" },
    });
    const teams = await createBot({
      meetingInfo: { platform: "teams", meetingId: "m", tenantId: "t", organizerId: "o" },
    });
    expect([meet.status, zoom.status, teams.status]).toEqual([201, 201, 201]);
    expect(meet.body.botDisplayName).toBe("Meetbot");
    expect(meet.body.meetingTitle).toBe("");
  });

  it("refuses a meeting URL on a host that is neither the platform's nor allowed", async () => {
    for (const meetingUrl of [
      "https://evil.example.com/meet/x",
      "https://zoom.us/j/123",
      "http://127.0.0.2/x",
    ]) {
      const res = await createBot({ meetingInfo: { platform: "google", meetingUrl } });
      expect(res.status, meetingUrl).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ["body", "meetingInfo", "meetingUrl"], msg: expect.any(String), type: "value_error" },
      ]);
    }
  });

  it("answers 422 at body.meetingInfo.platform for a missing platform", async () => {
    const res = await createBot({ meetingInfo: { meetingUrl: "https://meet.google.com/abc" } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ["body", "meetingInfo", "platform"], msg: "Field required", type: "missing" },
    ]);
  });

  it("applies core's rules: platform fields, duration ranges, URL scheme", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ meetingInfo: { platform: "google" } }, "body.meetingInfo.meetingUrl"],
      [{ meetingInfo: { platform: "skype", meetingUrl: "https://x" } }, "body.meetingInfo.platform"],
      [{ meetingInfo: TEST_MEETING, heartbeatInterval: 10 }, "body.heartbeatInterval"],
      [{ meetingInfo: TEST_MEETING, heartbeatInterval: "5000" }, "body.heartbeatInterval"],
      [
        { meetingInfo: TEST_MEETING, automaticLeave: { waitingRoomTimeout: 5 } },
        "body.automaticLeave.waitingRoomTimeout",
      ],
      [{ meetingInfo: TEST_MEETING, callbackUrl: "ftp://example.com/hook" }, "body.callbackUrl"],
      [{ meetingInfo: TEST_MEETING, botDisplayName: "" }, "body.botDisplayName"],
    ];
    for (const [body, loc] of cases) {
      const res = await createBot(body);
      expect(res.status, loc).toBe(422);
      expect(
        res.body.detail.map((d: { loc: string[] }) => d.loc.join(".")),
        loc,
      ).toContain(loc);
      for (const d of res.body.detail) {
        expect(typeof d.msg).toBe("string");
        expect(typeof d.type).toBe("string");
      }
    }
  });

  it("answers 400 {detail} for malformed JSON and for a non-JSON content type", async () => {
    const bad = await server.api.post("/v1/bots", {
      token: user.token,
      rawBody: '{"meetingInfo": ',
      headers: { "content-type": "application/json" },
    });
    expect(bad.status).toBe(400);
    expect(typeof bad.body.detail).toBe("string");
    const text = await server.api.post("/v1/bots", {
      token: user.token,
      rawBody: "meetingInfo=google",
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(400);
    expect(typeof text.body.detail).toBe("string");
  });

  it("answers 422 type missing at loc body when there is no body at all", async () => {
    const res = await server.api.post("/v1/bots", { token: user.token });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  });

  it("answers 413 {detail} for a JSON body over 1 MiB", async () => {
    const res = await createBot({ meetingInfo: TEST_MEETING, meetingTitle: "x".repeat(1024 * 1024 + 10) });
    expect(res.status).toBe(413);
    expect(typeof res.body.detail).toBe("string");
  });
});

describe("GET /v1/bots", () => {
  it("lists only the caller's bots, newest first, paginated, filtered by status", async () => {
    const owner = await registerUser(server.api);
    const other = await registerUser(server.api);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createBot({ meetingInfo: TEST_MEETING, meetingTitle: `m${i}` }, owner.token)).body.id);
    }
    await createBot({ meetingInfo: TEST_MEETING }, other.token);
    await server.api.post(`/v1/bots/${ids[0]}/deploy`, { token: owner.token });

    const all = await server.api.get("/v1/bots", { token: owner.token });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, page_size: 20 });
    expect(all.body.bots.map((b: { id: number }) => b.id)).toEqual([...ids].reverse());
    expect(all.body.bots[0].recording).toBeNull();

    const page2 = await server.api.get("/v1/bots?page=2&page_size=2", { token: owner.token });
    expect(page2.body).toMatchObject({ total: 3, page: 2, page_size: 2 });
    expect(page2.body.bots.map((b: { id: number }) => b.id)).toEqual([ids[0]]);

    const deploying = await server.api.get("/v1/bots?status=DEPLOYING", { token: owner.token });
    expect(deploying.body.total).toBe(1);
    expect(deploying.body.bots[0].id).toBe(ids[0]);
  });

  it("answers 422 at loc query.* for out-of-range paging and an unknown status", async () => {
    for (const [qs, loc] of [
      ["page=0", "query.page"],
      ["page_size=101", "query.page_size"],
      ["page_size=0", "query.page_size"],
      ["page=abc", "query.page"],
      ["status=SLEEPING", "query.status"],
    ]) {
      const res = await server.api.get(`/v1/bots?${qs}`, { token: user.token });
      expect(res.status, qs).toBe(422);
      expect(res.body.detail[0].loc.join("."), qs).toBe(loc);
    }
  });
});

describe("GET /v1/bots/:id", () => {
  it("shows the bot with recording, deploymentError and lastHeartbeat", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const res = await server.api.get(`/v1/bots/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: "READY_TO_DEPLOY",
      recording: null,
      deploymentError: null,
      lastHeartbeat: null,
    });
  });

  it("answers 404 Bot not found for a missing bot and 422 at path.id for a non-numeric id", async () => {
    const missing = await server.api.get("/v1/bots/999999", { token: user.token });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "Bot not found" });
    for (const id of ["abc", "0", "1e3", "-1"]) {
      const res = await server.api.get(`/v1/bots/${id}`, { token: user.token });
      expect(res.status, id).toBe(422);
      expect(res.body.detail[0].loc, id).toEqual(["path", "id"]);
    }
  });
});

describe("POST /v1/bots/:id/deploy", () => {
  it("moves the bot to DEPLOYING and hands the launcher a valid BotConfig", async () => {
    const { id } = (
      await createBot({
        meetingInfo: TEST_MEETING,
        botDisplayName: "Scribe",
        meetingTitle: "Planning",
        heartbeatInterval: 2_000,
        automaticLeave: { waitingRoomTimeout: 60_000 },
      })
    ).body;
    const res = await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: "Deployment started", botId: id, status: "DEPLOYING" });

    const config = server.launcher.configFor(id);
    expect(config).toMatchObject({
      botId: id,
      meetingInfo: TEST_MEETING,
      botDisplayName: "Scribe",
      meetingTitle: "Planning",
      heartbeatInterval: 2_000,
      automaticLeave: {
        waitingRoomTimeout: 60_000,
        noOneJoinedTimeout: 300_000,
        everyoneLeftTimeout: 300_000,
      },
      callback: { baseUrl: server.url },
      upload: { url: `${server.url}/v1/bot-callbacks/${id}/recording` },
      workDir: `${server.dataDir}/bots/${id}/work`,
    });
    expect(config.callback.token.length).toBeGreaterThanOrEqual(32);

    const bot = await server.api.get(`/v1/bots/${id}`, { token: user.token });
    expect(bot.body.status).toBe("DEPLOYING");
    const logs = await server.api.get(`/v1/bots/${id}/logs`, { token: user.token });
    expect(logs.body.map((l: { message: string }) => l.message)).toContain("deployment started");
  });

  it("answers 409 {detail} when the bot was already deployed", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    expect((await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token })).status).toBe(200);
    const again = await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token });
    expect(again.status).toBe(409);
    expect(typeof again.body.detail).toBe("string");
    expect(server.launcher.launched.filter((c) => c.botId === id)).toHaveLength(1);
  });

  it("accepts a bodyless deploy sent with a JSON content type", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const res = await server.api.post(`/v1/bots/${id}/deploy`, {
      token: user.token,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(200);
  });

  it("leaves the bot FATAL with LAUNCH_FAILED when the launcher rejects", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING, meetingTitle: "Doomed" })).body;
    server.launcher.failNextLaunch(new Error("no runner slots"));
    const res = await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token });
    expect(res.status).toBe(503);
    expect(res.body.detail).toContain("no runner slots");

    const bot = await server.api.get(`/v1/bots/${id}`, { token: user.token });
    expect(bot.body.status).toBe("FATAL");
    expect(bot.body.deploymentError).toEqual({ code: "LAUNCH_FAILED", message: "no runner slots" });
    const events = await server.api.get(`/v1/bots/${id}/events`, { token: user.token });
    expect(events.body.map((e: { eventType: string }) => e.eventType)).toEqual(["ERROR"]);
    expect(events.body[0].data).toEqual({ code: "LAUNCH_FAILED", error: "no runner slots" });
    const agg = await server.api.get(`/v1/events?bot_id=${id}`, { token: user.token });
    expect(agg.body.events.map((e: { eventType: string }) => e.eventType)).toEqual(["FATAL"]);
    const logs = await server.api.get(`/v1/bots/${id}/logs?level=error`, { token: user.token });
    expect(logs.body).toEqual([
      expect.objectContaining({ level: "error", message: "LAUNCH_FAILED: no runner slots" }),
    ]);
  });
});

describe("routing", () => {
  it("answers 404 {detail: Not Found} for an unknown route, with or without a token", async () => {
    for (const token of [undefined, user.token]) {
      const res = await server.api.get("/v1/nothing-here", token ? { token } : {});
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: "Not Found" });
    }
    expect((await server.api.get("/nope")).body).toEqual({ detail: "Not Found" });
  });
});
