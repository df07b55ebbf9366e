import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  deployedBot,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
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

const get = <P extends string>(path: P) => server.api.get(path, { token: user.token });

describe("POST /v1/bot-callbacks/:id/event", () => {
  test("applies a status change and answers the bot's status", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const res = await runner.status("JOINING_CALL");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ applied: true, status: "JOINING_CALL" });
    const bot = await get(`/v1/bots/${botId}`);
    expect(bot.body.status).toBe("JOINING_CALL");
    expect(bot.body.lastHeartbeat).toEqual(expect.any(String));
  });

  test("applies a replayed seq once: 200 {applied:false, duplicate:true} and nothing changes", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    const joined = {
      type: "participant.joined",
      data: { participantId: "p1", participantName: "Alice" },
    } as const;
    const first = await runner.send(joined, { seq: 3 });
    const replay = await runner.send(joined, { seq: 3 });
    expect(first.body).toEqual({ applied: true, status: "IN_CALL" });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ applied: false, duplicate: true });
    // a replayed status event is a no-op too, not an illegal IN_CALL -> IN_CALL
    const statusReplay = await runner.send({ type: "status", data: { status: "IN_CALL" } }, { seq: 2 });
    expect(statusReplay.status).toBe(200);
    expect(statusReplay.body).toMatchObject({ applied: false, duplicate: true, status: "IN_CALL" });

    const events = await get(`/v1/bots/${botId}/events`);
    expect(
      events.body.filter((e: { eventType: string }) => e.eventType === "PARTICIPANT_JOINED"),
    ).toHaveLength(1);
    expect(events.body.filter((e: { eventType: string }) => e.eventType === "BOT_JOINED")).toHaveLength(1);
  });

  test("keeps a participant whose name (and name-made id) is over the limits, cut, with their speaking", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    // As the Zoom adapter reports someone: the id is made of the name.
    const name = `Mallory ${"the Magnificent ".repeat(30)}`.trim();
    const person = { participantId: `name:${name}`, participantName: name };
    const joined = await runner.send({ type: "participant.joined", data: person }, { seq: 3 });
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ applied: true });
    expect((await runner.send({ type: "speaker.started", data: person }, { seq: 4 })).status).toBe(200);
    expect((await runner.send({ type: "speaker.stopped", data: person }, { seq: 5 })).status).toBe(200);

    const events = (await get(`/v1/bots/${botId}/events`)).body;
    const seen = events.filter((e) => e.eventType === "PARTICIPANT_JOINED").map((e) => e.data);
    expect(seen).toEqual([
      {
        participantId: expect.stringMatching(/^name:Mallory the Magnificent /),
        participantName: expect.any(String),
      },
    ]);
    // An event's data is any record in the schema; its shape here is the one asserted just above.
    const [reported] = seen as [{ participantId: string; participantName: string }];
    expect(reported.participantName).toHaveLength(300);
    expect(reported.participantName).toBe(`${name.slice(0, 299)}…`);
    expect(reported.participantId.length).toBeLessThanOrEqual(200);
  });

  test("answers 409 for an illegal transition, logs a warning, and does not record the seq", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const illegal = await runner.send({ type: "status", data: { status: "DONE" } }, { seq: 1 });
    expect(illegal.status).toBe(409);
    expect(illegal.body).toEqual({ detail: "illegal transition DEPLOYING -> DONE" });
    expect((await get(`/v1/bots/${botId}`)).body.status).toBe("DEPLOYING");
    const warnings = await get(`/v1/bots/${botId}/logs?level=warn`);
    expect(warnings.body).toEqual([
      expect.objectContaining({ level: "warn", message: expect.stringContaining("DEPLOYING -> DONE") }),
    ]);
    // seq 1 was not consumed: a legal event with that seq still applies
    const legal = await runner.send({ type: "status", data: { status: "JOINING_CALL" } }, { seq: 1 });
    expect(legal.body).toEqual({ applied: true, status: "JOINING_CALL" });
  });

  test("records FATAL with its deploymentError and an ERROR event", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_WAITING_ROOM");
    const res = await runner.status("FATAL", {
      subCode: "ADMISSION_DENIED",
      message: "the host denied entry",
      artifacts: ["denied.png", "../../etc/passwd"],
    });
    expect(res.body).toEqual({ applied: true, status: "FATAL" });
    const bot = await get(`/v1/bots/${botId}`);
    expect(bot.body.deploymentError).toEqual({
      code: "ADMISSION_DENIED",
      message: "the host denied entry",
      // Names become the owner's API paths; anything that is not an artifact name is dropped.
      artifacts: [`/v1/bots/${botId}/artifacts/denied.png`],
    });
    const events = await get(`/v1/bots/${botId}/events`);
    expect(events.body.at(-1)).toMatchObject({
      eventType: "ERROR",
      data: { code: "ADMISSION_DENIED", error: "the host denied entry" },
    });
    // The runner's own FATAL was its last report: its token died with it.
    expect((await runner.status("IN_CALL")).status).toBe(401);
    expect((await get(`/v1/bots/${botId}`)).body.status).toBe("FATAL");
  });

  test("refuses status reports after the bot ended (409, logged as info) while other events still apply", async () => {
    const { botId, runner } = await deployedBot(server, user);
    for (const s of ["JOINING_CALL", "IN_CALL", "CALL_ENDED", "DONE"] as const) await runner.status(s);
    const late = await runner.status("FATAL", { subCode: "UPLOAD_FAILED", message: "late" });
    expect(late.status).toBe(409);
    expect(late.body).toEqual({ detail: "illegal transition DONE -> FATAL" });
    const heartbeat = await runner.send({ type: "heartbeat", data: {} });
    expect(heartbeat.body).toEqual({ applied: true, status: "DONE" });
    const bot = await get(`/v1/bots/${botId}`);
    expect(bot.body).toMatchObject({ status: "DONE", deploymentError: null });
    const logs = await get(`/v1/bots/${botId}/logs`);
    expect(logs.body.at(-1)).toMatchObject({
      level: "info",
      message: "FATAL reported after the bot ended DONE; not applied (seq 5)",
    });
    expect((await get(`/v1/bots/${botId}/logs?level=warn`)).body).toEqual([]);
  });

  test("stores log events as bot logs with their level and heartbeats as lastHeartbeat only", async () => {
    const { botId, runner } = await deployedBot(server, user);
    expect((await get(`/v1/bots/${botId}`)).body.lastHeartbeat).toBeNull();
    await runner.send({ type: "log", data: { level: "error", message: "camera permission prompt" } });
    await runner.send({ type: "heartbeat", data: {} });
    const logs = await get(`/v1/bots/${botId}/logs`);
    expect(logs.body.map((l: { level: string; message: string }) => [l.level, l.message])).toEqual([
      ["info", "deployment started"],
      ["error", "camera permission prompt"],
    ]);
    expect((await get(`/v1/bots/${botId}/events`)).body).toEqual([]);
    expect((await get(`/v1/bots/${botId}`)).body.lastHeartbeat).toEqual(expect.any(String));
  });

  test("validates the event envelope (422 with loc) without applying anything", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const noSeq = await runner.sendRaw({ type: "heartbeat", eventTime: new Date().toISOString(), data: {} });
    expect(noSeq.status).toBe(422);
    expect(noSeq.body.detail).toContainEqual({
      loc: ["body", "seq"],
      msg: "Field required",
      type: "missing",
    });
    const badStatus = await runner.sendRaw({
      seq: 1,
      type: "status",
      eventTime: new Date().toISOString(),
      data: { status: "ASLEEP" },
    });
    expect(badStatus.status).toBe(422);
    expect(validationIssues(badStatus.body)[0]?.loc).toEqual(["body", "data", "status"]);
    expect((await get(`/v1/bots/${botId}`)).body.lastHeartbeat).toBeNull();
  });

  test("requires the bot's own callback token (401), and answers an unknown bot the same", async () => {
    const a = await deployedBot(server, user);
    const b = await deployedBot(server, user);
    const event = { type: "heartbeat", data: {} } as const;
    expect((await a.runner.send(event, { token: "not-the-token-at-all" })).status).toBe(401);
    expect((await a.runner.send(event, { token: b.config.callback.token })).status).toBe(401);
    expect((await a.runner.send(event, { token: user.token })).status).toBe(401);
    const noAuth = await server.api.post(`/v1/bot-callbacks/${a.botId}/event`, {
      body: { seq: 1, type: "heartbeat", eventTime: new Date().toISOString(), data: {} },
    });
    expect(noAuth.status).toBe(401);
    expect(typeof noAuth.body.detail).toBe("string");
    expect((await get(`/v1/bots/${a.botId}`)).body.lastHeartbeat).toBeNull();

    const unknown = await server.api.post("/v1/bot-callbacks/999999/event", {
      token: a.config.callback.token,
      body: { seq: 1, type: "heartbeat", eventTime: new Date().toISOString(), data: {} },
    });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ detail: "Invalid callback token" });
  });

  test("refuses callbacks for a bot that was never deployed (it has no token yet)", async () => {
    const created = await server.api.post("/v1/bots", {
      token: user.token,
      body: { meetingInfo: TEST_MEETING },
    });
    const res = await server.api.post(`/v1/bot-callbacks/${created.body.id}/event`, {
      token: "x".repeat(43),
      body: { seq: 1, type: "heartbeat", eventTime: new Date().toISOString(), data: {} },
    });
    expect(res.status).toBe(401);
  });

  test("normalizes event times with an offset to UTC", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.sendRaw({
      seq: 1,
      type: "status",
      eventTime: "2030-01-02T03:04:05+02:00",
      data: { status: "JOINING_CALL" },
    });
    const agg = await get(`/v1/events?bot_id=${botId}`);
    expect(agg.body.events[0]?.eventTime).toBe("2030-01-02T01:04:05.000Z");
  });
});
