import { existsSync, readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  deployedBot,
  openServerDatabase,
  registerUser,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  mp4Bytes,
  validationIssues,
  errorDetail,
  defined,
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

const createBot = (body: Record<string, unknown>, token = user.token) =>
  server.api.post("/v1/bots", { token, body });

describe("POST /v1/bots", () => {
  test("creates a READY_TO_DEPLOY bot with the spec's fields", async () => {
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
      transcription: null,
      summary: null,
      login: null,
      liveTranscript: null,
      chat: {},
      output: {},
      joinAt: null,
      retention: null,
      dataDeletedAt: null,
      audioStream: null,
      recordingOptions: { video: true },
    });
  });

  test("accepts the real platforms' hosts and zoom by meeting id", async () => {
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

  test("refuses a meeting URL on a host that is neither the platform's nor allowed", async () => {
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

  test("answers 422 at body.meetingInfo.platform for a missing platform", async () => {
    const res = await createBot({ meetingInfo: { meetingUrl: "https://meet.google.com/abc" } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ["body", "meetingInfo", "platform"], msg: "Field required", type: "missing" },
    ]);
  });

  test("applies core's rules: platform fields, duration ranges, URL scheme", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ meetingInfo: { platform: "google" } }, "body.meetingInfo.meetingUrl"],
      [{ meetingInfo: { platform: "skype", meetingUrl: "https://x" } }, "body.meetingInfo.platform"],
      [{ meetingInfo: TEST_MEETING, heartbeatInterval: 10 }, "body.heartbeatInterval"],
      [{ meetingInfo: TEST_MEETING, heartbeatInterval: "5000" }, "body.heartbeatInterval"],
      [
        { meetingInfo: TEST_MEETING, automaticLeave: { waitingRoomTimeout: 5 } },
        "body.automaticLeave.waitingRoomTimeout",
      ],
      [
        { meetingInfo: TEST_MEETING, automaticLeave: { silenceTimeout: 500 } },
        "body.automaticLeave.silenceTimeout",
      ],
      [
        { meetingInfo: TEST_MEETING, automaticLeave: { onlyBotsTimeout: 500 } },
        "body.automaticLeave.onlyBotsTimeout",
      ],
      [{ meetingInfo: TEST_MEETING, automaticLeave: { botNames: [" "] } }, "body.automaticLeave.botNames.0"],
      [{ meetingInfo: TEST_MEETING, callbackUrl: "ftp://example.com/hook" }, "body.callbackUrl"],
      // Private targets are refused unless MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1.
      [{ meetingInfo: TEST_MEETING, callbackUrl: "http://127.0.0.1:9/hook" }, "body.callbackUrl"],
      [{ meetingInfo: TEST_MEETING, callbackUrl: "http://169.254.169.254/latest" }, "body.callbackUrl"],
      [{ meetingInfo: TEST_MEETING, botDisplayName: "" }, "body.botDisplayName"],
    ];
    for (const [body, loc] of cases) {
      const res = await createBot(body);
      expect(res.status, loc).toBe(422);
      expect(
        validationIssues(res.body).map((d) => d.loc.join(".")),
        loc,
      ).toContain(loc);
      for (const d of validationIssues(res.body)) {
        expect(typeof d.msg).toBe("string");
        expect(typeof d.type).toBe("string");
      }
    }
  });

  test("answers 400 {detail} for malformed JSON and 415 {detail} for a non-JSON content type", async () => {
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
    expect(text.status).toBe(415);
    expect(typeof text.body.detail).toBe("string");
  });

  test("answers 422 type missing at loc body when there is no body at all", async () => {
    const res = await server.api.post("/v1/bots", { token: user.token });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  });

  test("answers 413 {detail} for a JSON body over 1 MiB", async () => {
    const res = await createBot({ meetingInfo: TEST_MEETING, meetingTitle: "x".repeat(1024 * 1024 + 10) });
    expect(res.status).toBe(413);
    expect(typeof res.body.detail).toBe("string");
  });
});

describe("GET /v1/bots", () => {
  test("lists only the caller's bots, newest first, paginated, filtered by status", async () => {
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
    expect(all.body.bots[0]?.recording).toBeNull();

    const page2 = await server.api.get("/v1/bots?page=2&page_size=2", { token: owner.token });
    expect(page2.body).toMatchObject({ total: 3, page: 2, page_size: 2 });
    expect(page2.body.bots.map((b: { id: number }) => b.id)).toEqual([ids[0]]);

    const deploying = await server.api.get("/v1/bots?status=DEPLOYING", { token: owner.token });
    expect(deploying.body.total).toBe(1);
    expect(deploying.body.bots[0]?.id).toBe(ids[0]);
  });

  test("answers 422 at loc query.* for out-of-range paging and an unknown status", async () => {
    for (const [qs, loc] of [
      ["page=0", "query.page"],
      ["page_size=101", "query.page_size"],
      ["page_size=0", "query.page_size"],
      ["page=abc", "query.page"],
      ["status=SLEEPING", "query.status"],
    ]) {
      const res = await server.api.get(`/v1/bots?${qs}`, { token: user.token });
      expect(res.status, qs).toBe(422);
      expect(validationIssues(res.body)[0]?.loc.join("."), qs).toBe(loc);
    }
  });
});

describe("GET /v1/bots/:id", () => {
  test("shows the bot with recording, deploymentError and lastHeartbeat", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const res = await server.api.get(`/v1/bots/${id}`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: "READY_TO_DEPLOY",
      recording: null,
      transcription: null,
      summary: null,
      deploymentError: null,
      lastHeartbeat: null,
    });
  });

  test("answers 404 Bot not found for a missing bot and 422 at path.id for a non-numeric id", async () => {
    const missing = await server.api.get("/v1/bots/999999", { token: user.token });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "Bot not found" });
    for (const id of ["abc", "0", "1e3", "-1"]) {
      const res = await server.api.get(`/v1/bots/${id}`, { token: user.token });
      expect(res.status, id).toBe(422);
      expect(validationIssues(res.body)[0]?.loc, id).toEqual(["path", "id"]);
    }
  });
});

describe("POST /v1/bots/:id/deploy", () => {
  test("moves the bot to DEPLOYING and hands the launcher a valid BotConfig", async () => {
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
        silenceTimeout: 1_800_000,
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

  test("answers 409 {detail} when the bot was already deployed", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    expect((await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token })).status).toBe(200);
    const again = await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token });
    expect(again.status).toBe(409);
    expect(typeof again.body.detail).toBe("string");
    expect(server.launcher.launched.filter((c) => c.botId === id)).toHaveLength(1);
  });

  test("accepts a bodyless deploy sent with a JSON content type", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const res = await server.api.post(`/v1/bots/${id}/deploy`, {
      token: user.token,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(200);
  });

  test("leaves the bot FATAL with LAUNCH_FAILED when the launcher rejects", async () => {
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
    expect(events.body[0]?.data).toEqual({ code: "LAUNCH_FAILED", error: "no runner slots" });
    const agg = await server.api.get(`/v1/events?bot_id=${id}`, { token: user.token });
    expect(agg.body.events.map((e: { eventType: string }) => e.eventType)).toEqual(["FATAL"]);
    const logs = await server.api.get(`/v1/bots/${id}/logs?level=error`, { token: user.token });
    expect(logs.body).toEqual([
      expect.objectContaining({ level: "error", message: "LAUNCH_FAILED: no runner slots" }),
    ]);
  });
});

describe("routing", () => {
  test("answers 404 {detail: Not Found} for an unknown route, with or without a token", async () => {
    for (const token of [undefined, user.token]) {
      const res = await server.api.get("/v1/nothing-here", token ? { token } : {});
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: "Not Found" });
    }
    expect((await server.api.get("/nope")).body).toEqual({ detail: "Not Found" });
  });
});

const locs = (res: { body: unknown }) => validationIssues(res.body).map((d) => d.loc.join("."));

describe("POST /v1/bots meetingInfo rules per platform", () => {
  test("accepts each platform's minimal meeting info", async () => {
    for (const meetingInfo of [
      { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
      { platform: "zoom", meetingId: "12345678901" }, // password optional
      { platform: "zoom", meetingId: "12345678901", meetingPassword: "s3cret" },
      { platform: "zoom", meetingUrl: "https://us02web.zoom.us/j/12345678901?pwd=abc" },
      { platform: "teams", meetingId: "m-1", tenantId: "t-1", organizerId: "o-1" },
      { platform: "teams", meetingUrl: "https://teams.microsoft.com/meet/123456?p=x" },
    ]) {
      const res = await createBot({ meetingInfo });
      expect(res.status, JSON.stringify(meetingInfo)).toBe(201);
      expect(res.body.meetingInfo).toEqual(meetingInfo);
    }
  });

  test("names each missing field at its loc", async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ platform: "google" }, ["body.meetingInfo.meetingUrl"]],
      [{ platform: "google", meetingId: "abc" }, ["body.meetingInfo.meetingUrl"]],
      [{ platform: "zoom" }, ["body.meetingInfo.meetingId"]],
      [{ platform: "zoom", meetingPassword: "only-a-password" }, ["body.meetingInfo.meetingId"]],
      [
        { platform: "teams" },
        ["body.meetingInfo.meetingId", "body.meetingInfo.tenantId", "body.meetingInfo.organizerId"],
      ],
      [{ platform: "teams", meetingId: "m", tenantId: "t" }, ["body.meetingInfo.organizerId"]],
      [{ platform: "teams", meetingId: "m", organizerId: "o" }, ["body.meetingInfo.tenantId"]],
      [{ platform: "zoom", meetingId: "" }, ["body.meetingInfo.meetingId"]],
    ];
    for (const [meetingInfo, expected] of cases) {
      const res = await createBot({ meetingInfo });
      expect(res.status, JSON.stringify(meetingInfo)).toBe(422);
      expect([...new Set(locs(res))].sort(), JSON.stringify(meetingInfo)).toEqual([...expected].sort());
    }
  });

  test("keeps callbackUrl, heartbeatInterval and automaticLeave for the runner", async () => {
    const { botId, config } = await deployedBot(server, user, {
      callbackUrl: "https://hooks.example.com/meetbot",
      heartbeatInterval: 1_000,
      automaticLeave: {
        waitingRoomTimeout: 10_000,
        noOneJoinedTimeout: 20_000,
        everyoneLeftTimeout: 30_000,
        silenceTimeout: 0,
        botNames: ["Scribe"],
        onlyBotsTimeout: 5_000,
      },
    });
    expect(config.heartbeatInterval).toBe(1_000);
    expect(config.automaticLeave).toEqual({
      waitingRoomTimeout: 10_000,
      noOneJoinedTimeout: 20_000,
      everyoneLeftTimeout: 30_000,
      maxDuration: 14_400_000,
      silenceTimeout: 0,
      botNames: ["Scribe"],
      onlyBotsTimeout: 5_000,
    });
    const db = await openServerDatabase(server);
    try {
      const row = await db.kysely
        .selectFrom("bots")
        .select("callback_url")
        .where("id", "=", botId)
        .executeTakeFirstOrThrow();
      expect(row.callback_url).toBe("https://hooks.example.com/meetbot");
    } finally {
      await db.close();
    }
  });
});

describe("PATCH /v1/bots/:id", () => {
  const patch = (id: number, body: unknown, token = user.token) =>
    server.api.patch(`/v1/bots/${id}`, { token, body });

  test("updates the create fields before deployment and answers the updated bot", async () => {
    const { id } = (
      await createBot({
        meetingInfo: TEST_MEETING,
        botDisplayName: "Old name",
        meetingTitle: "Old title",
        heartbeatInterval: 5_000,
        automaticLeave: { waitingRoomTimeout: 60_000, everyoneLeftTimeout: 90_000, silenceTimeout: 60_000 },
      })
    ).body;
    const zoom = { platform: "zoom", meetingId: "98765432101", meetingPassword: "pw" };
    const res = await patch(id, {
      botDisplayName: "New name",
      meetingTitle: "New title",
      meetingInfo: zoom,
      callbackUrl: "https://hooks.example.com/x",
      heartbeatInterval: 2_000,
      automaticLeave: { waitingRoomTimeout: 30_000, silenceTimeout: 120_000 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id,
      botDisplayName: "New name",
      meetingTitle: "New title",
      status: "READY_TO_DEPLOY",
      meetingInfo: zoom,
      createdAt: expect.any(String),
      recording: null,
      transcription: null,
      summary: null,
      login: null,
      liveTranscript: null,
      chat: {},
      output: {},
      joinAt: null,
      retention: null,
      dataDeletedAt: null,
      audioStream: null,
      recordingOptions: { video: true },
      deploymentError: null,
      lastHeartbeat: null,
    });
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).body).toEqual(res.body);

    // Only what the body named changed; automaticLeave merged field by field.
    const only = await patch(id, { meetingTitle: "Just the title" });
    expect(only.body).toMatchObject({ botDisplayName: "New name", meetingTitle: "Just the title" });
    await server.api.post(`/v1/bots/${id}/deploy`, { token: user.token });
    const config = server.launcher.configFor(id);
    expect(config).toMatchObject({
      botDisplayName: "New name",
      meetingTitle: "Just the title",
      meetingInfo: zoom,
      heartbeatInterval: 2_000,
      automaticLeave: {
        waitingRoomTimeout: 30_000,
        everyoneLeftTimeout: 90_000,
        noOneJoinedTimeout: 300_000,
        silenceTimeout: 120_000,
      },
    });
    // The list filters by the new platform too.
    const events = await server.api.get(`/v1/bots?status=DEPLOYING`, { token: user.token });
    expect(events.body.bots.find((b) => b.id === id)?.meetingInfo.platform).toBe("zoom");
  });

  test("clears callbackUrl with null and accepts an empty body as a no-op", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING, callbackUrl: "https://h.example.com/a" }))
      .body;
    expect((await patch(id, { callbackUrl: null })).status).toBe(200);
    const same = await patch(id, {});
    expect(same.status).toBe(200);
    expect(same.body.meetingInfo).toEqual(TEST_MEETING);
    const db = await openServerDatabase(server);
    try {
      const row = await db.kysely
        .selectFrom("bots")
        .select("callback_url")
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(row.callback_url).toBeNull();
    } finally {
      await db.close();
    }
  });

  test("answers 409 once the bot is deployed, and changes nothing", async () => {
    const { botId, runner } = await deployedBot(server, user, { meetingTitle: "Fixed" });
    const deploying = await patch(botId, { meetingTitle: "Too late" });
    expect(deploying.status).toBe(409);
    expect(deploying.body).toEqual({
      detail: "Bot can only be updated before deployment (status is DEPLOYING)",
    });
    await runner.status("JOINING_CALL");
    await runner.status("FATAL", { subCode: "JOIN_FAILED", message: "x" });
    expect((await patch(botId, { meetingTitle: "Still too late" })).status).toBe(409);
    expect((await server.api.get(`/v1/bots/${botId}`, { token: user.token })).body.meetingTitle).toBe(
      "Fixed",
    );
  });

  test("validates like create (422 with loc), including unknown fields and the host allow-list", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING, meetingTitle: "Keep" })).body;
    const cases: [unknown, string][] = [
      [{ botDisplayName: "" }, "body.botDisplayName"],
      [{ meetingTitle: "x".repeat(301) }, "body.meetingTitle"],
      [{ heartbeatInterval: 10 }, "body.heartbeatInterval"],
      [{ automaticLeave: { everyoneLeftTimeout: 1 } }, "body.automaticLeave.everyoneLeftTimeout"],
      [{ automaticLeave: { silenceTimeout: 999 } }, "body.automaticLeave.silenceTimeout"],
      [{ automaticLeave: { botNames: "otter" } }, "body.automaticLeave.botNames"],
      [{ automaticLeave: { snooze: 5 } }, "body.automaticLeave"],
      [{ meetingInfo: { platform: "teams", meetingId: "m" } }, "body.meetingInfo.tenantId"],
      [{ meetingInfo: { meetingUrl: "https://meet.google.com/x" } }, "body.meetingInfo.platform"],
      [
        { meetingInfo: { platform: "google", meetingUrl: "https://evil.example.com/x" } },
        "body.meetingInfo.meetingUrl",
      ],
      [{ callbackUrl: "javascript:alert(1)" }, "body.callbackUrl"],
      [{ status: "DONE" }, "body"],
      [[], "body"],
    ];
    for (const [body, loc] of cases) {
      const res = await patch(id, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(locs(res), JSON.stringify(body)).toContain(loc);
    }
    const none = await server.api.patch(`/v1/bots/${id}`, { token: user.token });
    expect(none.status).toBe(422);
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).body).toMatchObject({
      meetingTitle: "Keep",
      meetingInfo: TEST_MEETING,
    });
  });

  test("answers 401 without a credential and 404 for another user's bot, changing nothing", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING, meetingTitle: "Mine" })).body;
    const stranger = await registerUser(server.api);
    expect((await server.api.patch(`/v1/bots/${id}`, { body: { meetingTitle: "x" } })).status).toBe(401);
    const foreign = await patch(id, { meetingTitle: "Theirs now" }, stranger.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: "Bot not found" });
    expect((await patch(999_999, { meetingTitle: "x" })).body).toEqual({ detail: "Bot not found" });
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).body.meetingTitle).toBe("Mine");
  });
});

describe("DELETE /v1/bots/:id", () => {
  const del = (id: number, token = user.token) => server.api.delete(`/v1/bots/${id}`, { token });

  /** Rows of every table that keeps something per bot. */
  async function rowsOf(botId: number): Promise<Record<string, number>> {
    const db = await openServerDatabase(server);
    try {
      const counts: Record<string, number> = {};
      for (const table of [
        "bot_events",
        "aggregated_events",
        "bot_logs",
        "callback_receipts",
        "recordings",
        "speaker_changes",
      ] as const) {
        const { n } = await db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as("n"))
          .where("bot_id", "=", botId)
          .executeTakeFirstOrThrow();
        counts[table] = Number(n);
      }
      const bot = await db.kysely.selectFrom("bots").select("id").where("id", "=", botId).executeTakeFirst();
      counts.bots = bot ? 1 : 0;
      return counts;
    } finally {
      await db.close();
    }
  }

  test("deletes a never-deployed bot: 204, then 404", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const res = await del(id);
    expect(res.status).toBe(204);
    expect(res.body).toBe("");
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).status).toBe(404);
    expect((await del(id)).status).toBe(404);
  });

  test("deletes a finished bot with its recording file, artifacts, runner files, events and logs", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await runner.send({
      type: "recording.started",
      data: { width: 320, height: 240, frameRate: 25, startedAt: new Date().toISOString() },
    });
    await runner.send({ type: "participant.joined", data: { participantId: "a", participantName: "Ann" } });
    await runner.send({ type: "speaker.started", data: { participantId: "a", participantName: "Ann" } });
    await runner.send({ type: "log", data: { level: "info", message: "hello" } });
    await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
    await runner.send({ type: "recording.stopped", data: { durationMs: 1000, sizeBytes: 3 } });
    expect((await runner.upload(mp4Bytes(8), 1000)).status).toBe(201);
    const artifact = await server.api.put(`/v1/bot-callbacks/${botId}/artifacts/failure.png`, {
      token: runner.config.callback.token,
      rawBody: new Uint8Array([9, 9]),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(artifact.status).toBe(201);
    await runner.status("DONE");
    // What a local runner leaves in its folder: log and work dir.
    const botDir = path.join(server.dataDir, "bots", String(botId));
    await mkdir(path.join(botDir, "work"), { recursive: true });
    await writeFile(path.join(botDir, "runner.log"), "log line\n");
    const recordingFile = path.join(server.dataDir, "recordings", `${botId}.mp4`);
    expect(existsSync(recordingFile)).toBe(true);
    const before = await rowsOf(botId);
    for (const table of Object.keys(before)) expect(before[table], table).toBeGreaterThan(0);

    const res = await del(botId);
    expect(res.status).toBe(204);
    expect(await rowsOf(botId)).toEqual(Object.fromEntries(Object.keys(before).map((t) => [t, 0])));
    expect(existsSync(recordingFile)).toBe(false);
    expect(existsSync(botDir)).toBe(false);
    for (const p of [
      `/v1/bots/${botId}`,
      `/v1/bots/${botId}/events`,
      `/v1/bots/${botId}/logs`,
      `/v1/recordings/${botId}`,
    ]) {
      expect((await server.api.get(p, { token: user.token })).status, p).toBe(404);
    }
    // The old runner's credential no longer reaches anything.
    expect((await runner.send({ type: "heartbeat", data: {} })).status).toBe(401);
    expect((await runner.upload(mp4Bytes(8), 1)).status).toBe(401);
    expect(existsSync(recordingFile)).toBe(false);
  });

  test("deletes a FATAL bot", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("FATAL", { subCode: "BROWSER_LAUNCH_FAILED", message: "no chromium" });
    expect((await del(botId)).status).toBe(204);
  });

  test("answers 409 while the bot is running, for every running status, and keeps it", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const steps = ["JOINING_CALL", "IN_WAITING_ROOM", "IN_CALL", "CALL_ENDED"] as const;
    const seen = [];
    for (const status of [null, ...steps]) {
      if (status) await runner.status(status);
      const res = await del(botId);
      seen.push([status ?? "DEPLOYING", res.status]);
      expect(typeof errorDetail(res.body)).toBe("string");
    }
    expect(seen).toEqual([
      ["DEPLOYING", 409],
      ["JOINING_CALL", 409],
      ["IN_WAITING_ROOM", 409],
      ["IN_CALL", 409],
      ["CALL_ENDED", 409],
    ]);
    expect((await del(botId)).body).toEqual({
      detail: "Bot can only be deleted in status READY_TO_DEPLOY, DONE, FATAL (status is CALL_ENDED)",
    });
    expect((await server.api.get(`/v1/bots/${botId}`, { token: user.token })).status).toBe(200);
  });

  test("leaves nothing behind when the bot is deleted while its recording is still uploading", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    // Ended by the server: its runner still uploads what it recorded (its token outlives the kill).
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(mp4Bytes(64 * 1024));
        await gate;
        controller.enqueue(new Uint8Array(64 * 1024));
        controller.close();
      },
    });
    const upload = fetch(runner.config.upload.url, {
      method: "PUT",
      body,
      duplex: "half",
      headers: {
        authorization: `Bearer ${runner.config.callback.token}`,
        "content-type": "video/mp4",
        "x-recording-duration-ms": "1000",
      },
    } as RequestInit);
    const recordingFile = path.join(server.dataDir, "recordings", `${botId}.mp4`);
    const unfinished = () =>
      readdirSync(path.dirname(recordingFile)).filter(
        (f) => f.startsWith(`${botId}.mp4.`) && f.endsWith(".part"),
      );
    await expect.poll(() => unfinished().length, { timeout: 5_000, interval: 10 }).toBe(1);
    expect((await del(botId)).status).toBe(204);
    release();
    const res = await upload;
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(existsSync(recordingFile)).toBe(false);
    expect(unfinished()).toEqual([]);
    expect((await rowsOf(botId)).recordings).toBe(0);
  });

  test("answers 401 without a credential and 404 for another user's bot, deleting nothing", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const stranger = await registerUser(server.api);
    expect((await server.api.delete(`/v1/bots/${id}`)).status).toBe(401);
    const foreign = await del(id, stranger.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: "Bot not found" });
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).status).toBe(200);
    expect((await server.api.delete("/v1/bots/abc", { token: user.token })).status).toBe(422);
  });
});

describe("POST /v1/bots/:id/kill (states and security; the runner's side is in server-bot-kill)", () => {
  const kill = (id: number, token = user.token) => server.api.post(`/v1/bots/${id}/kill`, { token });

  test("kills a bot in each running status", async () => {
    const paths: (readonly string[])[] = [
      [],
      ["JOINING_CALL"],
      ["JOINING_CALL", "IN_WAITING_ROOM"],
      ["JOINING_CALL", "IN_CALL"],
      ["JOINING_CALL", "IN_CALL", "CALL_ENDED"],
    ];
    for (const steps of paths) {
      const { botId, runner } = await deployedBot(server, user);
      for (const status of steps) await runner.status(status as "JOINING_CALL");
      const res = await kill(botId);
      expect(res.status, steps.join(">")).toBe(200);
      expect(res.body).toEqual({ message: "Bot terminated", botId, status: "FATAL" });
      expect(server.launcher.stopped).toContain(botId);
    }
  });

  test("answers 409 for a bot that is not running, without stopping anything", async () => {
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    const ready = await kill(id);
    expect(ready.status).toBe(409);
    expect(ready.body).toEqual({ detail: "Bot is not running (status is READY_TO_DEPLOY)" });

    const done = await deployedBot(server, user);
    for (const s of ["JOINING_CALL", "IN_CALL", "CALL_ENDED", "DONE"] as const) await done.runner.status(s);
    expect((await kill(done.botId)).body).toEqual({ detail: "Bot is not running (status is DONE)" });

    const failed = await deployedBot(server, user);
    await failed.runner.status("FATAL", { subCode: "JOIN_FAILED", message: "x" });
    expect((await kill(failed.botId)).status).toBe(409);
    expect(
      defined(
        (await server.api.get(`/v1/bots/${failed.botId}`, { token: user.token })).body.deploymentError,
        "deploymentError",
      ).code,
    ).toBe("JOIN_FAILED");
    expect(server.launcher.stopped).not.toContain(id);
    expect(server.launcher.stopped).not.toContain(done.botId);
    expect(server.launcher.stopped).not.toContain(failed.botId);
  });

  test("answers 401 without a credential and 404 for another user's bot, which keeps running", async () => {
    const { botId } = await deployedBot(server, user);
    const stranger = await registerUser(server.api);
    expect((await server.api.post(`/v1/bots/${botId}/kill`)).status).toBe(401);
    const foreign = await kill(botId, stranger.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: "Bot not found" });
    expect((await kill(999_999)).body).toEqual({ detail: "Bot not found" });
    expect((await server.api.get(`/v1/bots/${botId}`, { token: user.token })).body.status).toBe("DEPLOYING");
    expect(server.launcher.stopped).not.toContain(botId);
  });
});

describe("POST /v1/bots/:id/deploy (more)", () => {
  test("answers 409 in every status after READY_TO_DEPLOY and 404 for another user's bot", async () => {
    const { botId, runner } = await deployedBot(server, user);
    for (const status of [null, "JOINING_CALL", "IN_CALL", "CALL_ENDED", "DONE"] as const) {
      if (status) await runner.status(status);
      const res = await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
      expect(res.status, status ?? "DEPLOYING").toBe(409);
      expect(res.body).toEqual({ detail: "Bot has already been deployed" });
    }
    const stranger = await registerUser(server.api);
    const { id } = (await createBot({ meetingInfo: TEST_MEETING })).body;
    expect((await server.api.post(`/v1/bots/${id}/deploy`, { token: stranger.token })).status).toBe(404);
    expect((await server.api.post(`/v1/bots/${id}/deploy`)).status).toBe(401);
    expect((await server.api.get(`/v1/bots/${id}`, { token: user.token })).body.status).toBe(
      "READY_TO_DEPLOY",
    );
  });
});
