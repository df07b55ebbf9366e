import { z } from "zod";
import { BOT_STATUSES } from "../../core/index.js";
import { Pagination } from "../validation.js";
import { RegisterBody } from "./auth.js";
import { Timestamp } from "./common.js";

/**
 * The users group (/v1/users/me...) and the views of the API request log (the user's own log and
 * one API key's usage). The spec leaves all of these shapes open; the README documents ours.
 */

export const UserProfile = z.object({
  id: z.number().int(),
  email: z.string(),
  name: z.string(),
  createdAt: Timestamp,
  /** False for accounts created by OAuth sign-in: they have no password to log in or change with. */
  hasPassword: z.boolean(),
  /** OAuth providers linked to this account ("google", "microsoft"). */
  oauthProviders: z.array(z.string()),
});
export type UserProfile = z.infer<typeof UserProfile>;

export const UpdateProfileBody = z
  .strictObject({
    name: RegisterBody.shape.name.optional(),
    password: RegisterBody.shape.password.optional().describe("the new password"),
    currentPassword: z.string().max(256).optional().describe("required with password"),
    email: z
      .unknown()
      .optional()
      .refine((value) => value === undefined, "the e-mail address cannot be changed"),
  })
  .superRefine((body, ctx) => {
    if (body.password !== undefined && body.currentPassword === undefined) {
      ctx.addIssue({
        code: "invalid_type",
        expected: "string",
        path: ["currentPassword"],
        message: "Field required",
        input: undefined,
      });
    }
  });
export type UpdateProfileBody = z.infer<typeof UpdateProfileBody>;

/** The profile; after a password change also a new sign-in's tokens (the old ones are refused). */
export const UpdateProfileResult = UserProfile.extend({
  access_token: z
    .string()
    .optional()
    .describe("only when the password changed: every token issued before is refused now; use these"),
  refresh_token: z.string().optional().describe("only when the password changed"),
  token_type: z.literal("bearer").optional().describe("only when the password changed"),
});
export type UpdateProfileResult = z.infer<typeof UpdateProfileResult>;

/**
 * Periods start no earlier than 1970: nothing meetbot keeps is older, and JavaScript's Date.UTC
 * reads years 0-99 as 1900-1999, so they are refused rather than misread.
 */
const FIRST_YEAR = 1970;
const fromFirstYear = (value: string) => Number(value.slice(0, 4)) >= FIRST_YEAR;

const Month = z
  .string()
  .regex(/^[0-9]{4}-(0[1-9]|1[0-2])$/, "must be a month, YYYY-MM")
  .refine(fromFirstYear, `must be ${FIRST_YEAR}-01 or later`);

export const UsageQuery = z.object({
  period: Month.optional().describe("a UTC calendar month, YYYY-MM; default the current one"),
});
export type UsageQuery = z.infer<typeof UsageQuery>;

/** Every status, zero included, so that clients need no defaults. */
export const BotsByStatus = z.object(
  Object.fromEntries(BOT_STATUSES.map((s) => [s, z.number().int()])) as Record<
    (typeof BOT_STATUSES)[number],
    z.ZodNumber
  >,
);

export const Usage = z.object({
  period: z.object({
    name: z.string().describe("YYYY-MM"),
    start: Timestamp.describe("inclusive"),
    end: Timestamp.describe("exclusive"),
  }),
  bots: z.object({
    created: z.number().int().describe("bots created in the period"),
    byStatus: BotsByStatus.describe("current status of the bots created in the period"),
  }),
  recordings: z.object({
    count: z.number().int(),
    recordedMinutes: z.number().describe("sum of the durations of recordings made in the period"),
  }),
  apiRequests: z.number().int().describe("authenticated requests in the period (logs are kept 30 days)"),
});
export type Usage = z.infer<typeof Usage>;

export const MAX_ANALYTICS_DAYS = 366;
const Day = z.iso
  .date()
  .refine(fromFirstYear, `must be ${FIRST_YEAR}-01-01 or later`)
  .describe("YYYY-MM-DD (UTC)");

export const AnalyticsQuery = z
  .object({
    days: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_ANALYTICS_DAYS)
      .optional()
      .describe("how many days, ending with `end`; default 30"),
    start: Day.optional().describe("first day (inclusive); not with days"),
    end: Day.optional().describe("last day (inclusive); default today"),
  })
  .superRefine((query, ctx) => {
    if (query.start !== undefined && query.days !== undefined) {
      ctx.addIssue({ code: "custom", path: ["days"], message: "give either days or start, not both" });
    }
    if (query.start !== undefined && query.end !== undefined) {
      const span = daysBetween(query.start, query.end) + 1;
      if (span < 1) ctx.addIssue({ code: "custom", path: ["start"], message: "start is after end" });
      else if (span > MAX_ANALYTICS_DAYS)
        ctx.addIssue({ code: "custom", path: ["start"], message: `at most ${MAX_ANALYTICS_DAYS} days` });
    }
  });
export type AnalyticsQuery = z.infer<typeof AnalyticsQuery>;

export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

const Failures = z.record(z.string(), z.number().int()).describe("FATAL bots by subCode");

const DayFigures = z.object({
  botsCreated: z.number().int(),
  recordedMinutes: z.number(),
  failures: Failures,
  apiRequests: z.number().int(),
});

export const Analytics = z.object({
  start: z.string().describe("YYYY-MM-DD, inclusive"),
  end: z.string().describe("YYYY-MM-DD, inclusive"),
  days: z.array(DayFigures.extend({ date: z.string().describe("YYYY-MM-DD (UTC)") })),
  totals: DayFigures,
});
export type Analytics = z.infer<typeof Analytics>;

export const ApiLogsQuery = z.object({ ...Pagination });
export type ApiLogsQuery = z.infer<typeof ApiLogsQuery>;

export const CredentialUsed = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("access_token") }),
  z.object({
    kind: z.literal("api_key"),
    /** Null once the key itself is gone. */
    apiKeyId: z.number().int().nullable(),
    keyPreview: z.string().nullable(),
  }),
]);

export const ApiLogEntry = z.object({
  id: z.number().int(),
  createdAt: Timestamp.describe("when the request arrived"),
  method: z.string(),
  path: z.string().describe("as requested, without the query string"),
  route: z.string().describe("the route pattern, e.g. /v1/bots/:id"),
  statusCode: z.number().int(),
  latencyMs: z.number(),
  credential: CredentialUsed,
});
export type ApiLogEntry = z.infer<typeof ApiLogEntry>;

export const ApiLogList = z.object({
  logs: z.array(ApiLogEntry),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type ApiLogList = z.infer<typeof ApiLogList>;

export const API_KEY_USAGE_MAX_DAYS = 30;

export const ApiKeyUsageQuery = z.object({
  days: z.coerce.number().int().min(1).max(API_KEY_USAGE_MAX_DAYS).default(API_KEY_USAGE_MAX_DAYS),
});
export type ApiKeyUsageQuery = z.infer<typeof ApiKeyUsageQuery>;

export const ApiKeyUsage = z.object({
  apiKeyId: z.number().int(),
  lastUsedAt: Timestamp.nullable(),
  start: z.string().describe("YYYY-MM-DD, first day counted"),
  end: z.string().describe("YYYY-MM-DD, today"),
  totalRequests: z.number().int(),
  days: z.array(z.object({ date: z.string(), requests: z.number().int() })),
  endpoints: z.array(
    z.object({
      method: z.string(),
      route: z.string(),
      requests: z.number().int(),
      lastUsedAt: Timestamp,
    }),
  ),
});
export type ApiKeyUsage = z.infer<typeof ApiKeyUsage>;
