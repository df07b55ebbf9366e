import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/server/config.js";
import { RateLimiter } from "../../src/server/http/rate-limit.js";

/** 10:00:00 UTC on some day: the start of a minute and of an hour window. */
const HOUR_START = Date.UTC(2026, 4, 12, 10, 0, 0);

function limiter(perMinute: number, perHour: number, start = HOUR_START) {
  let now = start;
  const rateLimiter = new RateLimiter({ perMinute, perHour, enforce: true }, () => now);
  return {
    take: (key = "key:1") => rateLimiter.take(key),
    set: (ms: number) => {
      now = ms;
    },
    rateLimiter,
  };
}

describe("RateLimiter", () => {
  it("counts down the minute window, then refuses with the wait until the next minute", () => {
    const l = limiter(3, 100, HOUR_START + 15_000);
    expect([1, 2, 3].map(() => l.take())).toEqual([
      { allowed: true, state: { limit: 3, remaining: 2, resetAt: HOUR_START / 1000 + 60 } },
      { allowed: true, state: { limit: 3, remaining: 1, resetAt: HOUR_START / 1000 + 60 } },
      { allowed: true, state: { limit: 3, remaining: 0, resetAt: HOUR_START / 1000 + 60 } },
    ]);
    const refused = l.take();
    expect(refused).toMatchObject({
      allowed: false,
      retryAfterSeconds: 45,
      state: { limit: 3, remaining: 0, resetAt: HOUR_START / 1000 + 60 },
    });
  });

  it("allows again when the minute window resets, and refused requests do not count", () => {
    const l = limiter(2, 100);
    l.take();
    l.take();
    for (let i = 0; i < 5; i++) expect(l.take().allowed).toBe(false);
    l.set(HOUR_START + 59_999);
    expect(l.take().allowed).toBe(false);
    l.set(HOUR_START + 60_000);
    expect(l.take()).toEqual({
      allowed: true,
      state: { limit: 2, remaining: 1, resetAt: HOUR_START / 1000 + 120 },
    });
  });

  it("keeps refusing after a minute reset while the hour window is full, until the hour ends", () => {
    const l = limiter(3, 5);
    for (let minute = 0; minute < 2; minute++) {
      l.set(HOUR_START + minute * 60_000);
      while (l.take().allowed);
    }
    l.set(HOUR_START + 10 * 60_000);
    const refused = l.take();
    expect(refused).toMatchObject({
      allowed: false,
      retryAfterSeconds: 50 * 60,
      state: { limit: 5, remaining: 0, resetAt: HOUR_START / 1000 + 3600 },
    });
    l.set(HOUR_START + 3_600_000);
    expect(l.take().allowed).toBe(true);
  });

  it("reports the window closest to its limit in the headers", () => {
    const l = limiter(60, 3);
    expect(l.take().state).toEqual({ limit: 3, remaining: 2, resetAt: HOUR_START / 1000 + 3600 });
  });

  it("keeps one budget per key", () => {
    const l = limiter(1, 0);
    expect(l.take("key:1").allowed).toBe(true);
    expect(l.take("key:1").allowed).toBe(false);
    expect(l.take("user:1").allowed).toBe(true);
    expect(l.take("ip:127.0.0.1").allowed).toBe(true);
  });

  it("not enforced, allows every request, counts it, and shows Remaining 0 past the limit", () => {
    const l = limiter(2, 100);
    const states = [1, 2, 3, 4].map(() => l.rateLimiter.take("key:1", false));
    expect(states.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect(states.map((d) => d.state.remaining)).toEqual([1, 0, 0, 0]);
    // They counted: enforced again, the same key is over its minute.
    expect(l.take("key:1").allowed).toBe(false);
    l.set(HOUR_START + 60_000);
    // The hour window counted all four.
    expect(l.rateLimiter.take("key:1", false).state).toEqual({
      limit: 2,
      remaining: 1,
      resetAt: HOUR_START / 1000 + 120,
    });
  });

  it("is off when both limits are 0, and a 0 limit leaves only the other window", () => {
    expect(limiter(0, 0).rateLimiter.enabled).toBe(false);
    const hourOnly = limiter(0, 2);
    expect(hourOnly.take().state.limit).toBe(2);
    hourOnly.take();
    expect(hourOnly.take().allowed).toBe(false);
  });
});

describe("rate limit configuration", () => {
  const resolve = (env: NodeJS.ProcessEnv, rateLimit?: { perMinute?: number }) =>
    resolveConfig({ dataDir: "/tmp/meetbot-config-test", env, ...(rateLimit ? { rateLimit } : {}) })
      .rateLimit;

  it("defaults to the spec's planned 60 per minute and 1000 per hour, not enforced", () => {
    expect(resolve({})).toEqual({ perMinute: 60, perHour: 1000, enforce: false });
  });

  it("enforces the limits per credential when MEETBOT_RATE_LIMIT_ENFORCE is 1 (or true)", () => {
    for (const on of ["1", "true", "TRUE"])
      expect(resolve({ MEETBOT_RATE_LIMIT_ENFORCE: on }).enforce).toBe(true);
    for (const off of ["0", "false", ""])
      expect(resolve({ MEETBOT_RATE_LIMIT_ENFORCE: off }).enforce).toBe(false);
    expect(() => resolve({ MEETBOT_RATE_LIMIT_ENFORCE: "yes" })).toThrow(/MEETBOT_RATE_LIMIT_ENFORCE/);
  });

  it("reads the environment (0 switches a window off), options first", () => {
    expect(resolve({ MEETBOT_RATE_LIMIT_PER_MINUTE: "0", MEETBOT_RATE_LIMIT_PER_HOUR: "5000" })).toEqual({
      perMinute: 0,
      perHour: 5000,
      enforce: false,
    });
    expect(resolve({ MEETBOT_RATE_LIMIT_PER_MINUTE: "0" }, { perMinute: 7 }).perMinute).toBe(7);
  });

  it("refuses values that are not non-negative integers", () => {
    for (const bad of ["-1", "1.5", "lots"]) {
      expect(() => resolve({ MEETBOT_RATE_LIMIT_PER_HOUR: bad }), bad).toThrow(/MEETBOT_RATE_LIMIT_PER_HOUR/);
    }
  });
});
