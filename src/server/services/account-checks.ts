import { randomBytes } from "node:crypto";
import path from "node:path";
import { type Kysely, sql } from "kysely";
import {
  type AccountCheckReport,
  BotConfig,
  botAccountWebhookEvent,
  isPlatformHost,
  MeetingInfo,
  type Platform,
  type StorageState,
} from "../../core/index.js";
import { hexDigestsEqual, newCallbackToken, sha256Hex } from "../auth/tokens.js";
import { toIso } from "../db/database.js";
import type { BotAccountCheckRow, Database, DialectName } from "../db/schema.js";
import { ConflictError, UnauthorizedError, ValidationError } from "../errors.js";
import { enqueueUserEvents } from "../webhooks/outbox.js";
import { accountCheckFolder, sweepCheckFolders } from "./account-check-folders.js";
import { type BotAccountService, sessionColumns } from "./bot-accounts.js";
import { accountStatus } from "./bot-logins.js";
import { PollingWorker } from "../durable/polling-worker.js";
import type { ServiceContext } from "./context.js";

/**
 * Account checks (POST /v1/bot-accounts/{id}/check, and every MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS):
 * a short runner, started through the same Launcher as bots, opens a meeting with the account's
 * session, confirms the pre-join shows the account as a signed-in bot does, reports to
 * POST /v1/bot-account-checks/{id}/result with a per-check token, and exits.
 *
 * One durable task (docs/design.md), on bot_account_checks:
 *
 *   queued ──claim (lease)──▶ launch ──▶ running ──result──▶ completed
 *     ▲          │                          └──deadline passed──▶ failed (the account unchanged)
 *     └─lease ran out (the process died before it launched)
 *
 * A partial unique index keeps at most one queued or running check per account, whatever the
 * number of server processes: a request finding one answers 409, the schedule skips the account.
 */

export const CHECK_STATES = ["queued", "running", "completed", "failed"] as const;
/** A claimed check not launched within this long (its process died) is claimed again. */
export const ACCOUNT_CHECK_LEASE_MS = 60_000;

export interface AccountCheckQueued {
  accountId: number;
  checkId: number;
  status: "queued";
}

export interface AccountCheckSettings {
  /** Every active or unchecked account is checked this often; 0: never on a schedule. */
  intervalMs: number;
  /** How often this process looks for due checks (and starts queued ones). */
  pollIntervalMs: number;
  /** A launched check whose runner has not reported after this long fails. */
  deadlineMs: number;
  /** Whether this process runs the checks' worker. */
  worker: boolean;
}

/**
 * Queues a check of every account due one: not disabled, `active` or `unchecked`, with a meeting
 * to open, held by no bot (a bot in a call proves the session itself, and one cookie jar in two
 * places at once is a risk signal), not checked (nor tried) within `intervalMs`, and with no check
 * queued or running. One
 * statement whose conflict with the one-active-check index is skipped: safe in any number of
 * processes at once. Returns how many it queued.
 */
export async function scheduleDueChecks(
  db: Kysely<Database>,
  now: Date,
  intervalMs: number,
): Promise<number> {
  if (intervalMs <= 0) return 0;
  const at = toIso(now);
  const cutoff = toIso(new Date(now.getTime() - intervalMs));
  const result = await sql<{ id: number }>`
    insert into bot_account_checks
      (account_id, user_id, state, origin, meeting_url, attempts, created_at, updated_at)
    select a.id, a.user_id, 'queued', 'schedule', a.check_meeting_url, 0, ${at}, ${at}
    from bot_accounts a
    where a.disabled = 0
      and a.state in ('active', 'unchecked')
      and a.check_meeting_url is not null
      and a.in_use = 0
      and (a.last_checked_at is null or a.last_checked_at <= ${cutoff})
      and not exists (
        select 1 from bot_account_checks c
        where c.account_id = a.id and (c.state in ('queued', 'running') or c.created_at > ${cutoff})
      )
    on conflict (account_id) where state in ('queued', 'running') do nothing
    returning id`.execute(db);
  return result.rows.length;
}

/** Claims up to `limit` queued checks whose lease (if any) ran out; FOR UPDATE SKIP LOCKED on PostgreSQL. */
export async function claimQueuedChecks(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; leaseMs: number },
): Promise<BotAccountCheckRow[]> {
  const now = toIso(opts.now);
  const rows = await db
    .updateTable("bot_account_checks")
    .set((eb) => ({
      attempts: eb("attempts", "+", 1),
      lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
      claim_token: randomBytes(12).toString("hex"),
      updated_at: now,
    }))
    .where("id", "in", (eb) =>
      eb
        .selectFrom("bot_account_checks as c")
        .select("c.id")
        .where(sql<boolean>`c.state = 'queued' and (c.lease_until is null or c.lease_until <= ${now})`)
        .orderBy("c.id")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.id - b.id);
}

/** Claims a check may get before it fails (a check whose launch kills its process). */
const MAX_CHECK_CLAIMS = 3;

/** Checks launched at once by one process. */
const LAUNCH_CONCURRENCY = 10;

export class AccountCheckService {
  private readonly worker: PollingWorker<BotAccountCheckRow>;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly accounts: BotAccountService,
    private readonly settings: AccountCheckSettings,
  ) {
    // The durable task's run is the launch; the round's housekeeping goes before each claim.
    this.worker = new PollingWorker({
      name: "account checks",
      log: ctx.log,
      claim: (limit) =>
        claimQueuedChecks(ctx.db, ctx.dialect, { now: ctx.now(), limit, leaseMs: ACCOUNT_CHECK_LEASE_MS }),
      run: async (check) => {
        await this.launch(check);
      },
      beforeClaims: () => this.housekeeping(),
      concurrency: LAUNCH_CONCURRENCY,
      pollIntervalMs: settings.pollIntervalMs,
    });
  }

  /**
   * Queues a check of the caller's account (404 as for a missing one; 409 when it is disabled or
   * a check of it is already queued or running). `meetingUrl`: the meeting it opens to reach the
   * pre-join, kept for the next checks; without it the last one given (422 when there is none).
   */
  async request(
    userId: number,
    accountId: number,
    body: { meetingUrl?: string | undefined },
  ): Promise<AccountCheckQueued> {
    const account = await this.accounts.requireOwned(userId, accountId);
    if (account.disabled) throw new ConflictError("Bot account is disabled: enable it to check it");
    const meetingUrl = body.meetingUrl ?? account.check_meeting_url;
    if (!meetingUrl)
      throw new ValidationError([
        {
          loc: ["body", "meetingUrl"],
          msg: "give meetingUrl: a meeting of the account's platform whose pre-join the check opens",
          type: "missing",
        },
      ]);
    this.checkMeetingUrl(account.platform as Platform, meetingUrl);
    const now = toIso(this.ctx.now());
    const inserted = await this.ctx.db.transaction().execute(async (trx) => {
      const row = await sql<{ id: number }>`
        insert into bot_account_checks
          (account_id, user_id, state, origin, meeting_url, attempts, created_at, updated_at)
        values (${accountId}, ${userId}, 'queued', 'request', ${meetingUrl}, 0, ${now}, ${now})
        on conflict (account_id) where state in ('queued', 'running') do nothing
        returning id`.execute(trx);
      const id = row.rows[0]?.id;
      if (id === undefined) return undefined;
      await trx
        .updateTable("bot_accounts")
        .set({ check_meeting_url: meetingUrl })
        .where("id", "=", accountId)
        .execute();
      return Number(id);
    });
    if (inserted === undefined) throw new ConflictError("A check of this bot account is already running");
    this.wake();
    return { accountId, checkId: inserted, status: "queued" };
  }

  /**
   * A check's runner reports (POST /v1/bot-account-checks/{id}/result; authenticate() first). 409 once the check is no longer running (answered, or failed at its deadline). In one
   * transaction: the check completes; the account gets `lastCheckedAt`, the name and e-mail shown,
   * and, unless a newer session was stored since the check was launched, `active` (with the
   * rotated session the runner sent back) or `expired`; webhooks `bot_account.checked`, and
   * `bot_account.expired` when the account turned expired.
   */
  async report(checkId: number, report: AccountCheckReport): Promise<{ status: string }> {
    const now = toIso(this.ctx.now());
    if (report.failure !== undefined) {
      // The runner could not tell: the check fails, the account stays as it was.
      const failed = await this.ctx.db
        .updateTable("bot_account_checks")
        .set({ state: "failed", error_message: report.failure, completed_at: now, updated_at: now })
        .where("id", "=", checkId)
        .where("state", "=", "running")
        .executeTakeFirst();
      if (Number(failed.numUpdatedRows) !== 1) throw new ConflictError("The check is no longer running");
      this.ctx.log.warn({ checkId, reason: report.failure }, "bot account check failed");
      return { status: "failed" };
    }
    const outcome = await this.ctx.db.transaction().execute(async (trx) => {
      const check = await trx
        .updateTable("bot_account_checks")
        .set({
          state: "completed",
          result: report.signedIn ? "active" : "expired",
          error_message: report.signedIn ? null : (report.reason ?? null),
          completed_at: now,
          updated_at: now,
        })
        .where("id", "=", checkId)
        .where("state", "=", "running")
        .returningAll()
        .executeTakeFirst();
      if (!check) return null;
      const before = await trx
        .selectFrom("bot_accounts")
        .selectAll()
        .where("id", "=", check.account_id)
        .executeTakeFirst();
      if (!before) return { queued: 0, status: "deleted" };
      const current = before.session_version === check.session_version;
      const sealed =
        report.signedIn && current && report.session
          ? this.accounts.sealFor(before.user_id, report.session)
          : undefined;
      const after = await trx
        .updateTable("bot_accounts")
        .set((eb) => ({
          last_checked_at: now,
          updated_at: now,
          ...(current ? { state: report.signedIn ? "active" : "expired" } : {}),
          ...(report.signedIn && current && typeof report.accountName === "string"
            ? { account_name: report.accountName }
            : {}),
          ...(report.signedIn && current && typeof report.accountEmail === "string"
            ? { account_email: report.accountEmail }
            : {}),
          ...(sealed
            ? {
                ...sessionColumns(sealed),
                session_version: eb("session_version", "+", 1),
                session_updated_at: now,
              }
            : {}),
        }))
        .where("id", "=", before.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const status = accountStatus(after);
      const events = [botAccountWebhookEvent("bot_account.checked", { accountId: after.id, status })];
      if (after.state === "expired" && before.state !== "expired")
        events.push(botAccountWebhookEvent("bot_account.expired", { accountId: after.id, status }));
      const queued = await enqueueUserEvents(trx, after.user_id, null, events, now, now);
      return { queued, status };
    });
    if (!outcome) throw new ConflictError("The check is no longer running");
    if (outcome.queued > 0) this.ctx.outbox.notify();
    this.ctx.log.info({ checkId, status: outcome.status }, "bot account checked");
    return { status: outcome.status };
  }

  /** 401 unless `token` is the check's runner token (a check that does not exist answers alike). */
  async authenticate(checkId: number, token: string | null): Promise<void> {
    const row = await this.ctx.db
      .selectFrom("bot_account_checks")
      .select(["token_hash"])
      .where("id", "=", checkId)
      .executeTakeFirst();
    const hash = row?.token_hash;
    if (!row || !token || !hash || !hexDigestsEqual(sha256Hex(token), hash)) {
      throw new UnauthorizedError("Invalid callback token");
    }
  }

  start(): void {
    if (this.settings.worker) this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  wake(): void {
    this.worker.wake();
  }

  /**
   * One round, by the injected clock: fails running checks past their deadline, removes the
   * folders of checks that finished a while ago (account-check-folders.ts), queues the scheduled
   * ones that are due, and launches the queued ones. For tests and tools too.
   */
  async runDue(): Promise<{ failed: number; foldersRemoved: number; scheduled: number; launched: number }> {
    const done = await this.housekeeping();
    let launched = 0;
    await this.worker.runDue(async (check) => {
      if (await this.launch(check)) launched += 1;
    });
    return { ...done, launched };
  }

  private async housekeeping(): Promise<{ failed: number; foldersRemoved: number; scheduled: number }> {
    const now = this.ctx.now();
    const failed = await this.failOverdue(now);
    // A disk that refuses must not hold up the checks themselves.
    const foldersRemoved = await sweepCheckFolders(this.ctx, this.ctx.config.dataDir, now).catch(
      (err: unknown) => {
        this.ctx.log.warn({ err }, "account checks: could not sweep the checks' folders");
        return 0;
      },
    );
    const scheduled = await scheduleDueChecks(this.ctx.db, now, this.settings.intervalMs);
    return { failed, foldersRemoved, scheduled };
  }

  /** Running checks whose runner never reported fail; the account stays as it was. */
  private async failOverdue(now: Date): Promise<number> {
    const at = toIso(now);
    const rows = await this.ctx.db
      .updateTable("bot_account_checks")
      .set({
        state: "failed",
        error_message: "the check's runner did not report before its deadline",
        completed_at: at,
        updated_at: at,
      })
      .where("state", "=", "running")
      .where("deadline_at", "<=", at)
      .returning(["id", "account_id"])
      .execute();
    for (const row of rows)
      this.ctx.log.warn({ checkId: row.id, accountId: row.account_id }, "bot account check timed out");
    return rows.length;
  }

  /** Starts the runner of a claimed check; false when the claim was lost or the check failed. */
  private async launch(check: BotAccountCheckRow): Promise<boolean> {
    if (check.attempts > MAX_CHECK_CLAIMS)
      return this.failClaimed(
        check,
        `the check was interrupted ${MAX_CHECK_CLAIMS} times before it could start`,
      );
    const account = await this.ctx.db
      .selectFrom("bot_accounts")
      .selectAll()
      .where("id", "=", check.account_id)
      .executeTakeFirst();
    if (!account) return false; // deleted: its checks go with it
    if (account.disabled) return this.failClaimed(check, "the account was disabled before its check started");
    let session: StorageState;
    try {
      session = this.accounts.openSession(account);
    } catch (err) {
      this.ctx.log.error(
        { checkId: check.id, accountId: account.id, reason: (err as Error).message },
        "a bot account's session could not be decrypted",
      );
      return this.failClaimed(
        check,
        "the account's session could not be decrypted (the server log says why)",
      );
    }
    const token = newCallbackToken();
    const now = this.ctx.now();
    const mine = await this.ctx.db
      .updateTable("bot_account_checks")
      .set({
        state: "running",
        token_hash: sha256Hex(token),
        session_version: account.session_version,
        deadline_at: toIso(new Date(now.getTime() + this.settings.deadlineMs)),
        lease_until: null,
        claim_token: null,
        updated_at: toIso(now),
      })
      .where("id", "=", check.id)
      .where("state", "=", "queued")
      .where("claim_token", "=", check.claim_token)
      .executeTakeFirst();
    if (Number(mine.numUpdatedRows) !== 1) return false;
    const baseUrl = this.ctx.config.runner.callbackBaseUrl ?? this.ctx.publicBaseUrl();
    const resultUrl = `${baseUrl}${accountCheckResultPath(check.id)}`;
    try {
      const config = BotConfig.parse({
        botId: check.id,
        meetingInfo: { platform: account.platform, meetingUrl: check.meeting_url },
        botDisplayName: "Meetbot account check",
        callback: {
          baseUrl,
          token,
          ...(this.ctx.config.tls ? { ca: this.ctx.config.tls.certificates } : {}),
        },
        upload: { url: resultUrl },
        workDir: path.join(accountCheckFolder(this.ctx.config.dataDir, check.id), "work"),
        login: { mode: "always", accountId: account.id, accountName: account.account_name, session },
        accountCheck: { checkId: check.id, resultUrl },
        ...this.ctx.config.runner.settings,
      });
      await this.ctx.launcher.launch(config);
      this.ctx.log.info({ checkId: check.id, accountId: account.id }, "bot account check launched");
      return true;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.ctx.log.error({ err, checkId: check.id }, "bot account check launch failed");
      await this.finish(check.id, "running", `the check's runner could not be launched: ${message}`);
      return false;
    }
  }

  private async failClaimed(check: BotAccountCheckRow, message: string): Promise<false> {
    await this.ctx.db
      .updateTable("bot_account_checks")
      .set({
        state: "failed",
        error_message: message,
        completed_at: toIso(this.ctx.now()),
        lease_until: null,
        claim_token: null,
      })
      .where("id", "=", check.id)
      .where("claim_token", "=", check.claim_token)
      .execute();
    return false;
  }

  private async finish(checkId: number, from: string, message: string): Promise<void> {
    const at = toIso(this.ctx.now());
    await this.ctx.db
      .updateTable("bot_account_checks")
      .set({ state: "failed", error_message: message, completed_at: at, updated_at: at })
      .where("id", "=", checkId)
      .where("state", "=", from)
      .execute();
  }

  private checkMeetingUrl(platform: Platform, meetingUrl: string): void {
    const fail = (msg: string) =>
      new ValidationError([{ loc: ["body", "meetingUrl"], msg, type: "value_error" }]);
    const parsed = MeetingInfo.safeParse({ platform, meetingUrl });
    if (!parsed.success) throw fail(parsed.error.issues[0]?.message ?? "not a meeting URL");
    const url = new URL(meetingUrl);
    const hostname = url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
    const allowed = this.ctx.config.allowedMeetingHosts;
    if (isPlatformHost(platform, hostname)) return;
    if (allowed.includes(hostname) || allowed.includes(url.host.toLowerCase())) return;
    throw fail(`${url.host} is not a ${platform} meeting host`);
  }
}

export function accountCheckResultPath(checkId: number): string {
  return `/v1/bot-account-checks/${checkId}/result`;
}
