// Own server (startBuiltApp), not the fixture: one per test; its TestClock moves the windows.
import { afterEach, describe, expect, it } from "vitest";
import type { RateLimitConfig } from "../../src/server/config.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import {
  type ApiResponse,
  deployedBot,
  registerUser,
  TEST_MEETING,
  mp4Bytes,
} from "../helpers/server-harness.js";

/**
 * Rate limits over real HTTP, with small limits from the config and a clock the test moves, so
 * that no test waits for a window to pass or depends on where in a minute it started. The limits
 * per credential are counted always and enforced only when configured (`enforce`, the env's
 * MEETBOT_RATE_LIMIT_ENFORCE), as the spec plans them; the per-address ones always.
 */

let server: BuiltApp | undefined;
let clock: TestClock;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server with these limits; the environment is empty, so what is not given is the default. */
async function start(rateLimit: Partial<RateLimitConfig>): Promise<BuiltApp> {
  clock = new TestClock();
  clock.toNextHour(1_000); // hh:00:01 on the server's clock: no window ends during a test
  server = await startBuiltApp({ clock, rateLimit, env: {} });
  return server;
}

const minuteEnd = () => String(Math.ceil((clock.now().getTime() + 1) / 60_000) * 60);
const hourEnd = () => String(Math.ceil((clock.now().getTime() + 1) / 3_600_000) * 3600);
const limitHeaders = (res: ApiResponse) => ({
  limit: res.headers.get("x-ratelimit-limit"),
  remaining: res.headers.get("x-ratelimit-remaining"),
  reset: res.headers.get("x-ratelimit-reset"),
});

describe("rate limits on authenticated routes, enforced", () => {
  it("count down in the headers, then answer 429 with Retry-After before reading the body", async () => {
    const { api } = await start({ perMinute: 3, perHour: 100, enforce: true });
    const user = await registerUser(api);
    const seen = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.get("/v1/bots", { token: user.token });
      expect(res.status).toBe(200);
      seen.push(limitHeaders(res));
    }
    expect(seen).toEqual(["2", "1", "0"].map((remaining) => ({ limit: "3", remaining, reset: minuteEnd() })));

    // A body that would be a 422 is never looked at.
    // The clock runs on in real time (registering hashes a password): Retry-After is the seconds
    // left in the minute at the moment the server answered, somewhere between these two readings.
    const secondsLeft = () => Math.ceil(60 - (clock.now().getTime() % 60_000) / 1000);
    const atMost = secondsLeft();
    const limited = await api.post("/v1/bots", { token: user.token, body: { meetingInfo: {} } });
    const atLeast = secondsLeft();
    expect(limited.status).toBe(429);
    expect(limited.body.detail).toMatch(/^Rate limit exceeded: 3 requests per minute/);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(atLeast);
    expect(retryAfter).toBeLessThanOrEqual(atMost);
    expect(limitHeaders(limited)).toEqual({ limit: "3", remaining: "0", reset: minuteEnd() });
  });

  it("keep one budget per credential: per user for access tokens, per key for API keys, /v1 and /api/v1 shared", async () => {
    const { api } = await start({ perMinute: 4, perHour: 100, enforce: true });
    const alice = await registerUser(api);
    const bob = await registerUser(api);
    const created = await api.post("/v1/api-keys", { token: alice.token, body: { name: "ci" } });
    expect(created.status).toBe(201);
    const key = created.body.key;

    expect((await api.get("/v1/bots", { token: alice.token })).status).toBe(200);
    expect((await api.get("/api/v1/bots", { token: alice.token })).status).toBe(200);
    expect((await api.get("/api/v1/events", { token: alice.token })).status).toBe(200);
    expect((await api.get("/v1/events", { token: alice.token })).status).toBe(429);

    // A second access token of the same user shares the budget.
    const login = await api.post("/v1/auth/login", {
      body: { email: alice.email, password: alice.password },
    });
    expect((await api.get("/v1/bots", { token: login.body.access_token })).status).toBe(429);

    const bobRes = await api.get("/v1/bots", { token: bob.token });
    expect(bobRes.status).toBe(200);
    expect(limitHeaders(bobRes).remaining).toBe("3");
    const keyRes = await api.get("/v1/bots", { token: key });
    expect(keyRes.status).toBe(200);
    expect(limitHeaders(keyRes).remaining).toBe("3");
  });

  it("allow again when the minute resets, but not while the hour window is full", async () => {
    const { api } = await start({ perMinute: 2, perHour: 3, enforce: true });
    const user = await registerUser(api);
    await api.get("/v1/bots", { token: user.token });
    await api.get("/v1/bots", { token: user.token });
    expect((await api.get("/v1/bots", { token: user.token })).status).toBe(429);

    clock.toNextMinute(0);
    const third = await api.get("/v1/bots", { token: user.token });
    expect(third.status).toBe(200);
    expect(limitHeaders(third)).toEqual({ limit: "3", remaining: "0", reset: hourEnd() });

    clock.toNextMinute(0);
    const refused = await api.get("/v1/bots", { token: user.token });
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/3 requests per hour/);
    const wait = Number(hourEnd()) - clock.now().getTime() / 1000;
    expect(Number(refused.headers.get("retry-after"))).toBe(Math.ceil(wait));
  });

  it("do not count requests the guard refuses, and 401s carry no rate-limit headers", async () => {
    const { api } = await start({ perMinute: 2, perHour: 100 });
    const user = await registerUser(api);
    for (let i = 0; i < 5; i++) {
      const res = await api.get("/v1/bots", { token: "not-a-token" });
      expect(res.status).toBe(401);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
    expect(limitHeaders(await api.get("/v1/bots", { token: user.token })).remaining).toBe("1");
  });
});

describe("rate limits on authenticated routes, not enforced (the default)", () => {
  it("count the spec's 60 a minute in the headers, and refuse no one polling a bot every second", async () => {
    const { api } = await start({ perMinute: 60, perHour: 1000 });
    const user = await registerUser(api);
    const created = await api.post("/v1/bots", { token: user.token, body: { meetingInfo: TEST_MEETING } });
    expect(created.status).toBe(201);
    const seen = [];
    // 70 requests in one minute of the server's clock: more than a poll a second.
    for (let i = 0; i < 70; i++) {
      const res = await api.get(`/v1/bots/${created.body.id}`, { token: user.token });
      expect(res.status, `request ${i + 2}`).toBe(200);
      seen.push(limitHeaders(res));
    }
    expect(seen[0]).toEqual({ limit: "60", remaining: "58", reset: minuteEnd() });
    expect(seen[57]).toEqual({ limit: "60", remaining: "1", reset: minuteEnd() });
    // Past the planned limit, Remaining stays at 0 and nothing is refused.
    for (const headers of seen.slice(58))
      expect(headers).toEqual({ limit: "60", remaining: "0", reset: minuteEnd() });
    // A new minute starts from the full budget again.
    clock.toNextMinute(0);
    const next = await api.get("/v1/bots", { token: user.token });
    expect(next.status).toBe(200);
    expect(limitHeaders(next)).toEqual({ limit: "60", remaining: "59", reset: minuteEnd() });
  });
});

describe("rate limits on public routes (always enforced)", () => {
  it("limit register, login and refresh per client address", async () => {
    const { api } = await start({ perMinute: 3, perHour: 100 });
    const user = await registerUser(api); // 1
    const wrong = await api.post("/v1/auth/login", {
      body: { email: user.email, password: "wrong-password" },
    });
    expect(wrong.status).toBe(401); // 2
    expect(limitHeaders(wrong).remaining).toBe("1");
    expect((await api.post("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } })).status).toBe(
      200,
    );
    const limited = await api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    // The user's credential has its own budget.
    expect((await api.get("/v1/bots", { token: user.token })).status).toBe(200);
  });

  it("never limit the runner's callbacks, its upload or signed download links", async () => {
    const built = await start({ perMinute: 3, perHour: 100, enforce: true });
    const user = await registerUser(built.api);
    const { botId, runner } = await deployedBot(built, user); // create + deploy: 2 of 3
    for (let i = 0; i < 10; i++) {
      const res = await runner.send({ type: "heartbeat", data: {} });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
    expect((await runner.upload(mp4Bytes(2_000), 1_000)).status).toBe(201);
    const link = await built.api.get(`/v1/recordings/${botId}/download`, { token: user.token }); // 3 of 3
    expect(link.status).toBe(200);
    for (let i = 0; i < 10; i++) {
      const file = await fetch(link.body.url, { headers: { range: "bytes=0-99" } });
      expect(file.status).toBe(206);
      await file.arrayBuffer();
    }
    expect((await built.api.get(`/v1/bots/${botId}`, { token: user.token })).status).toBe(429);
  });
});

describe("rate limits switched off", () => {
  it("send no headers and refuse nothing when both limits are 0", async () => {
    const { api } = await start({ perMinute: 0, perHour: 0 });
    const user = await registerUser(api);
    for (let i = 0; i < 70; i++) {
      const res = await api.post("/v1/bots", { token: user.token, body: { meetingInfo: TEST_MEETING } });
      expect(res.status).toBe(201);
      expect(res.headers.get("x-ratelimit-limit")).toBeNull();
    }
  });
});
