import { BOT_STATUSES, type BotStatus } from "../../core/index.js";
import { hashPassword, isPasswordHash, verifyPassword } from "../auth/passwords.js";
import { parseJson, toIso } from "../db/database.js";
import { ForbiddenError, UnauthorizedError } from "../errors.js";
import {
  type Analytics,
  type AnalyticsQuery,
  daysBetween,
  type UpdateProfileBody,
  type UpdateProfileResult,
  type Usage,
  type UsageQuery,
  type UserProfile,
} from "../schemas/index.js";
import { type ApiLogService, utcDay, utcDays } from "./api-logs.js";
import type { ServiceContext } from "./context.js";
import type { UserService } from "./users.js";

const DEFAULT_ANALYTICS_DAYS = 30;
const MINUTE_MS = 60_000;

/** Minutes with two decimals: enough for a 1-second recording to show. */
const minutes = (ms: number) => Math.round((ms / MINUTE_MS) * 100) / 100;

/** The users group: the caller's profile, usage in a calendar month and per-day analytics. */
export class ProfileService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly apiLogs: ApiLogService,
    private readonly users: UserService,
  ) {}

  async get(userId: number): Promise<UserProfile> {
    const user = await this.ctx.db
      .selectFrom("users")
      .select(["id", "email", "name", "created_at", "password_hash"])
      .where("id", "=", userId)
      .executeTakeFirst();
    // The guard found this user a moment ago; gone since means the credential is no good.
    if (!user) throw new UnauthorizedError("Could not validate credentials");
    const identities = await this.ctx.db
      .selectFrom("user_identities")
      .select("provider")
      .distinct()
      .where("user_id", "=", userId)
      .orderBy("provider")
      .execute();
    return {
      id: user.id,
      email: user.email,
      name: user.name,
      createdAt: user.created_at,
      hasPassword: isPasswordHash(user.password_hash),
      oauthProviders: identities.map((i) => i.provider),
    };
  }

  /**
   * Name changes freely. A new password needs the current one (a stolen access token alone must
   * not be enough to take the account over); an OAuth-only account has none, so it cannot set one.
   * A password change ends every session (each access and refresh token issued before, the
   * caller's too) and answers a new sign-in's tokens with the profile.
   */
  async update(userId: number, body: UpdateProfileBody): Promise<UpdateProfileResult> {
    const changes: { name?: string; password_hash?: string } = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.password !== undefined) {
      const { password_hash: current } = await this.ctx.db
        .selectFrom("users")
        .select("password_hash")
        .where("id", "=", userId)
        .executeTakeFirstOrThrow();
      if (!isPasswordHash(current))
        throw new ForbiddenError("This account signs in through OAuth and has no password to change");
      if (!(await verifyPassword(current, body.currentPassword ?? "")))
        throw new ForbiddenError("Current password is incorrect");
      changes.password_hash = await hashPassword(body.password);
    }
    if (Object.keys(changes).length === 0) return this.get(userId);
    const generation = await this.ctx.db.transaction().execute(async (trx) => {
      await trx.updateTable("users").set(changes).where("id", "=", userId).execute();
      return changes.password_hash === undefined ? null : this.users.revokeSessions(userId, trx);
    });
    const profile = await this.get(userId);
    if (generation === null) return profile;
    return { ...profile, ...(await this.users.issueTokens(userId, generation)), token_type: "bearer" };
  }

  /** A UTC calendar month: bots created in it (and their status now), recordings, API requests. */
  async usage(userId: number, query: UsageQuery): Promise<Usage> {
    const now = this.ctx.now();
    const [year, month] = query.period
      ? query.period.split("-").map(Number)
      : [now.getUTCFullYear(), now.getUTCMonth() + 1];
    const start = toIso(new Date(Date.UTC(year as number, (month as number) - 1, 1)));
    const end = toIso(new Date(Date.UTC(year as number, month as number, 1)));

    const { db } = this.ctx;
    const statuses = await db
      .selectFrom("bots")
      .select((eb) => ["status", eb.fn.countAll().as("n")])
      .where("user_id", "=", userId)
      .where("created_at", ">=", start)
      .where("created_at", "<", end)
      .groupBy("status")
      .execute();
    const byStatus = Object.fromEntries(BOT_STATUSES.map((s) => [s, 0])) as Record<BotStatus, number>;
    for (const row of statuses) byStatus[row.status as BotStatus] = Number(row.n);

    const recorded = await db
      .selectFrom("recordings as r")
      .innerJoin("bots as b", "b.id", "r.bot_id")
      .select((eb) => [eb.fn.countAll().as("count"), eb.fn.sum<number>("r.duration_ms").as("ms")])
      .where("b.user_id", "=", userId)
      .where("r.created_at", ">=", start)
      .where("r.created_at", "<", end)
      .executeTakeFirstOrThrow();

    return {
      period: { name: start.slice(0, 7), start, end },
      bots: { created: statuses.reduce((sum, r) => sum + Number(r.n), 0), byStatus },
      recordings: { count: Number(recorded.count), recordedMinutes: minutes(Number(recorded.ms ?? 0)) },
      apiRequests: await this.apiLogs.countForUser(userId, start, end),
    };
  }

  /** Per UTC day: bots created, minutes recorded, failures by subCode, API requests. */
  async analytics(userId: number, query: AnalyticsQuery): Promise<Analytics> {
    const today = toIso(this.ctx.now()).slice(0, 10);
    const last = query.end ?? today;
    const count = query.start ? daysBetween(query.start, last) + 1 : (query.days ?? DEFAULT_ANALYTICS_DAYS);
    const dates = utcDays(new Date(`${last}T00:00:00.000Z`), count);
    const start = `${dates[0]}T00:00:00.000Z`;
    const end = toIso(new Date(Date.parse(`${last}T00:00:00.000Z`) + 86_400_000));

    const { db } = this.ctx;
    const bots = await db
      .selectFrom("bots")
      .select((eb) => [utcDay("created_at").as("day"), eb.fn.countAll().as("n")])
      .where("user_id", "=", userId)
      .where("created_at", ">=", start)
      .where("created_at", "<", end)
      .groupBy(utcDay("created_at"))
      .execute();
    const recorded = await db
      .selectFrom("recordings as r")
      .innerJoin("bots as b", "b.id", "r.bot_id")
      .select((eb) => [utcDay("r.created_at").as("day"), eb.fn.sum<number>("r.duration_ms").as("ms")])
      .where("b.user_id", "=", userId)
      .where("r.created_at", ">=", start)
      .where("r.created_at", "<", end)
      .groupBy(utcDay("r.created_at"))
      .execute();
    // A bot fails once: its FATAL aggregated event says when, and with which subCode.
    const failures = await db
      .selectFrom("aggregated_events as e")
      .innerJoin("bots as b", "b.id", "e.bot_id")
      .select(["e.event_time", "e.data"])
      .where("b.user_id", "=", userId)
      .where("e.event_type", "=", "FATAL")
      .where("e.event_time", ">=", start)
      .where("e.event_time", "<", end)
      .execute();
    const requests = await this.apiLogs.perDayForUser(userId, start, end);

    const botsByDay = new Map(bots.map((r) => [r.day, Number(r.n)]));
    const msByDay = new Map(recorded.map((r) => [r.day, Number(r.ms ?? 0)]));
    const failuresByDay = new Map<string, Record<string, number>>();
    for (const row of failures) {
      const day = row.event_time.slice(0, 10);
      const subCode = String(parseJson<{ subCode?: unknown }>(row.data).subCode ?? "INTERNAL_ERROR");
      const counts = failuresByDay.get(day) ?? {};
      counts[subCode] = (counts[subCode] ?? 0) + 1;
      failuresByDay.set(day, counts);
    }

    const days = dates.map((date) => ({
      date,
      botsCreated: botsByDay.get(date) ?? 0,
      recordedMinutes: minutes(msByDay.get(date) ?? 0),
      failures: failuresByDay.get(date) ?? {},
      apiRequests: requests.get(date) ?? 0,
    }));
    const totalFailures: Record<string, number> = {};
    for (const day of days) {
      for (const [code, n] of Object.entries(day.failures))
        totalFailures[code] = (totalFailures[code] ?? 0) + n;
    }
    return {
      start: dates[0] as string,
      end: last,
      days,
      totals: {
        botsCreated: days.reduce((sum, d) => sum + d.botsCreated, 0),
        recordedMinutes: minutes([...msByDay.values()].reduce((sum, ms) => sum + ms, 0)),
        failures: totalFailures,
        apiRequests: days.reduce((sum, d) => sum + d.apiRequests, 0),
      },
    };
  }
}
