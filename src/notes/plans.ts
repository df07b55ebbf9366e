/**
 * The notes interface's plans (issue 12 §5) and their hourly request budgets. A leaf module: the
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

export const isPlan = (name: string): name is Plan => (PLANS as readonly string[]).includes(name);
