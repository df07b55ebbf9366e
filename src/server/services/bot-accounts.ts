import type { Kysely } from "kysely";
import { type LoginSessionWriteBack, StorageState } from "../../core/index.js";
import type { Sealed, SecretBox } from "../auth/secret-box.js";
import { toIso } from "../db/database.js";
import type { BotAccountRow, Database } from "../db/schema.js";
import { ConflictError, NotFoundError, ServiceUnavailableError } from "../errors.js";
import type {
  BotAccount,
  BotAccountList,
  BotAccountListQuery,
  CreateBotAccountBody,
  UpdateBotAccountBody,
} from "../schemas/index.js";
import { StartupError } from "../startup-error.js";
import { accountStatus } from "./bot-logins.js";
import type { ServiceContext } from "./context.js";

/**
 * A user's bot accounts: platform accounts whose signed-in session (a Playwright storage state)
 * bots use to join as that account. The session is stored only encrypted (auth/secret-box.ts)
 * and leaves the server only inside a BotConfig; no answer, log line or webhook carries it.
 * Holding accounts for bots is in ./bot-logins.ts.
 */

export class BotAccountNotFoundError extends NotFoundError {
  constructor() {
    super("Bot account not found");
  }
}

/** A sealed session opens only on its owner's accounts: a ciphertext copied elsewhere does not. */
export function sessionAdditionalData(userId: number): string {
  return `meetbot bot-account session; user ${userId}`;
}

function sealedOf(row: BotAccountRow): Sealed {
  return {
    keyId: row.session_key_id,
    nonce: row.session_nonce,
    tag: row.session_tag,
    ciphertext: row.session_ciphertext,
  };
}

export function sessionColumns(sealed: Sealed) {
  return {
    session_key_id: sealed.keyId,
    session_nonce: sealed.nonce,
    session_tag: sealed.tag,
    session_ciphertext: sealed.ciphertext,
  };
}

export function toBotAccount(row: BotAccountRow): BotAccount {
  return {
    id: row.id,
    platform: row.platform as BotAccount["platform"],
    name: row.name,
    group: row.account_group,
    maxConcurrent: row.max_concurrent,
    status: accountStatus(row),
    inUse: row.in_use,
    accountName: row.account_name,
    accountEmail: row.account_email,
    lastUsedAt: row.last_used_at,
    lastCheckedAt: row.last_checked_at,
    sessionUpdatedAt: row.session_updated_at,
    createdAt: row.created_at,
  };
}

export class BotAccountService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly box: SecretBox,
  ) {}

  async create(userId: number, input: CreateBotAccountBody): Promise<BotAccount> {
    const sealed = this.seal(userId, input.session);
    const now = toIso(this.ctx.now());
    const row = await this.ctx.db
      .insertInto("bot_accounts")
      .values({
        user_id: userId,
        platform: input.platform,
        name: input.name,
        account_group: input.group,
        max_concurrent: input.maxConcurrent,
        state: "unchecked",
        disabled: 0,
        in_use: 0,
        account_name: null,
        account_email: null,
        ...sessionColumns(sealed),
        session_version: 1,
        session_updated_at: now,
        last_used_at: null,
        last_checked_at: null,
        check_meeting_url: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toBotAccount(row);
  }

  async list(userId: number, query: BotAccountListQuery): Promise<BotAccountList> {
    const { status } = query;
    const base = this.ctx.db
      .selectFrom("bot_accounts")
      .where("user_id", "=", userId)
      .$if(query.platform !== undefined, (qb) => qb.where("platform", "=", query.platform as string))
      .$if(query.group !== undefined, (qb) => qb.where("account_group", "=", query.group as string))
      .$if(status === "disabled", (qb) => qb.where("disabled", "=", 1))
      .$if(status !== undefined && status !== "disabled", (qb) =>
        qb.where("disabled", "=", 0).where("state", "=", status as string),
      );
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .selectAll()
      .orderBy("id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      botAccounts: rows.map(toBotAccount),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  async get(userId: number, accountId: number): Promise<BotAccount> {
    return toBotAccount(await this.requireOwned(userId, accountId));
  }

  /** The caller's account, or 404 exactly as for one that does not exist. */
  async requireOwned(userId: number, accountId: number): Promise<BotAccountRow> {
    const row = await this.ctx.db
      .selectFrom("bot_accounts")
      .selectAll()
      .where("id", "=", accountId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!row) throw new BotAccountNotFoundError();
    return row;
  }

  /**
   * Name, group, maxConcurrent, disabled, or a new session (a new version: bots deployed with the
   * old one can no longer write theirs back; the account is `unchecked` again). Bots holding the
   * account keep it; a lower maxConcurrent only stops new holds.
   */
  async update(userId: number, accountId: number, input: UpdateBotAccountBody): Promise<BotAccount> {
    const sealed = input.session ? this.seal(userId, input.session) : undefined;
    const now = toIso(this.ctx.now());
    const row = await this.ctx.db
      .updateTable("bot_accounts")
      .set((eb) => ({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.group !== undefined ? { account_group: input.group } : {}),
        ...(input.maxConcurrent !== undefined ? { max_concurrent: input.maxConcurrent } : {}),
        ...(input.disabled !== undefined ? { disabled: input.disabled ? 1 : 0 } : {}),
        ...(sealed
          ? {
              ...sessionColumns(sealed),
              session_version: eb("session_version", "+", 1),
              session_updated_at: now,
              state: "unchecked",
            }
          : {}),
        updated_at: now,
      }))
      .where("id", "=", accountId)
      .where("user_id", "=", userId)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new BotAccountNotFoundError();
    return toBotAccount(row);
  }

  /** 409 while a bot holds the account; bots that used it before keep their history. */
  async remove(userId: number, accountId: number): Promise<void> {
    const result = await this.ctx.db
      .deleteFrom("bot_accounts")
      .where("id", "=", accountId)
      .where("user_id", "=", userId)
      .where("in_use", "=", 0)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) === 1) return;
    const row = await this.requireOwned(userId, accountId);
    throw new ConflictError(`Bot account is in use by ${row.in_use} bot(s): it can be deleted once they end`);
  }

  /**
   * The runner's session write-back (PUT /v1/bot-callbacks/{id}/login-session). Kept only while
   * the account's session is still the version the bot was given (or last wrote back itself): a
   * newer PATCH or another bot's newer write-back wins. A kept one is a new version, makes an
   * `unchecked` account `active`, and sets the account's name and e-mail when given. 409 for a
   * bot deployed without a login (or whose account was deleted since).
   */
  async writeBack(botId: number, input: LoginSessionWriteBack): Promise<{ kept: boolean }> {
    const bot = await this.ctx.db
      .selectFrom("bots")
      .select(["user_id", "login_account_id", "login_session_version"])
      .where("id", "=", botId)
      .executeTakeFirst();
    const accountId = bot?.login_account_id ?? null;
    const version = bot?.login_session_version ?? null;
    if (!bot || accountId === null || version === null) throw new ConflictError("The bot holds no login");
    const sealed = this.seal(bot.user_id, input.session);
    const now = toIso(this.ctx.now());
    return this.ctx.db.transaction().execute(async (trx) => {
      const kept = await trx
        .updateTable("bot_accounts")
        .set((eb) => ({
          ...sessionColumns(sealed),
          session_version: eb("session_version", "+", 1),
          session_updated_at: now,
          state: eb.case().when("state", "=", "unchecked").then("active").else(eb.ref("state")).end(),
          ...(typeof input.accountName === "string" ? { account_name: input.accountName } : {}),
          ...(typeof input.accountEmail === "string" ? { account_email: input.accountEmail } : {}),
          updated_at: now,
        }))
        .where("id", "=", accountId)
        .where("session_version", "=", version)
        .returning("session_version")
        .executeTakeFirst();
      if (!kept) return { kept: false };
      // The bot's own later write-backs follow this one (a retry whose answer was lost is kept).
      await trx
        .updateTable("bots")
        .set({ login_session_version: kept.session_version })
        .where("id", "=", botId)
        .execute();
      return { kept: true };
    });
  }

  /** The account's session, decrypted, for a runner's BotConfig. */
  openSession(row: BotAccountRow): StorageState {
    const text = this.box.open(sealedOf(row), sessionAdditionalData(row.user_id));
    return StorageState.parse(JSON.parse(text));
  }

  /** A session sealed for the user's accounts (a check's rotated session). */
  sealFor(userId: number, session: StorageState): Sealed {
    return this.seal(userId, session);
  }

  private seal(userId: number, session: StorageState): Sealed {
    if (!this.box.configured)
      throw new ServiceUnavailableError(
        "Bot accounts are not available: the operator has not set MEETBOT_SECRET_KEY, the key their sessions are encrypted with",
      );
    return this.box.seal(JSON.stringify(session), sessionAdditionalData(userId));
  }
}

/**
 * At startup, before any request: refuses to run (StartupError, one line) when bot accounts are
 * stored and MEETBOT_SECRET_KEY is not set, or does not have a key their sessions were sealed
 * with; then rewrites every session sealed with another key than the first one under the first
 * (key rotation). A session changed meanwhile by another server process is left to that one.
 * Returns how many were rewritten.
 */
export async function prepareSessionKeys(db: Kysely<Database>, box: SecretBox): Promise<number> {
  const used = await db
    .selectFrom("bot_accounts")
    .select(["session_key_id"])
    .select((eb) => eb.fn.countAll().as("count"))
    .groupBy("session_key_id")
    .execute();
  if (used.length === 0) return 0;
  const stored = used.reduce((sum, row) => sum + Number(row.count), 0);
  if (!box.configured)
    throw new StartupError(
      `MEETBOT_SECRET_KEY is not set, but ${stored} bot account session(s) are stored encrypted: set the key they were stored with`,
    );
  const missing = used.filter((row) => !box.has(row.session_key_id));
  if (missing.length > 0) {
    const ids = missing.map((row) => `"${row.session_key_id}" (${Number(row.count)} session(s))`).join(", ");
    throw new StartupError(
      `MEETBOT_SECRET_KEY has no key with id ${ids}, which stored bot account sessions are encrypted with: add it as <id>:<base64>`,
    );
  }
  const current = box.currentKeyId as string;
  const stale = await db
    .selectFrom("bot_accounts")
    .selectAll()
    .where("session_key_id", "!=", current)
    .execute();
  let resealed = 0;
  for (const row of stale) {
    const aad = sessionAdditionalData(row.user_id);
    let text: string;
    try {
      text = box.open(sealedOf(row), aad);
    } catch (err) {
      throw new StartupError(`bot account ${row.id}: ${(err as Error).message}`);
    }
    const result = await db
      .updateTable("bot_accounts")
      .set(sessionColumns(box.seal(text, aad)))
      .where("id", "=", row.id)
      .where("session_key_id", "=", row.session_key_id)
      .where("session_version", "=", row.session_version)
      .executeTakeFirst();
    resealed += Number(result.numUpdatedRows);
  }
  return resealed;
}
