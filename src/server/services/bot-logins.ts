import { type Kysely, sql } from "kysely";
import { type BotAccountStatus, botAccountWebhookEvent, type Platform } from "../../core/index.js";
import type { BotAccountRow, BotRow, Database } from "../db/schema.js";
import type { StoredLogin } from "../schemas/index.js";
import { enqueueUserEvents } from "../webhooks/outbox.js";

/**
 * How bots hold bot accounts, in the database so that any number of server processes agree.
 * Every function takes the transaction it runs in.
 *
 * - **Hold** (at deploy, in the transaction that moves the bot to DEPLOYING): one conditional
 *   UPDATE per candidate account, `in_use = in_use + 1 … WHERE in_use < max_concurrent AND …`.
 *   Two deploys racing for the last free place cannot both get it: on PostgreSQL the second
 *   UPDATE waits for the first one's row lock, then re-checks its WHERE on the row the first one
 *   committed and changes nothing (and the deploy tries the next candidate); SQLite has one
 *   writer at a time. The bot records the account, the session version it was given and
 *   `login_held = 1`.
 * - **Release** (the runner's last report, or the server ending the bot: kill, watchdog, launch
 *   failure): `login_held` 1 → 0 on the bot, and only if that changed a row, `in_use - 1` on the
 *   account, in one transaction: a release happens once however often it is asked for.
 *
 * Lock order, everywhere: the bot's row, then the account's.
 */

/** Statuses an account is picked in; `disabled` is a switch of its own. */
const PICKABLE_STATES = ["active", "unchecked"] as const;

export type HoldResult = { account: BotAccountRow } | { unavailable: string };

/** Where the account stands, as the API shows it. */
export function accountStatus(row: Pick<BotAccountRow, "state" | "disabled">): BotAccountStatus {
  return row.disabled ? "disabled" : (row.state as BotAccountStatus);
}

/**
 * Holds an account of the bot's login for it: `accountId`, or the least recently used free
 * account of `group` (never used first, then the oldest use; ties by id). Sets the account's
 * lastUsedAt. `unavailable` says why none could be held, naming the account or group.
 */
export async function holdLoginAccount(
  db: Kysely<Database>,
  bot: Pick<BotRow, "id" | "user_id" | "platform">,
  login: StoredLogin,
  now: string,
): Promise<HoldResult> {
  const platform = bot.platform as Platform;
  const candidates =
    "accountId" in login
      ? [login.accountId]
      : (
          await db
            .selectFrom("bot_accounts")
            .select("id")
            .where("user_id", "=", bot.user_id)
            .where("platform", "=", platform)
            .where("account_group", "=", login.group)
            .where("disabled", "=", 0)
            .where("state", "in", PICKABLE_STATES)
            .whereRef("in_use", "<", "max_concurrent")
            .orderBy(sql`case when last_used_at is null then 0 else 1 end`)
            .orderBy("last_used_at")
            .orderBy("id")
            .execute()
        ).map((row) => row.id);
  for (const accountId of candidates) {
    const account = await db
      .updateTable("bot_accounts")
      .set((eb) => ({ in_use: eb("in_use", "+", 1), last_used_at: now }))
      .where("id", "=", accountId)
      .where("user_id", "=", bot.user_id)
      .where("platform", "=", platform)
      .where("disabled", "=", 0)
      .where("state", "in", PICKABLE_STATES)
      .whereRef("in_use", "<", "max_concurrent")
      .returningAll()
      .executeTakeFirst();
    if (!account) continue;
    await db
      .updateTable("bots")
      .set({ login_account_id: account.id, login_session_version: account.session_version, login_held: 1 })
      .where("id", "=", bot.id)
      .execute();
    return { account };
  }
  return { unavailable: await whyUnavailable(db, bot.user_id, platform, login) };
}

async function whyUnavailable(
  db: Kysely<Database>,
  userId: number,
  platform: Platform,
  login: StoredLogin,
): Promise<string> {
  if ("accountId" in login) {
    const account = await db
      .selectFrom("bot_accounts")
      .select(["platform", "state", "disabled", "in_use", "max_concurrent"])
      .where("id", "=", login.accountId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    const which = `Bot account ${login.accountId}`;
    if (!account) return `${which} no longer exists`;
    if (account.platform !== platform) return `${which} is for ${account.platform}, not ${platform}`;
    if (account.disabled) return `${which} is disabled`;
    if (account.state === "expired") return `${which} is expired: upload a new session`;
    return `${which} is in use by ${account.in_use} bot(s) (maxConcurrent ${account.max_concurrent})`;
  }
  const rows = await db
    .selectFrom("bot_accounts")
    .select(["state", "disabled", "in_use", "max_concurrent"])
    .where("user_id", "=", userId)
    .where("platform", "=", platform)
    .where("account_group", "=", login.group)
    .execute();
  const group = `group "${login.group}"`;
  if (rows.length === 0) return `No ${platform} bot account in ${group}`;
  const count = (test: (row: (typeof rows)[number]) => boolean) => rows.filter(test).length;
  const full = count((r) => !r.disabled && r.state !== "expired");
  return (
    `No ${platform} bot account of ${group} is free: ${rows.length} account(s), ` +
    `${full} in use to their maxConcurrent, ${count((r) => r.disabled === 1)} disabled, ` +
    `${count((r) => !r.disabled && r.state === "expired")} expired`
  );
}

/** Ends the bot's hold on its account, if it has one; a second call changes nothing. */
export async function releaseLoginAccount(db: Kysely<Database>, botId: number): Promise<void> {
  const released = await db
    .updateTable("bots")
    .set({ login_held: 0 })
    .where("id", "=", botId)
    .where("login_held", "=", 1)
    .returning("login_account_id")
    .executeTakeFirst();
  const accountId = released?.login_account_id;
  if (accountId === null || accountId === undefined) return;
  await db
    .updateTable("bot_accounts")
    .set((eb) => ({ in_use: eb("in_use", "-", 1) }))
    .where("id", "=", accountId)
    .where("in_use", ">", 0)
    .execute();
}

/**
 * The bot's runner found that its account's session no longer signs in (FATAL SESSION_EXPIRED):
 * the account becomes `expired` and its owner's webhooks get `bot_account.expired` — unless a
 * newer session was stored since the bot's deploy (a PATCH, another bot's write-back), which this
 * report says nothing about. Returns the deliveries queued.
 */
export async function expireLoginAccount(
  db: Kysely<Database>,
  bot: Pick<BotRow, "id" | "login_account_id" | "login_session_version">,
  eventTime: string,
  now: string,
): Promise<number> {
  if (bot.login_account_id === null || bot.login_session_version === null) return 0;
  const account = await db
    .updateTable("bot_accounts")
    .set({ state: "expired", updated_at: now })
    .where("id", "=", bot.login_account_id)
    .where("session_version", "=", bot.login_session_version)
    .where("state", "!=", "expired")
    .returning(["id", "user_id", "state", "disabled"])
    .executeTakeFirst();
  if (!account) return 0;
  const event = botAccountWebhookEvent("bot_account.expired", {
    accountId: account.id,
    status: accountStatus(account),
  });
  return enqueueUserEvents(db, account.user_id, bot.id, [event], eventTime, now);
}
