import { z } from "zod";
import { BotAccountStatus, Platform, StorageState } from "../../core/index.js";
import { Pagination } from "../validation.js";
import { Timestamp } from "./common.js";

/** How many bots may use one account at once, at most. */
export const MAX_ACCOUNT_CONCURRENCY = 50;
export const DEFAULT_ACCOUNT_GROUP = "default";

export const AccountGroup = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .describe(`bots with a login pick an account of their group; default "${DEFAULT_ACCOUNT_GROUP}"`);

/**
 * A session as the API takes it: a Playwright storage state (src/core/login.ts) that signs
 * something in, so at least one cookie. Its whole body is at most 1 MiB (the JSON body limit).
 */
export const AccountSession = StorageState.extend({
  cookies: StorageState.shape.cookies.min(1, "a session signs in with cookies: give at least one"),
}).describe(
  "Playwright's storage state ({cookies, origins}), as context.storageState() writes it. Stored " +
    "encrypted; never shown again by any route.",
);

export const CreateBotAccountBody = z.object({
  platform: Platform,
  name: z.string().trim().min(1).max(200).describe("yours, to tell accounts apart"),
  group: AccountGroup.default(DEFAULT_ACCOUNT_GROUP),
  maxConcurrent: z
    .number()
    .int()
    .min(1)
    .max(MAX_ACCOUNT_CONCURRENCY)
    .default(1)
    .describe("how many bots may use the account at once"),
  session: AccountSession,
});
export type CreateBotAccountBody = z.infer<typeof CreateBotAccountBody>;

/**
 * PATCH: any of these; absent ones stay. A new `session` replaces the stored one and makes the
 * account `unchecked` again. Unknown fields (a typo, or `status`) are a 422.
 */
export const UpdateBotAccountBody = z.strictObject({
  name: CreateBotAccountBody.shape.name.optional(),
  group: AccountGroup.optional(),
  maxConcurrent: CreateBotAccountBody.shape.maxConcurrent.unwrap().optional(),
  disabled: z.boolean().optional().describe("true: no bot gets the account until it is false again"),
  session: AccountSession.optional(),
});
export type UpdateBotAccountBody = z.infer<typeof UpdateBotAccountBody>;

/** Every answer about an account: never its session. */
export const BotAccount = z.object({
  id: z.number().int(),
  platform: Platform,
  name: z.string(),
  group: z.string(),
  maxConcurrent: z.number().int(),
  status: BotAccountStatus,
  inUse: z.number().int().describe("bots holding the account right now"),
  accountName: z.string().nullable().describe("the name the platform shows, as a bot or check read it"),
  accountEmail: z.string().nullable(),
  lastUsedAt: Timestamp.nullable().describe("when a bot was last given the account"),
  lastCheckedAt: Timestamp.nullable(),
  sessionUpdatedAt: Timestamp.describe("when the stored session was last replaced (upload or write-back)"),
  createdAt: Timestamp,
});
export type BotAccount = z.infer<typeof BotAccount>;

export const BotAccountListQuery = z.object({
  ...Pagination,
  platform: Platform.optional(),
  group: z.string().max(100).optional(),
  status: BotAccountStatus.optional(),
});
export type BotAccountListQuery = z.infer<typeof BotAccountListQuery>;

export const BotAccountList = z.object({
  botAccounts: z.array(BotAccount),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type BotAccountList = z.infer<typeof BotAccountList>;

/** POST /v1/bot-accounts/{id}/check. */
export const CheckBotAccountBody = z
  .strictObject({
    meetingUrl: z
      .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
      .max(2048)
      .optional()
      .describe(
        "a meeting of the account's platform whose pre-join the check opens; kept for the next " +
          "checks (scheduled ones too). Default: the last one given",
      ),
  })
  .prefault({});
export type CheckBotAccountBody = z.infer<typeof CheckBotAccountBody>;

export const BotAccountCheckQueued = z.object({
  accountId: z.number().int(),
  checkId: z.number().int(),
  status: z.literal("queued"),
});
export type BotAccountCheckQueued = z.infer<typeof BotAccountCheckQueued>;

/** The answer to a check's runner: the account's status after its report. */
export const BotAccountCheckResult = z.object({ status: z.string() });
