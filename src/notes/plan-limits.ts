import type {
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
  onSendAsyncHookHandler,
} from "fastify";
import type { Kysely } from "kysely";
import { currentUser } from "../server/auth/guard.js";
import { preparedQuery } from "../server/db/prepared.js";
import type { Database } from "../server/db/schema.js";
import { ApiError } from "../server/errors.js";
import { normalizeEmail } from "../server/services/users.js";
import { HOURLY_LIMITS, isPlan, type Plan, UNLIMITED_HEADER_VALUE } from "./plans.js";

/**
 * Each user of the notes interface has an hourly budget set by their plan, shared by
 * all of their API keys and access tokens. Windows are clock hours, as in the bot API's limiter
 * (src/server/http/rate-limit.ts), with its header names and Retry-After; unlike it, the count is
 * a row in the database, so that every server process on one PostgreSQL spends the same budget.
 *
 * - A refused request is not counted: a client that retries too early does not push its own
 *   reset further away, and Remaining never goes below 0.
 * - Enterprise has no limit and is not counted: its Limit and Remaining are UNLIMITED_HEADER_VALUE,
 *   a number like every plan's (a client parses the headers as integers), which never goes down.
 * - A response given before the user is known (401) shows the default plan's budget, untouched,
 *   for the current hour: nothing was spent, as nobody was identified.
 */

const HOUR_MS = 3_600_000;

export interface PlanRateState {
  plan: Plan;
  /** Requests per hour; null: unlimited. */
  limit: number | null;
  /** null: unlimited. */
  remaining: number | null;
  /** Unix seconds when the current window ends. */
  resetAt: number;
}

export type PlanDecision =
  | { allowed: true; state: PlanRateState }
  | { allowed: false; state: PlanRateState; retryAfterSeconds: number };

// Prepared: run on every request of the notes interface.
const selectPlan = preparedQuery((db, userId: number) =>
  db.selectFrom("users").select("plan").where("id", "=", userId),
);

/** One atomic statement: counts the request unless the window is full; no row back means full. */
const countRequest = preparedQuery((db, userId: number, windowStart: string, limit: number) =>
  db
    .insertInto("plan_usage")
    .values({ user_id: userId, window_start: windowStart, count: 1 })
    .onConflict((conflict) =>
      conflict
        .columns(["user_id", "window_start"])
        .doUpdateSet((eb) => ({ count: eb("plan_usage.count", "+", 1) }))
        .where("plan_usage.count", "<", limit),
    )
    .returning("count"),
);

/** A user's plan as stored: null (never set) means the default plan. */
export function effectivePlan(stored: string | null | undefined, defaultPlan: Plan): Plan {
  return stored && isPlan(stored) ? stored : defaultPlan;
}

export class PlanLimiter {
  private prunedBefore = "";

  constructor(
    private readonly db: Kysely<Database>,
    private readonly defaultPlan: Plan,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Counts one request of `userId` against their plan's budget for this hour. */
  async take(userId: number): Promise<PlanDecision> {
    const nowMs = this.now().getTime();
    const window = hourWindow(nowMs);
    const [user] = await selectPlan(this.db, userId);
    const plan = effectivePlan(user?.plan, this.defaultPlan);
    const limit = HOURLY_LIMITS[plan];
    if (limit === null)
      return { allowed: true, state: { plan, limit, remaining: null, resetAt: window.resetAt } };

    await this.prune(window.previousStart);
    const [row] = await countRequest(this.db, userId, window.start, limit);
    if (!row) {
      return {
        allowed: false,
        state: { plan, limit, remaining: 0, resetAt: window.resetAt },
        retryAfterSeconds: Math.max(1, Math.ceil((window.resetAt * 1000 - nowMs) / 1000)),
      };
    }
    return { allowed: true, state: { plan, limit, remaining: limit - row.count, resetAt: window.resetAt } };
  }

  /** What a response shows before its user is known: the default plan's whole budget this hour. */
  anonymous(): PlanRateState {
    const limit = HOURLY_LIMITS[this.defaultPlan];
    return {
      plan: this.defaultPlan,
      limit,
      remaining: limit,
      resetAt: hourWindow(this.now().getTime()).resetAt,
    };
  }

  /**
   * Once per hour per process, deletes the windows before the previous one. The previous one is
   * kept so that a process whose clock runs a little ahead never empties a window that the
   * others still count in.
   */
  private async prune(before: string): Promise<void> {
    if (before === this.prunedBefore) return;
    this.prunedBefore = before;
    await this.db.deleteFrom("plan_usage").where("window_start", "<", before).execute();
  }
}

function hourWindow(nowMs: number): { start: string; previousStart: string; resetAt: number } {
  const index = Math.floor(nowMs / HOUR_MS);
  return {
    start: new Date(index * HOUR_MS).toISOString(),
    previousStart: new Date((index - 1) * HOUR_MS).toISOString(),
    resetAt: ((index + 1) * HOUR_MS) / 1000,
  };
}

export function planRateLimitHeaders(state: PlanRateState): Record<string, string> {
  return {
    "x-ratelimit-limit": String(state.limit ?? UNLIMITED_HEADER_VALUE),
    "x-ratelimit-remaining": String(state.remaining ?? UNLIMITED_HEADER_VALUE),
    "x-ratelimit-reset": String(state.resetAt),
  };
}

export class PlanLimitedError extends ApiError {
  constructor(decision: Extract<PlanDecision, { allowed: false }>) {
    super(
      429,
      `Rate limit exceeded: the ${decision.state.plan} plan allows ${decision.state.limit} requests per hour; ` +
        `retry in ${decision.retryAfterSeconds} s`,
      { ...planRateLimitHeaders(decision.state), "retry-after": String(decision.retryAfterSeconds) },
    );
  }
}

/**
 * An onRequest hook for after the auth hook (it needs `request.user`): counts the request against
 * the user's plan, sets the X-RateLimit-* headers, and answers 429 before the body is read once
 * the hour's budget is spent.
 */
export function planRateLimit(limiter: PlanLimiter): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const decision = await limiter.take(currentUser(request).id);
    if (!decision.allowed) throw new PlanLimitedError(decision);
    reply.headers(planRateLimitHeaders(decision.state));
  };
}

/**
 * An onSend hook for the whole notes app: a response that got no X-RateLimit-* headers (a 401,
 * or anything else answered before planRateLimit ran) gets the anonymous ones, so that every
 * response carries them.
 */
export function planHeadersOnEveryResponse(limiter: PlanLimiter): onSendAsyncHookHandler {
  return async (_request, reply, payload) => {
    if (!reply.hasHeader("x-ratelimit-limit")) reply.headers(planRateLimitHeaders(limiter.anonymous()));
    return payload;
  };
}

/** What `meetbot users set-plan` changed; undefined when no user has that e-mail. */
export interface PlanChange {
  email: string;
  /** As stored: null is the default plan. */
  before: Plan | null;
  after: Plan | null;
}

/** Gives the user with `email` a plan, or (null) back to the default plan. */
export async function setUserPlan(
  db: Kysely<Database>,
  email: string,
  plan: Plan | null,
): Promise<PlanChange | undefined> {
  const normalized = normalizeEmail(email);
  return db.transaction().execute(async (tx) => {
    const user = await tx
      .selectFrom("users")
      .select(["id", "email", "plan"])
      .where("email", "=", normalized)
      .executeTakeFirst();
    if (!user) return undefined;
    await tx.updateTable("users").set({ plan }).where("id", "=", user.id).execute();
    const before = user.plan && isPlan(user.plan) ? user.plan : null;
    return { email: user.email, before, after: plan };
  });
}
