import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe } from "vitest";
import { startBuiltApp, TestClock } from "../helpers/built-app.js";
import {
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The API request log: what it records, GET /v1/users/me/api-logs, GET /v1/api-keys/{id}/usage and
 * api_keys.lastUsedAt, retention, and the rows still buffered when the server stops.
 */

let server: TestServer;
test.override("serverOptions", { rateLimit: { perMinute: 0, perHour: 0 } });
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const today = () => new Date().toISOString().slice(0, 10);

async function createKey(user: TestUser, name = "ci") {
  const res = await server.api.post("/v1/api-keys", { token: user.token, body: { name } });
  expect(res.status).toBe(201);
  return res.body;
}

/** `query` starts with "?" (or is empty), so the answer keeps the listing's type. */
const logsOf = async (token: string, query: `?${string}` | "" = "") => {
  const res = await server.api.get(`/v1/users/me/api-logs${query}`, { token });
  expect(res.status).toBe(200);
  return res.body;
};

describe("GET /v1/users/me/api-logs", () => {
  test("lists the caller's requests newest first: method, path without query, route, status, latency, credential", async ({
    user,
  }) => {
    const key = await createKey(user);
    await server.api.get("/v1/bots?page=1&page_size=5", { token: user.token });
    await server.api.get("/v1/bots/999999", { token: user.token });
    await server.api.get("/api/v1/events?platform=zoom", { token: key.key });
    await server.api.post("/v1/bots", { token: key.key, body: { meetingInfo: {} } });

    const body = await logsOf(user.token);
    expect(body).toMatchObject({ total: 5, page: 1, page_size: 20 });
    const byKey = { kind: "api_key", apiKeyId: key.id, keyPreview: key.keyPreview };
    expect(
      body.logs.map((l: Record<string, unknown>) => ({ ...l, id: 0, latencyMs: 0, createdAt: "" })),
    ).toEqual(
      [
        ["POST", "/v1/bots", "/v1/bots", 422, byKey],
        ["GET", "/api/v1/events", "/api/v1/events", 200, byKey],
        ["GET", "/v1/bots/999999", "/v1/bots/:id", 404, { kind: "access_token" }],
        ["GET", "/v1/bots", "/v1/bots", 200, { kind: "access_token" }],
        ["POST", "/v1/api-keys", "/v1/api-keys", 201, { kind: "access_token" }],
      ].map(([method, path, route, statusCode, credential]) => ({
        id: 0,
        createdAt: "",
        method,
        path,
        route,
        statusCode,
        latencyMs: 0,
        credential,
      })),
    );
    for (const log of body.logs) {
      expect(log.createdAt).toMatch(ISO);
      expect(log.latencyMs).toBeGreaterThanOrEqual(0);
    }
    const ids = body.logs.map((l: { id: number }) => l.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  test("paginates with page and page_size", async ({ user }) => {
    for (let i = 1; i <= 5; i++) await server.api.get(`/v1/bots?page=${i}`, { token: user.token });
    const second = await logsOf(user.token, "?page=2&page_size=2");
    expect(second).toMatchObject({ total: 5, page: 2, page_size: 2 });
    expect(second.logs).toHaveLength(2);
    // Newest first: requests 5 and 4 are page 1, 3 and 2 page 2. The listing itself is logged after it.
    const third = await logsOf(user.token, "?page=3&page_size=2");
    expect(third.total).toBe(6);
    expect(third.logs.map((l: { path: string }) => l.path)).toEqual(["/v1/bots", "/v1/bots"]);
    expect((await logsOf(user.token, "?page=99")).logs).toEqual([]);
  });

  test("shows only the caller's own requests, and none refused by the guard", async () => {
    const alice = await registerUser(server.api);
    const bob = await registerUser(server.api);
    await server.api.post("/v1/bots", { token: alice.token, body: { meetingInfo: TEST_MEETING } });
    for (const token of ["garbage", bob.refreshToken]) await server.api.get("/v1/bots", { token });

    const bobs = await logsOf(bob.token);
    expect(bobs).toMatchObject({ total: 0, logs: [] });
    const alices = await logsOf(alice.token);
    expect(alices.logs.map((l: { method: string; path: string }) => `${l.method} ${l.path}`)).toEqual([
      "POST /v1/bots",
    ]);
  });
});

describe("GET /v1/api-keys/{id}/usage", () => {
  test("counts one key's requests per day and per endpoint, with when it was last used", async ({ user }) => {
    const key = await createKey(user);
    const other = await createKey(user, "other");
    const listed = async () =>
      defined(
        (await server.api.get("/v1/api-keys", { token: user.token })).body.apiKeys.find(
          (k) => k.id === key.id,
        ),
        "the key",
      );
    const before = await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: user.token });
    expect(before.body).toMatchObject({
      apiKeyId: key.id,
      lastUsedAt: null,
      totalRequests: 0,
      endpoints: [],
    });
    expect((await listed()).lastUsedAt).toBeNull();

    for (let i = 0; i < 3; i++) await server.api.get("/v1/bots", { token: key.key });
    await server.api.get("/v1/bots/424242", { token: key.key });
    await server.api.get("/v1/events", { token: key.key });
    await server.api.get("/api/v1/events", { token: key.key });
    await server.api.get("/v1/bots", { token: other.key });
    await server.api.get("/v1/bots", { token: user.token });

    const res = await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ apiKeyId: key.id, totalRequests: 6, end: today() });
    expect(res.body.endpoints).toEqual([
      { method: "GET", route: "/v1/bots", requests: 3, lastUsedAt: expect.stringMatching(ISO) },
      { method: "GET", route: "/api/v1/events", requests: 1, lastUsedAt: expect.stringMatching(ISO) },
      { method: "GET", route: "/v1/bots/:id", requests: 1, lastUsedAt: expect.stringMatching(ISO) },
      { method: "GET", route: "/v1/events", requests: 1, lastUsedAt: expect.stringMatching(ISO) },
    ]);
    expect(res.body.days).toHaveLength(30);
    expect(res.body.days.at(-1)).toEqual({ date: today(), requests: 6 });
    expect(res.body.start).toBe(res.body.days[0]?.date);

    // lastUsedAt is the newest request's time, in the usage and in the key list alike.
    const newest = res.body.endpoints
      .map((e: { lastUsedAt: string }) => e.lastUsedAt)
      .sort()
      .at(-1);
    expect(res.body.lastUsedAt).toBe(newest);
    expect((await listed()).lastUsedAt).toBe(newest);

    const week = await server.api.get(`/v1/api-keys/${key.id}/usage?days=7`, { token: user.token });
    expect(week.body.days).toHaveLength(7);
    expect((await server.api.get(`/v1/api-keys/${key.id}/usage?days=31`, { token: user.token })).status).toBe(
      422,
    );
  });

  test("stays readable after the key is revoked", async ({ user }) => {
    const key = await createKey(user);
    await server.api.get("/v1/bots", { token: key.key });
    expect((await server.api.delete(`/v1/api-keys/${key.id}`, { token: user.token })).status).toBe(204);
    const res = await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.totalRequests).toBe(1);
  });

  test("is 404 for another user's key, exactly like a missing one, and 401 without a credential", async () => {
    const owner = await registerUser(server.api);
    const stranger = await registerUser(server.api);
    const key = await createKey(owner);
    const foreign = await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: stranger.token });
    const missing = await server.api.get("/v1/api-keys/987654/usage", { token: stranger.token });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ detail: "API key not found" });
    expect(missing.body).toEqual(foreign.body);
    // Not through the key itself either: it is the owner's, not the stranger's.
    const strangerKey = await createKey(stranger);
    expect((await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: strangerKey.key })).status).toBe(
      404,
    );
    expect((await server.api.get(`/v1/api-keys/${key.id}/usage`)).status).toBe(401);
    expect((await server.api.get(`/v1/api-keys/${key.id}/usage`, { token: key.key })).status).toBe(200);
  });
});

describe("the log's storage", () => {
  test("stores the rows still buffered when the server stops", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-api-logs-"));
    try {
      const first = await startTestServer({ dataDir, rateLimit: { perMinute: 0, perHour: 0 } });
      const user = await registerUser(first.api);
      for (let i = 0; i < 3; i++) await first.api.get("/v1/events", { token: user.token });
      await first.close();

      const second = await startTestServer({ dataDir, rateLimit: { perMinute: 0, perHour: 0 } });
      try {
        const logs = await second.api.get("/v1/users/me/api-logs", { token: user.token });
        expect(logs.body.total).toBe(3);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test("keeps 30 days: the flusher deletes older rows", async () => {
    const clock = new TestClock();
    const built = await startBuiltApp({ clock });
    try {
      const user = await registerUser(built.api);
      await built.api.get("/v1/bots", { token: user.token });
      await built.api.get("/v1/events", { token: user.token });
      expect((await built.api.get("/v1/users/me/api-logs", { token: user.token })).body.total).toBe(2);

      clock.advance(29 * 86_400_000);
      expect((await built.api.get("/v1/users/me/api-logs", { token: user.token })).body.total).toBe(3);

      clock.advance(2 * 86_400_000);
      const logs = await built.api.get("/v1/users/me/api-logs", { token: user.token });
      // Only the listing made 29 days in survives; the three older requests are gone.
      expect(logs.body.logs.map((l: { path: string }) => l.path)).toEqual(["/v1/users/me/api-logs"]);
    } finally {
      await built.close();
    }
  });
});
