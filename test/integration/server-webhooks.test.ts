import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, vi } from "vitest";
import {
  deployedBot,
  makeTestMp4,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  validationIssues,
  errorDetail,
  type BotApiBody,
  defined,
} from "../helpers/server-harness.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * /v1/webhooks end to end: the routes, and deliveries made by the server's own worker (real clock)
 * to a real receiver on 127.0.0.1 that verifies every signature with the shipped helper. The
 * retry schedule, restarts and racing workers are server-webhooks-delivery.test.ts's subject.
 */

let server: TestServer;
let receiver: WebhookReceiver;
let user: TestUser;
let mp4: Uint8Array;
let scratch: string;
test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  outbound: { allowPrivateTargets: true },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  receiver = await new WebhookReceiver().start();
  user = await registerUser(server.api);
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-webhooks-"));
  mp4 = await makeTestMp4(scratch);
});
afterAll(async () => {
  // The receiver first: a request it holds open (a hanging endpoint) ends now, not at a timeout.
  await receiver?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

let paths = 0;
/** A webhook on its own receiver path, whose deliveries the receiver verifies with its secret. */
async function createWebhook(owner: TestUser, body: Record<string, unknown> = {}) {
  const hookPath = `/hook-${++paths}`;
  const res = await server.api.post("/v1/webhooks", {
    token: owner.token,
    body: { name: `hook ${paths}`, url: receiver.endpoint(hookPath), events: ["*"], ...body },
  });
  if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${JSON.stringify(res.body)}`);
  receiver.setSecret(hookPath, res.body.secret);
  return { id: res.body.id, path: hookPath, secret: res.body.secret, body: res.body };
}

/** Polls `GET path` until `done(body)`, for at most 10 s. */
async function eventually<P extends string>(
  owner: TestUser,
  url: P,
  done: (body: BotApiBody<"GET", P>) => boolean,
) {
  return vi.waitFor(
    async () => {
      const res = await server.api.get(url, { token: owner.token });
      if (!done(res.body)) throw new Error(`${url}: still ${JSON.stringify(res.body)}`);
      return res.body;
    },
    { timeout: 10_000 },
  );
}

const settled = (body: { deliveries: { status: string }[] }) =>
  body.deliveries.length > 0 &&
  body.deliveries.every((d) => d.status === "succeeded" || d.status === "failed");

describe("webhook endpoints", () => {
  test("creates a webhook with a whsec_ secret shown once, lists, reads, updates and deletes it", async () => {
    const created = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "CRM", url: "https://hooks.example.com/meetbot", events: ["bot.joined", "bot.ended"] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(Number),
      name: "CRM",
      url: "https://hooks.example.com/meetbot",
      events: ["bot.joined", "bot.ended"],
      isActive: true,
      createdAt: expect.any(String),
    });
    expect(created.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    const id = created.body.id;

    const list = await server.api.get("/v1/webhooks", { token: user.token });
    expect(list.status).toBe(200);
    const listed = list.body.webhooks.find((w: { id: number }) => w.id === id);
    expect(listed).toMatchObject({ id, name: "CRM" });
    expect(listed).not.toHaveProperty("secret");

    const one = await server.api.get(`/v1/webhooks/${id}`, { token: user.token });
    expect(one.status).toBe(200);
    expect(one.body).not.toHaveProperty("secret");
    expect(one.body.statistics).toEqual({
      deliveries: 0,
      pending: 0,
      succeeded: 0,
      failed: 0,
      attempts: 0,
      successes: 0,
      failures: 0,
      lastStatusCode: null,
      lastError: null,
      lastAttemptAt: null,
      p50ResponseTimeMs: null,
    });

    const patched = await server.api.patch(`/v1/webhooks/${id}`, {
      token: user.token,
      body: { name: "CRM 2", events: ["*"], isActive: false },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, name: "CRM 2", events: ["*"], isActive: false });
    expect(patched.body).not.toHaveProperty("secret");

    const rotated = await server.api.post(`/v1/webhooks/${id}/rotate-secret`, { token: user.token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(rotated.body.secret).not.toBe(created.body.secret);

    expect((await server.api.delete(`/v1/webhooks/${id}`, { token: user.token })).status).toBe(204);
    expect((await server.api.get(`/v1/webhooks/${id}`, { token: user.token })).status).toBe(404);
    expect((await server.api.delete(`/v1/webhooks/${id}`, { token: user.token })).status).toBe(404);
  });

  test("validates the body: event names, URL, name, unknown PATCH fields", async () => {
    const post = (body: unknown) => server.api.post("/v1/webhooks", { token: user.token, body });
    const base = { name: "x", url: "https://hooks.example.com/x", events: ["*"] };
    const unknown = await post({ ...base, events: ["bot.joined", "bot.exploded"] });
    expect(unknown.status).toBe(422);
    expect(validationIssues(unknown.body)[0]).toMatchObject({
      loc: ["body", "events", 1],
      type: "value_error",
    });
    expect(validationIssues(unknown.body)[0]?.msg).toMatch(/unknown event name/);
    expect((await post({ ...base, events: [] })).status).toBe(422);
    expect(
      validationIssues((await post({ ...base, url: "ftp://hooks.example.com/x" })).body)[0]?.loc,
    ).toEqual(["body", "url"]);
    expect(validationIssues((await post({ url: base.url, events: base.events })).body)[0]).toMatchObject({
      loc: ["body", "name"],
      type: "missing",
    });
    // The spec example's names are accepted.
    const example = await post({ ...base, events: ["bot.ended", "recording.available"] });
    expect(example.status).toBe(201);
    const typo = await server.api.patch(`/v1/webhooks/${example.body.id}`, {
      token: user.token,
      body: { secret: "whsec_mine" },
    });
    expect(typo.status).toBe(422);
  });

  test("needs a credential on every webhook route", async () => {
    const routes: [string, string][] = [
      ["GET", "/v1/webhooks"],
      ["POST", "/v1/webhooks"],
      ["GET", "/v1/webhooks/1"],
      ["PATCH", "/v1/webhooks/1"],
      ["DELETE", "/v1/webhooks/1"],
      ["POST", "/v1/webhooks/1/test"],
      ["POST", "/v1/webhooks/1/rotate-secret"],
      ["GET", "/v1/webhooks/1/deliveries"],
      ["GET", "/v1/webhooks/1/deliveries/1"],
      ["POST", "/v1/webhooks/1/deliveries/1/redeliver"],
      ["GET", "/v1/webhooks/signing-secret"],
      ["POST", "/v1/webhooks/signing-secret/rotate"],
      ["GET", "/v1/webhooks/callback-deliveries"],
      ["GET", "/v1/webhooks/callback-deliveries/1"],
      ["POST", "/v1/webhooks/callback-deliveries/1/redeliver"],
    ];
    for (const [method, url] of routes) {
      const res = await server.api.request(method, url);
      expect(res.status, `${method} ${url}`).toBe(401);
    }
  });

  test("answers 404 for another user's webhook, its deliveries and callback deliveries", async () => {
    const owner = await registerUser(server.api, "Owner");
    const other = await registerUser(server.api, "Other");
    const hook = await createWebhook(owner);
    const test = await server.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token });
    expect(test.status).toBe(200);
    const deliveryId = test.body.delivery.id;
    const { runner } = await deployedBot(server, owner, {
      callbackUrl: receiver.endpoint("/owner-callback"),
    });
    await runner.status("JOINING_CALL");
    const callbacks = await eventually(owner, "/v1/webhooks/callback-deliveries", (b) => b.total >= 2);
    const callbackId = defined(callbacks.deliveries[0], "a callback delivery").id;

    const attempts: [string, string, unknown?][] = [
      ["GET", `/v1/webhooks/${hook.id}`],
      ["PATCH", `/v1/webhooks/${hook.id}`, { name: "mine now" }],
      ["DELETE", `/v1/webhooks/${hook.id}`],
      ["POST", `/v1/webhooks/${hook.id}/test`],
      ["POST", `/v1/webhooks/${hook.id}/rotate-secret`],
      ["GET", `/v1/webhooks/${hook.id}/deliveries`],
      ["GET", `/v1/webhooks/${hook.id}/deliveries/${deliveryId}`],
      ["POST", `/v1/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`],
      ["GET", `/v1/webhooks/callback-deliveries/${callbackId}`],
      ["POST", `/v1/webhooks/callback-deliveries/${callbackId}/redeliver`],
    ];
    for (const [method, url, body] of attempts) {
      const res = await server.api.request(method, url, { token: other.token, body });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(errorDetail(res.body)).toEqual(expect.any(String));
    }
    expect((await server.api.get("/v1/webhooks", { token: other.token })).body).toEqual({
      webhooks: [],
      total: 0,
    });
    const theirs = await server.api.get("/v1/webhooks/callback-deliveries", { token: other.token });
    expect(theirs.body.total).toBe(0);
    // The owner's webhook is untouched.
    expect((await server.api.get(`/v1/webhooks/${hook.id}`, { token: owner.token })).body.name).toBe(
      hook.body.name,
    );
  });

  test("refuses loopback and private URLs at save time without MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS", async () => {
    const production = await startTestServer({ outbound: { allowPrivateTargets: false } });
    try {
      const owner = await registerUser(production.api);
      for (const url of [
        "http://127.0.0.1:8080/hook",
        "http://10.0.0.7/hook",
        "http://169.254.169.254/latest",
      ]) {
        const res = await production.api.post("/v1/webhooks", {
          token: owner.token,
          body: { name: "internal", url, events: ["*"] },
        });
        expect(res.status, url).toBe(422);
        expect(validationIssues(res.body)[0]?.loc).toEqual(["body", "url"]);
      }
      const ok = await production.api.post("/v1/webhooks", {
        token: owner.token,
        body: { name: "public", url: "https://hooks.example.com/x", events: ["*"] },
      });
      expect(ok.status).toBe(201);
      const patch = await production.api.patch(`/v1/webhooks/${ok.body.id}`, {
        token: owner.token,
        body: { url: "http://[::1]:9/x" },
      });
      expect(patch.status).toBe(422);
    } finally {
      await production.close();
    }
  });

  test("a test send refused at connect time names the host, never what it resolves to", async () => {
    const dataDir = await mkdtemp(path.join(scratch, "ssrf-"));
    // Saved while private targets were allowed, tested once they are not.
    const development = await startTestServer({ dataDir, outbound: { allowPrivateTargets: true } });
    const owner = await registerUser(development.api);
    const hook = await development.api.post("/v1/webhooks", {
      token: owner.token,
      body: { name: "internal", url: "http://localhost:9/hook", events: ["*"] },
    });
    expect(hook.status).toBe(201);
    await development.close();
    const production = await startTestServer({ dataDir, outbound: { allowPrivateTargets: false } });
    try {
      const test = await production.api.post(`/v1/webhooks/${hook.body.id}/test`, { token: owner.token });
      expect(test.body).toMatchObject({
        success: false,
        error: "refused_target",
        errorMessage:
          "localhost resolves to an address that is not public; set MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 to allow it",
      });
      const log = await production.api.get(
        `/v1/webhooks/${hook.body.id}/deliveries/${test.body.delivery.id}`,
        {
          token: owner.token,
        },
      );
      expect(JSON.stringify(log.body)).not.toMatch(/127\.0\.0\.1|::1/);
    } finally {
      await production.close();
    }
  });
});

describe("deliveries", () => {
  test("delivers a bot's whole life, in order and signed, to * and to the callbackUrl; a filtered webhook gets its subset", async () => {
    const owner = await registerUser(server.api);
    const all = await createWebhook(owner);
    const some = await createWebhook(owner, { events: ["bot.joined", "recording.available"] });
    const secret = await server.api.get("/v1/webhooks/signing-secret", { token: owner.token });
    expect(secret.status).toBe(200);
    expect(secret.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    receiver.setSecret("/life-callback", secret.body.secret);

    const { botId, runner } = await deployedBot(server, owner, {
      callbackUrl: receiver.endpoint("/life-callback"),
      meetingTitle: "Quarterly review",
    });
    await runner.status("JOINING_CALL");
    await runner.status("IN_WAITING_ROOM");
    await runner.status("IN_CALL");
    await runner.send({ type: "recording.started", data: { width: 1280, height: 720, frameRate: 25 } });
    await runner.send({ type: "participant.joined", data: { participantId: "p1", participantName: "Ada" } });
    await runner.send({ type: "heartbeat", data: {} });
    await runner.send({ type: "participant.left", data: { participantId: "p1", participantName: "Ada" } });
    await runner.send({ type: "recording.stopped", data: { durationMs: 2_000, sizeBytes: mp4.length } });
    await runner.status("CALL_ENDED", { subCode: "EVERYONE_LEFT" });
    expect((await runner.upload(mp4, 2_400)).status).toBe(201);
    await runner.status("DONE");

    const lifecycle = [
      "bot.deploying",
      "bot.joining",
      "bot.in_waiting_room",
      "bot.joined",
      "recording.started",
      "participant.joined",
      "participant.left",
      "recording.stopped",
      "bot.left",
      "recording.ready",
      "bot.ended",
    ];
    await receiver.waitFor(
      () =>
        receiver.at(all.path).length === lifecycle.length &&
        receiver.at("/life-callback").length === lifecycle.length &&
        receiver.at(some.path).length === 2,
    );
    for (const hookPath of [all.path, "/life-callback", some.path]) {
      for (const delivery of receiver.at(hookPath)) {
        expect(delivery.verification.ok, `${hookPath} ${delivery.rawBody}`).toBe(true);
        expect(delivery.headers["x-webhook-id"]).toMatch(/^whdel_[0-9a-f]{24}$/);
        expect(delivery.headers["x-webhook-event"]).toBe(delivery.body?.event);
        expect(delivery.headers["content-type"]).toBe("application/json");
        expect(Math.abs(Number(delivery.headers["x-webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(
          60,
        );
        expect(delivery.body).toEqual({
          event: expect.any(String),
          botId,
          timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          data: expect.any(Object),
        });
      }
    }
    expect(receiver.at(all.path).map((d) => d.event)).toEqual(lifecycle);
    expect(receiver.at("/life-callback").map((d) => d.event)).toEqual(lifecycle);
    expect(receiver.at(some.path).map((d) => d.event)).toEqual(["bot.joined", "recording.ready"]);

    const byEvent = Object.fromEntries(receiver.at(all.path).map((d) => [d.event, d.body?.data]));
    expect(byEvent["bot.joined"]).toEqual({ meetingTitle: "Quarterly review", platform: "google" });
    expect(byEvent["participant.joined"]).toEqual({ participantId: "p1", participantName: "Ada" });
    expect(byEvent["recording.ready"]).toEqual({
      durationSeconds: 2,
      fileSizeBytes: mp4.length,
      format: "mp4",
    });
    expect(byEvent["bot.left"]).toEqual({ code: "EVERYONE_LEFT" });
    expect(byEvent["bot.ended"]).toEqual({ status: "DONE" });
    // Every delivery has its own id.
    const ids = receiver.received.map((d) => d.headers["x-webhook-id"]);
    expect(new Set(ids).size).toBe(ids.length);

    // The delivery log and the statistics say the same.
    const log = await eventually(owner, `/v1/webhooks/${all.id}/deliveries?page_size=100`, settled);
    expect(log.total).toBe(lifecycle.length);
    expect(log.deliveries.map((d: { event: string }) => d.event)).toEqual([...lifecycle].reverse());
    expect(log.deliveries[0]).toMatchObject({
      deliveryId: receiver.at(all.path).at(-1)?.headers["x-webhook-id"],
      webhookId: all.id,
      botId,
      status: "succeeded",
      attempt: 1,
      statusCode: 200,
      error: null,
      nextAttemptAt: null,
      requestBody: receiver.at(all.path).at(-1)?.rawBody,
      responseBody: "ok",
    });
    const stats = (await server.api.get(`/v1/webhooks/${all.id}`, { token: owner.token })).body.statistics;
    expect(stats).toMatchObject({
      deliveries: lifecycle.length,
      succeeded: lifecycle.length,
      pending: 0,
      failed: 0,
      attempts: lifecycle.length,
      successes: lifecycle.length,
      failures: 0,
      lastStatusCode: 200,
    });
    expect(stats.p50ResponseTimeMs).toEqual(expect.any(Number));
    const callbackLog = await server.api.get(
      `/v1/webhooks/callback-deliveries?bot_id=${botId}&page_size=100`,
      {
        token: owner.token,
      },
    );
    expect(callbackLog.body.total).toBe(lifecycle.length);
    expect(callbackLog.body.deliveries.every((d) => d.webhookId === null)).toBe(true);
  });

  test("a kill sends bot.error with code KILLED; bot.ended comes last, after the recording the runner still delivers; an inactive webhook gets nothing", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(owner, { events: ["bot.error", "recording.ready", "bot.ended"] });
    const off = await createWebhook(owner, { isActive: false });
    const { botId, runner } = await deployedBot(server, owner);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: owner.token })).status).toBe(200);
    await receiver.waitFor(() => receiver.at(hook.path).length === 1);
    // The runner leaves, finalizes and uploads, then sends its last report.
    expect((await runner.status("CALL_ENDED", { subCode: "LEFT_ON_REQUEST" })).status).toBe(409);
    expect((await runner.upload(mp4, 2000)).status).toBe(201);
    expect((await runner.status("DONE")).status).toBe(409);
    await receiver.waitFor(() => receiver.at(hook.path).length === 3);
    expect(receiver.at(hook.path).map((d) => [d.event, d.body?.data])).toEqual([
      ["bot.error", { error: "killed on request", code: "KILLED" }],
      ["recording.ready", expect.objectContaining({ fileSizeBytes: mp4.length })],
      ["bot.ended", { status: "FATAL", code: "KILLED" }],
    ]);
    const offLog = await server.api.get(`/v1/webhooks/${off.id}/deliveries`, { token: owner.token });
    expect(offLog.body.total).toBe(0);
    expect(receiver.at(off.path)).toEqual([]);
  });

  test("POST /test sends a signed webhook.test now and reports the receiver's answer; it is logged", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(owner, { isActive: false });
    const ok = await server.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      success: true,
      statusCode: 200,
      error: null,
      responseTimeMs: expect.any(Number),
    });
    expect(ok.body.delivery).toMatchObject({
      event: "webhook.test",
      botId: null,
      status: "succeeded",
      attempt: 1,
    });
    const got = receiver.at(hook.path);
    expect(got).toHaveLength(1);
    expect(got[0]?.verification.ok).toBe(true);
    expect(got[0]?.body).toMatchObject({ event: "webhook.test", botId: null, data: { webhookId: hook.id } });
    expect(got[0]?.headers["x-webhook-id"]).toBe(ok.body.delivery.deliveryId);

    receiver.on(hook.path, () => ({ status: 503, body: "maintenance" }));
    const failing = await server.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token });
    expect(failing.body).toMatchObject({ success: false, statusCode: 503, error: "bad_status" });
    // A test send is never retried: it is failed at once.
    expect(failing.body.delivery).toMatchObject({
      status: "failed",
      nextAttemptAt: null,
      responseBody: "maintenance",
    });

    receiver.on(hook.path, () => ({ status: 302, headers: { location: receiver.endpoint("/elsewhere") } }));
    const redirected = await server.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token });
    expect(redirected.body).toMatchObject({ success: false, statusCode: 302, error: "bad_status" });
    expect(receiver.at("/elsewhere")).toEqual([]);

    const log = await server.api.get(`/v1/webhooks/${hook.id}/deliveries`, { token: owner.token });
    expect(log.body.deliveries.map((d: { status: string }) => d.status)).toEqual([
      "failed",
      "failed",
      "succeeded",
    ]);
    const stats = (await server.api.get(`/v1/webhooks/${hook.id}`, { token: owner.token })).body.statistics;
    expect(stats).toMatchObject({ attempts: 3, successes: 1, failures: 2, failed: 2, lastStatusCode: 302 });
  });

  test("redelivers a delivery by hand with the same X-Webhook-Id; a queued one is a 409", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(owner);
    receiver.on(hook.path, (n) => (n === 1 ? { status: 500 } : { status: 204 }));
    const test = await server.api.post(`/v1/webhooks/${hook.id}/test`, { token: owner.token });
    expect(test.body.delivery.status).toBe("failed");
    const id = test.body.delivery.id;

    const again = await server.api.post(`/v1/webhooks/${hook.id}/deliveries/${id}/redeliver`, {
      token: owner.token,
    });
    expect(again.status).toBe(202);
    expect(["pending", "sending", "succeeded"]).toContain(again.body.status);
    await receiver.waitFor(() => receiver.at(hook.path).length === 2);
    const [first, second] = receiver.at(hook.path);
    expect(second?.headers["x-webhook-id"]).toBe(first?.headers["x-webhook-id"]);
    expect(second?.rawBody).toBe(first?.rawBody);
    expect(second?.verification.ok).toBe(true);

    const detail = await eventually(
      owner,
      `/v1/webhooks/${hook.id}/deliveries/${id}`,
      (b) => b.status === "succeeded",
    );
    expect(detail.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 204],
    ]);

    // Hold the endpoint so the next redelivery is still queued when asked again.
    receiver.on(hook.path, () => ({ hang: true }));
    expect(
      (await server.api.post(`/v1/webhooks/${hook.id}/deliveries/${id}/redeliver`, { token: owner.token }))
        .status,
    ).toBe(202);
    const twice = await server.api.post(`/v1/webhooks/${hook.id}/deliveries/${id}/redeliver`, {
      token: owner.token,
    });
    expect(twice.status).toBe(409);
    expect(
      (await server.api.post(`/v1/webhooks/${hook.id}/deliveries/999999/redeliver`, { token: owner.token }))
        .status,
    ).toBe(404);
    // Deleting the webhook drops its queue and log.
    expect((await server.api.delete(`/v1/webhooks/${hook.id}`, { token: owner.token })).status).toBe(204);
  });

  test("signs callbackUrl deliveries with the user's signing secret, which rotates", async () => {
    const owner = await registerUser(server.api);
    const first = (await server.api.get("/v1/webhooks/signing-secret", { token: owner.token })).body;
    expect((await server.api.get("/v1/webhooks/signing-secret", { token: owner.token })).body).toEqual(first);
    const rotated = await server.api.post("/v1/webhooks/signing-secret/rotate", { token: owner.token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(first.secret);
    expect((await server.api.get("/v1/webhooks/signing-secret", { token: owner.token })).body).toEqual(
      rotated.body,
    );

    // The receiver still knows only the old secret: the delivery fails verification there.
    receiver.setSecret("/rotating", first.secret);
    const { runner } = await deployedBot(server, owner, { callbackUrl: receiver.endpoint("/rotating") });
    await receiver.waitFor(() => receiver.at("/rotating").length === 1);
    expect(receiver.at("/rotating")[0]?.verification).toEqual({ ok: false, reason: "signature_mismatch" });
    receiver.setSecret("/rotating", rotated.body.secret);
    await runner.status("JOINING_CALL");
    await receiver.waitFor(() => receiver.at("/rotating").some((d) => d.event === "bot.joining"));
  });
});

describe("the outbox", () => {
  test("makes no second delivery for a duplicate runner event, and none for an illegal transition", async () => {
    const owner = await registerUser(server.api);
    const hook = await createWebhook(owner, { events: ["participant.joined", "bot.joined"] });
    const { runner } = await deployedBot(server, owner);
    await runner.status("JOINING_CALL");
    const joined = {
      type: "participant.joined",
      data: { participantId: "p1", participantName: "Ada" },
    } as const;
    expect((await runner.send(joined, { seq: 2 })).body).toMatchObject({ applied: true });
    expect((await runner.send(joined, { seq: 2 })).body).toMatchObject({ duplicate: true });
    // DONE straight from JOINING_CALL is refused (409): no event, so no delivery.
    expect((await runner.send({ type: "status", data: { status: "DONE" } }, { seq: 3 })).status).toBe(409);
    const log = await eventually(owner, `/v1/webhooks/${hook.id}/deliveries`, settled);
    expect(log.deliveries.map((d: { event: string }) => d.event)).toEqual(["participant.joined"]);
    expect(receiver.at(hook.path)).toHaveLength(1);
  });
});
