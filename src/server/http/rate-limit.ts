import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { RateLimitConfig } from "../config.js";
import { ApiError } from "../errors.js";

/**
 * Spec §8: 60 requests per minute and 1000 per hour per credential, planned and not enforced, with
 * the X-RateLimit-* headers it plans. So a credential's requests are always counted and shown, and
 * refused (429) only when the operator enforces the limits (RateLimitConfig.enforce); the public
 * routes' per-address budgets (sign-in, share links) are always enforced. Windows are fixed and
 * aligned to the clock (a minute window resets at :00 seconds, an hour window at :00 minutes), so
 * that X-RateLimit-Reset is the same instant for every request in a window. Counters live in this
 * process: several server processes each allow the full budget.
 */

interface Window {
  name: "minute" | "hour";
  ms: number;
  limit: number;
}

interface Counter {
  index: number;
  count: number;
}

/** What the X-RateLimit-* headers say: the window closest to its limit. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds when that window resets. */
  resetAt: number;
}

export type RateLimitDecision =
  | { allowed: true; state: RateLimitState }
  | { allowed: false; state: RateLimitState; retryAfterSeconds: number; window: Window };

export class RateLimiter {
  private readonly windows: Window[];
  private readonly counters = new Map<string, Counter[]>();
  private lastSweepMinute = -1;
  /** Whether a credential over its limits is refused; else its requests are only counted. */
  readonly enforcesCredentials: boolean;

  constructor(
    config: RateLimitConfig,
    private readonly nowMs: () => number,
  ) {
    const windows: Window[] = [
      { name: "minute", ms: 60_000, limit: config.perMinute },
      { name: "hour", ms: 3_600_000, limit: config.perHour },
    ];
    this.windows = windows.filter((w) => w.limit > 0);
    this.enforcesCredentials = config.enforce;
  }

  get enabled(): boolean {
    return this.windows.length > 0;
  }

  /**
   * Counts one request for `key`. Enforced (the default), a request is refused while a window is
   * full, and refused requests do not count; not enforced, every request is allowed and counted,
   * and Remaining stops at 0.
   */
  take(key: string, enforce = true): RateLimitDecision {
    const now = this.nowMs();
    this.sweep(now);
    const counters = this.countersFor(key, now);
    const full = this.windows
      .map((window, i) => ({ window, counter: counters[i] as Counter }))
      .filter(({ window, counter }) => counter.count >= window.limit);
    if (enforce && full.length > 0) {
      // Every full window must reset before a request is allowed again.
      const last = full.reduce((a, b) =>
        resetMs(b.window, b.counter) > resetMs(a.window, a.counter) ? b : a,
      );
      const reset = resetMs(last.window, last.counter);
      return {
        allowed: false,
        state: { limit: last.window.limit, remaining: 0, resetAt: Math.ceil(reset / 1000) },
        retryAfterSeconds: Math.max(1, Math.ceil((reset - now) / 1000)),
        window: last.window,
      };
    }
    for (const counter of counters) counter.count += 1;
    return { allowed: true, state: this.tightest(counters) };
  }

  private countersFor(key: string, now: number): Counter[] {
    let counters = this.counters.get(key);
    if (!counters) {
      counters = this.windows.map(() => ({ index: -1, count: 0 }));
      this.counters.set(key, counters);
    }
    this.windows.forEach((window, i) => {
      const counter = counters[i] as Counter;
      const index = Math.floor(now / window.ms);
      if (counter.index !== index) {
        counter.index = index;
        counter.count = 0;
      }
    });
    return counters;
  }

  /** The window with the fewest requests left; on a tie, the one that resets last. */
  private tightest(counters: Counter[]): RateLimitState {
    let best: RateLimitState | undefined;
    this.windows.forEach((window, i) => {
      const counter = counters[i] as Counter;
      const state = {
        limit: window.limit,
        remaining: Math.max(0, window.limit - counter.count),
        resetAt: Math.ceil(resetMs(window, counter) / 1000),
      };
      if (
        !best ||
        state.remaining < best.remaining ||
        (state.remaining === best.remaining && state.resetAt > best.resetAt)
      )
        best = state;
    });
    return best as RateLimitState;
  }

  /** Once a minute, forgets keys whose every window has passed: memory stays bounded by active keys. */
  private sweep(now: number): void {
    const minute = Math.floor(now / 60_000);
    if (minute === this.lastSweepMinute) return;
    this.lastSweepMinute = minute;
    for (const [key, counters] of this.counters) {
      const stale = this.windows.every(
        (window, i) => (counters[i] as Counter).index !== Math.floor(now / window.ms),
      );
      if (stale) this.counters.delete(key);
    }
  }
}

const resetMs = (window: Window, counter: Counter) => (counter.index + 1) * window.ms;

export class RateLimitedError extends ApiError {
  constructor(decision: Extract<RateLimitDecision, { allowed: false }>) {
    super(
      429,
      `Rate limit exceeded: ${decision.window.limit} requests per ${decision.window.name}; ` +
        `retry in ${decision.retryAfterSeconds} s`,
      { ...rateLimitHeaders(decision.state), "retry-after": String(decision.retryAfterSeconds) },
    );
  }
}

function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    "x-ratelimit-limit": String(state.limit),
    "x-ratelimit-remaining": String(state.remaining),
    "x-ratelimit-reset": String(state.resetAt),
  };
}

/**
 * Counts the request against `key` and sets the headers; when enforced, a full window is a 429
 * before the body is read.
 */
function limit(limiter: RateLimiter, key: string, reply: FastifyReply, enforce: boolean): void {
  const decision = limiter.take(key, enforce);
  if (!decision.allowed) throw new RateLimitedError(decision);
  reply.headers(rateLimitHeaders(decision.state));
}

/**
 * For authenticated routes, after the guard: an API key is counted by its id, an access token by
 * its user (all of a user's sessions share one budget). Refused only when the operator enforces
 * the limits; the headers are sent either way.
 */
export function limitPerCredential(limiter: RateLimiter): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (!limiter.enabled) return;
    const { credential, user } = request;
    if (!credential || !user) return; // the guard has answered 401 already
    const key = credential.kind === "api_key" ? `key:${credential.keyId}` : `user:${user.id}`;
    limit(limiter, key, reply, limiter.enforcesCredentials);
  };
}

/**
 * For public routes with no credential (register, login, refresh, OAuth; share links): by client
 * address, always enforced (they guard passwords and tokens). `budget` names a separate budget per
 * address (the share links'), "ip" being the default.
 */
export function limitPerClientIp(limiter: RateLimiter, budget = "ip"): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (!limiter.enabled) return;
    limit(limiter, `${budget}:${request.ip}`, reply, true);
  };
}
