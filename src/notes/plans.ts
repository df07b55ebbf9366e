/**
 * The notes interface's plans and their hourly request budgets. A leaf module: the
 * server's environment schema names the plans too, and must not import the limiter.
 */
export const PLANS = ["free", "pro", "enterprise"] as const;
export type Plan = (typeof PLANS)[number];

/** Requests per clock hour; null: no limit. */
export const HOURLY_LIMITS: Readonly<Record<Plan, number | null>> = {
  free: 100,
  pro: 1000,
  enterprise: null,
};

/**
 * X-RateLimit-Limit and -Remaining of a plan with no limit (Enterprise): 2^31 - 1, the largest
 * integer every client's integer type holds and more than any hour's requests; the same in both
 * headers on every response, as nothing is counted. A number, like every plan's: clients parse
 * these headers as integers.
 */
export const UNLIMITED_HEADER_VALUE = 2_147_483_647;

export const isPlan = (name: string): name is Plan => (PLANS as readonly string[]).includes(name);
