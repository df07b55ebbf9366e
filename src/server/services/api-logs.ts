import { type Insertable, sql } from "kysely";
import type { Credential } from "../auth/guard.js";
import { toIso } from "../db/database.js";
import type { ApiRequestLogsTable } from "../db/schema.js";
import { NotFoundError } from "../errors.js";
import type { ApiKeyUsage, ApiKeyUsageQuery, ApiLogList, ApiLogsQuery } from "../schemas/index.js";
import type { ServiceContext } from "./context.js";

/** One authenticated request, as the request-log hook reports it. */
export interface ApiRequest {
  userId: number;
  credential: Credential;
  method: string;
  path: string;
  route: string;
  statusCode: number;
  latencyMs: number;
}

/** How often buffered rows are written; also the longest a row waits in memory. */
const FLUSH_INTERVAL_MS = 500;
/** A buffer this full is written at once, without waiting for the timer. */
const FLUSH_ROWS = 1_000;
/** Rows per INSERT: well under both dialects' bound-parameter limits (10 columns a row). */
const INSERT_CHUNK = 500;
/** Rows older than this are deleted by the flusher. */
export const API_LOG_RETENTION_DAYS = 30;
const PRUNE_EVERY_MS = 3_600_000;
const DAY_MS = 86_400_000;

type Row = Insertable<ApiRequestLogsTable>;

/** The first 10 characters of an ISO timestamp: its UTC day. Same function on SQLite and PostgreSQL. */
export const utcDay = (column: string) => sql<string>`substr(${sql.ref(column)}, 1, 10)`;

/**
 * The API request log. Requests are buffered in memory and written in one transaction every
 * FLUSH_INTERVAL_MS (or FLUSH_ROWS rows), so that logging costs an authenticated request an array
 * push, not a database write; the same write moves api_keys.last_used_at. Readers flush first, so
 * a user always sees their own requests up to the one before.
 */
export class ApiLogService {
  private buffer: Row[] = [];
  /** The write in progress; flushes run one after another. */
  private writing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private lastPruneMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly ctx: ServiceContext) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Stops the timer and writes what is left (on app close, before the database closes). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  record(request: ApiRequest): void {
    const { credential } = request;
    this.buffer.push({
      user_id: request.userId,
      api_key_id: credential.kind === "api_key" ? credential.keyId : null,
      credential_kind: credential.kind,
      method: request.method,
      path: request.path.slice(0, 2_000),
      route: request.route.slice(0, 200),
      status_code: request.statusCode,
      latency_ms: Math.round(request.latencyMs * 100) / 100,
      // When the request arrived.
      created_at: toIso(new Date(this.ctx.now().getTime() - request.latencyMs)),
    });
    if (this.buffer.length >= FLUSH_ROWS) void this.flush();
  }

  /** Resolves once every request recorded before the call is stored (or reported as lost). */
  flush(): Promise<void> {
    const pruneDue = this.ctx.now().getTime() - this.lastPruneMs >= PRUNE_EVERY_MS;
    if (this.buffer.length === 0 && !pruneDue) return this.writing;
    const rows = this.buffer;
    this.buffer = [];
    this.writing = this.writing.then(() => this.write(rows));
    return this.writing;
  }

  /** Never rejects: a lost batch of log rows is logged, it must not fail a request or close(). */
  private async write(rows: Row[]): Promise<void> {
    if (rows.length > 0) {
      try {
        await this.ctx.db.transaction().execute(async (trx) => {
          for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
            await trx
              .insertInto("api_request_logs")
              .values(rows.slice(i, i + INSERT_CHUNK))
              .execute();
          }
          for (const [keyId, at] of lastUseByKey(rows)) {
            await trx
              .updateTable("api_keys")
              .set({ last_used_at: at })
              .where("id", "=", keyId)
              .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", at)]))
              .execute();
          }
        });
      } catch (err) {
        this.ctx.log.error({ err, rows: rows.length }, "API request log: a batch could not be stored");
      }
    }
    await this.pruneIfDue();
  }

  private async pruneIfDue(): Promise<void> {
    const now = this.ctx.now().getTime();
    if (now - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = now;
    try {
      await this.ctx.db
        .deleteFrom("api_request_logs")
        .where("created_at", "<", toIso(new Date(now - API_LOG_RETENTION_DAYS * DAY_MS)))
        .execute();
    } catch (err) {
      this.ctx.log.error({ err }, "API request log: pruning failed");
    }
  }

  /** The user's own requests, newest first. */
  async list(userId: number, query: ApiLogsQuery): Promise<ApiLogList> {
    await this.flush();
    const base = this.ctx.db.selectFrom("api_request_logs as l").where("l.user_id", "=", userId);
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .leftJoin("api_keys as k", "k.id", "l.api_key_id")
      .select([
        "l.id",
        "l.created_at",
        "l.method",
        "l.path",
        "l.route",
        "l.status_code",
        "l.latency_ms",
        "l.credential_kind",
        "l.api_key_id",
        "k.key_preview",
      ])
      .orderBy("l.id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      logs: rows.map((r) => ({
        id: r.id,
        createdAt: r.created_at,
        method: r.method,
        path: r.path,
        route: r.route,
        statusCode: r.status_code,
        latencyMs: Number(r.latency_ms),
        credential:
          r.credential_kind === "api_key"
            ? { kind: "api_key" as const, apiKeyId: r.api_key_id, keyPreview: r.key_preview }
            : { kind: "access_token" as const },
      })),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  /** Requests made with one of the user's keys over the last `days` UTC days (today included). */
  async keyUsage(userId: number, keyId: number, query: ApiKeyUsageQuery): Promise<ApiKeyUsage> {
    const key = await this.ctx.db
      .selectFrom("api_keys")
      .select(["id", "last_used_at"])
      .where("id", "=", keyId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!key) throw new NotFoundError("API key not found");
    await this.flush();
    // last_used_at as of this flush (the key row above was read before it).
    const { last_used_at: lastUsedAt } = await this.ctx.db
      .selectFrom("api_keys")
      .select("last_used_at")
      .where("id", "=", keyId)
      .executeTakeFirstOrThrow();

    const days = utcDays(this.ctx.now(), query.days);
    const since = `${days[0]}T00:00:00.000Z`;
    const inWindow = this.ctx.db
      .selectFrom("api_request_logs")
      .where("api_key_id", "=", keyId)
      .where("created_at", ">=", since);
    const perDay = await inWindow
      .select((eb) => [utcDay("created_at").as("day"), eb.fn.countAll().as("requests")])
      .groupBy(utcDay("created_at"))
      .execute();
    const perEndpoint = await inWindow
      .select((eb) => [
        "method",
        "route",
        eb.fn.countAll().as("requests"),
        eb.fn.max("created_at").as("last_used_at"),
      ])
      .groupBy(["method", "route"])
      .execute();

    const byDay = new Map(perDay.map((r) => [r.day, Number(r.requests)]));
    return {
      apiKeyId: key.id,
      lastUsedAt,
      start: days[0] as string,
      end: days[days.length - 1] as string,
      totalRequests: perEndpoint.reduce((sum, r) => sum + Number(r.requests), 0),
      days: days.map((date) => ({ date, requests: byDay.get(date) ?? 0 })),
      endpoints: perEndpoint
        .map((r) => ({
          method: r.method,
          route: r.route,
          requests: Number(r.requests),
          lastUsedAt: r.last_used_at,
        }))
        .sort((a, b) => b.requests - a.requests || a.route.localeCompare(b.route)),
    };
  }

  /** How many requests the user made in [start, end). */
  async countForUser(userId: number, start: string, end: string): Promise<number> {
    await this.flush();
    const { n } = await this.ctx.db
      .selectFrom("api_request_logs")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("user_id", "=", userId)
      .where("created_at", ">=", start)
      .where("created_at", "<", end)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  /** The user's requests per UTC day in [start, end). */
  async perDayForUser(userId: number, start: string, end: string): Promise<Map<string, number>> {
    await this.flush();
    const rows = await this.ctx.db
      .selectFrom("api_request_logs")
      .where("user_id", "=", userId)
      .where("created_at", ">=", start)
      .where("created_at", "<", end)
      .select((eb) => [utcDay("created_at").as("day"), eb.fn.countAll().as("n")])
      .groupBy(utcDay("created_at"))
      .execute();
    return new Map(rows.map((r) => [r.day, Number(r.n)]));
  }
}

/** The latest request time per API key in a batch. */
function lastUseByKey(rows: Row[]): Map<number, string> {
  const last = new Map<number, string>();
  for (const row of rows) {
    if (row.api_key_id == null) continue;
    const seen = last.get(row.api_key_id);
    if (seen === undefined || row.created_at > seen) last.set(row.api_key_id, row.created_at);
  }
  return last;
}

/** The last `count` UTC days up to and including `now`'s, as YYYY-MM-DD, oldest first. */
export function utcDays(now: Date, count: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: count }, (_, i) =>
    new Date(today - (count - 1 - i) * DAY_MS).toISOString().slice(0, 10),
  );
}
