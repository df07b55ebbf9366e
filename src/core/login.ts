import { z } from "zod";

/**
 * Signed-in bots: the session a bot signs in with, as the control plane hands it to the runner
 * (BotConfig.login) and as the runner hands it back (PUT /v1/bot-callbacks/{id}/login-session).
 *
 * The session is Playwright's storage state: what `context.storageState()` writes and
 * `browser.newContext({storageState})` reads, the format a person's "sign in once" script saves
 * (docs/notes/getting-in-2026.md). Fields Playwright may add beside these (IndexedDB, OPFS snapshots)
 * are dropped: only cookies and localStorage travel.
 *
 * Bounds: a whole session's JSON is at most MAX_SESSION_BYTES (the routes' body limit checks it);
 * the bounds below keep any one part of it sane. A real browser keeps a cookie's name and value
 * within 4096 bytes together and about 3000 cookies per profile; a signed-in Google, Zoom or
 * Microsoft account needs a few dozen.
 */

/** The largest session accepted, as JSON (one MiB). */
export const MAX_SESSION_BYTES = 1024 * 1024;
export const MAX_SESSION_COOKIES = 1000;
export const MAX_SESSION_ORIGINS = 200;
export const MAX_LOCAL_STORAGE_ITEMS = 1000;

export const SAME_SITE_VALUES = ["Strict", "Lax", "None"] as const;

export const StorageCookie = z.object({
  name: z.string().min(1).max(4096),
  value: z.string().max(8192),
  domain: z.string().min(1).max(255),
  path: z.string().min(1).max(1024),
  /** Unix time in seconds; -1 for a session cookie (Playwright's convention). */
  expires: z.number().min(-1).max(1e11),
  httpOnly: z.boolean(),
  secure: z.boolean(),
  sameSite: z.enum(SAME_SITE_VALUES),
});
export type StorageCookie = z.infer<typeof StorageCookie>;

export const StorageOrigin = z.object({
  /** An origin, e.g. https://teams.microsoft.com. */
  origin: z.string().min(1).max(2048),
  localStorage: z
    .array(z.object({ name: z.string().max(8192), value: z.string().max(MAX_SESSION_BYTES) }))
    .max(MAX_LOCAL_STORAGE_ITEMS),
});
export type StorageOrigin = z.infer<typeof StorageOrigin>;

export const StorageState = z.object({
  cookies: z.array(StorageCookie).max(MAX_SESSION_COOKIES),
  origins: z.array(StorageOrigin).max(MAX_SESSION_ORIGINS),
});
export type StorageState = z.infer<typeof StorageState>;

/**
 * When a bot with a login signs in: `always`, before it joins; `only_if_required`, only when the
 * meeting refuses an anonymous guest (a sign-in wall, "authorized participants only"), then it
 * tries again signed in. Either way the account was held for it at deploy.
 */
export const LOGIN_MODES = ["always", "only_if_required"] as const;
export const LoginMode = z.enum(LOGIN_MODES);
export type LoginMode = z.infer<typeof LoginMode>;

/**
 * What a runner gets in BotConfig.login: the account the server held for this bot, and its
 * session, decrypted. Absent: the bot joins anonymously.
 *
 * A runner that ends its call cleanly PUTs the browser's current storage state back to
 * /v1/bot-callbacks/{botId}/login-session (platforms rotate cookies), before its last status
 * report; one whose session no longer signs in reports FATAL SESSION_EXPIRED and writes nothing
 * back. The session goes nowhere else: not in logs, events, artifacts or traces.
 */
export const RunnerLogin = z.object({
  mode: LoginMode,
  accountId: z.number().int().positive(),
  /** The name the platform shows for the account, when known (a signed-in bot joins under it). */
  accountName: z.string().max(300).nullable(),
  session: StorageState,
});
export type RunnerLogin = z.infer<typeof RunnerLogin>;

/**
 * Where a bot account stands: `unchecked` (a session nobody has used or checked yet), `active`
 * (a bot or a check signed in with it), `expired` (it no longer signs in: upload a new one),
 * `disabled` (its owner turned it off; it keeps its other state underneath).
 */
export const BOT_ACCOUNT_STATUSES = ["unchecked", "active", "expired", "disabled"] as const;
export const BotAccountStatus = z.enum(BOT_ACCOUNT_STATUSES);
export type BotAccountStatus = z.infer<typeof BotAccountStatus>;

/** The body of PUT /v1/bot-callbacks/{id}/login-session: the runner's session write-back. */
export const LoginSessionWriteBack = z.object({
  session: StorageState,
  /** The account's name and e-mail as the platform showed them, when the runner read them. */
  accountName: z.string().max(300).nullable().optional(),
  accountEmail: z.string().max(320).nullable().optional(),
});
export type LoginSessionWriteBack = z.infer<typeof LoginSessionWriteBack>;

/** The answer: whether the server kept it (false: a newer session had been stored since deploy). */
export const LoginSessionWriteBackResult = z.object({ kept: z.boolean() });
export type LoginSessionWriteBackResult = z.infer<typeof LoginSessionWriteBackResult>;

export function loginSessionUrl(config: { botId: number; callback: { baseUrl: string } }): string {
  return new URL(`/v1/bot-callbacks/${config.botId}/login-session`, config.callback.baseUrl).toString();
}

/** BotConfig.accountCheck: the runner checks a session and reports to `resultUrl`; nothing else. */
export const AccountCheckTask = z.object({
  checkId: z.number().int().positive(),
  /** POST {resultUrl} with the callback token: AccountCheckReport. */
  resultUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
});
export type AccountCheckTask = z.infer<typeof AccountCheckTask>;

/**
 * What a check's runner reports (POST /v1/bot-account-checks/{id}/result): whether the pre-join
 * showed the account, the account's name and e-mail as shown, and the browser's session after the
 * visit (platforms rotate cookies), only when signed in. `reason` says why not, with no secret.
 * `signedIn` is false with `failure` when the check could not tell.
 */
export const AccountCheckReport = z.object({
  signedIn: z.boolean(),
  accountName: z.string().max(300).nullable().optional(),
  accountEmail: z.string().max(320).nullable().optional(),
  session: StorageState.optional(),
  reason: z.string().max(2000).optional(),
  /**
   * The check could not tell (the page did not load, a wall that says nothing about the session,
   * the browser crashed): the check fails and the account stays as it was.
   */
  failure: z.string().max(2000).optional(),
});
export type AccountCheckReport = z.infer<typeof AccountCheckReport>;
