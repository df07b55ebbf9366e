import type { MeetingInfo, BotStatus } from "../../core/index.js";
import type { SecretBox } from "../auth/secret-box.js";
import { parseJson, toIso } from "../db/database.js";
import type { CalendarEventRow, CalendarRow } from "../db/schema.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type {
  BotDefaults,
  Calendar,
  CalendarEvent,
  CalendarEventList,
  CalendarList,
  CreateCalendarBody,
  EventBotQuery,
  SyncResult,
  UpdateCalendarBody,
} from "../schemas/index.js";
import type { WakeSignal } from "../wake-signal.js";
import { checkTargetUrl } from "../webhooks/outbound.js";
import { type CalendarBots, canSchedule } from "./calendar-bots.js";
import {
  CALENDAR_SYNC_LEASE_MS,
  type CalendarSync,
  claimDueSyncs,
  feedUrlAdditionalData,
  fetchableUrl,
} from "./calendar-sync.js";
import type { ServiceContext } from "./context.js";

/**
 * Calendar feeds (/v1/calendars): a user's iCalendar feeds, their events with a meeting link and
 * those events' bots. The feed address is sealed with MEETBOT_SECRET_KEY (like bot-account
 * sessions and audio-stream tokens) and never shown, logged or sent: answers show its host.
 * Deleting a calendar deletes its bots that are still only scheduled (unless another feed's event
 * has the same bot); deployed and ended bots stay, as bots do.
 */
export class CalendarService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly box: SecretBox,
    private readonly calendarBots: CalendarBots,
    private readonly syncs: CalendarSync,
    /** Wakes this process's sync worker: a new or changed calendar is due at once. */
    private readonly wake: WakeSignal,
  ) {}

  async create(userId: number, input: CreateCalendarBody): Promise<Calendar> {
    const host = this.checkUrl(input.url);
    const now = toIso(this.ctx.now());
    const row = await this.ctx.db
      .insertInto("calendars")
      .values({
        user_id: userId,
        name: input.name,
        url_sealed: JSON.stringify(this.box.seal(input.url, feedUrlAdditionalData(userId))),
        url_host: host,
        auto_join: input.autoJoin,
        bot_defaults: input.botDefaults ? JSON.stringify(input.botDefaults) : null,
        last_sync_at: null,
        last_sync_error: null,
        last_synced_at: null,
        // Synced at once, by whichever process's worker claims it first.
        next_sync_at: now,
        sync_claim_token: null,
        sync_lease_until: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    this.wake.notify();
    return toCalendar(row);
  }

  async list(userId: number): Promise<CalendarList> {
    const rows = await this.ctx.db
      .selectFrom("calendars")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("id")
      .execute();
    return { calendars: rows.map(toCalendar) };
  }

  async get(userId: number, calendarId: number): Promise<Calendar> {
    return toCalendar(await this.requireOwned(userId, calendarId));
  }

  /** Changes what it names; the calendar is synced again at once (its bots follow a new autoJoin). */
  async update(userId: number, calendarId: number, input: UpdateCalendarBody): Promise<Calendar> {
    await this.requireOwned(userId, calendarId);
    const host = input.url === undefined ? undefined : this.checkUrl(input.url);
    const now = toIso(this.ctx.now());
    const row = await this.ctx.db
      .updateTable("calendars")
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.url !== undefined && host !== undefined
          ? {
              url_sealed: JSON.stringify(this.box.seal(input.url, feedUrlAdditionalData(userId))),
              url_host: host,
            }
          : {}),
        ...(input.autoJoin !== undefined ? { auto_join: input.autoJoin } : {}),
        ...(input.botDefaults !== undefined
          ? { bot_defaults: input.botDefaults ? JSON.stringify(input.botDefaults) : null }
          : {}),
        next_sync_at: now,
        updated_at: now,
      })
      .where("id", "=", calendarId)
      .returningAll()
      .executeTakeFirstOrThrow();
    this.wake.notify();
    return toCalendar(row);
  }

  /** Deletes the calendar and its events; their bots that are only scheduled go with them. */
  async remove(userId: number, calendarId: number): Promise<void> {
    await this.requireOwned(userId, calendarId);
    const withBots = await this.ctx.db
      .selectFrom("calendar_events")
      .select(["id", "user_id", "bot_id"])
      .where("calendar_id", "=", calendarId)
      .where("bot_id", "is not", null)
      .execute();
    for (const event of withBots) await this.calendarBots.letGo(event, event.bot_id as number);
    await this.ctx.db.deleteFrom("calendars").where("id", "=", calendarId).execute();
  }

  /** Syncs now, in this request: 409 while another sync of it runs. */
  async syncNow(userId: number, calendarId: number): Promise<SyncResult> {
    await this.requireOwned(userId, calendarId);
    const [claimed] = await claimDueSyncs(this.ctx.db, this.ctx.dialect, {
      now: this.ctx.now(),
      limit: 1,
      leaseMs: CALENDAR_SYNC_LEASE_MS,
      calendarId,
    });
    if (!claimed) throw new ConflictError("The calendar is being synced: try again shortly");
    const outcome = await this.syncs.sync(claimed);
    const calendar = await this.get(userId, calendarId);
    const counts = outcome && outcome.error === null ? outcome : { added: 0, changed: 0, removed: 0 };
    return { calendar, added: counts.added, changed: counts.changed, removed: counts.removed };
  }

  /** The calendar's events with a meeting link that have not ended, soonest first. */
  async events(userId: number, calendarId: number): Promise<CalendarEventList> {
    await this.requireOwned(userId, calendarId);
    const rows = await this.eventsWithBots()
      .where("e.calendar_id", "=", calendarId)
      .where("e.end_at", ">", toIso(this.ctx.now()))
      .orderBy("e.start_at")
      .orderBy("e.id")
      .execute();
    return { events: rows.map(toEvent) };
  }

  /**
   * A bot for one event by hand ("on"), whatever autoJoin says, or none ("off"; its bot is deleted
   * if it is still only scheduled); kept through later syncs. 409 when the event starts in less
   * than 30 s (join-at.ts) or its bot cannot be made; when the bot to take away has been deployed.
   */
  async chooseBot(
    userId: number,
    calendarId: number,
    ref: { uid: string; query: EventBotQuery },
    mode: "on" | "off",
  ): Promise<CalendarEvent> {
    const calendar = await this.requireOwned(userId, calendarId);
    const event = await this.requireEvent(calendarId, ref.uid, ref.query);
    if (mode === "on" && event.bot_id === null && !canSchedule(event, this.ctx.now()))
      throw new ConflictError(
        "The event starts in less than 30 s: create a bot with POST /v1/bots and deploy it",
      );
    await this.ctx.db
      .updateTable("calendar_events")
      .set({ bot_mode: mode, updated_at: toIso(this.ctx.now()) })
      .where("id", "=", event.id)
      .execute();
    await this.calendarBots.reconcile(calendar, { ...event, bot_mode: mode });
    const after = await this.eventAnswer(event.id);
    if (mode === "on" && after.botId === null)
      throw new ConflictError("The event's bot could not be created (the server log says why)");
    if (mode === "off" && after.botId !== null)
      throw new ConflictError(
        `The event's bot ${after.botId} has been deployed (status ${after.botStatus}): POST /v1/bots/${after.botId}/kill stops it`,
      );
    return after;
  }

  private async eventAnswer(eventId: number): Promise<CalendarEvent> {
    return toEvent(await this.eventsWithBots().where("e.id", "=", eventId).executeTakeFirstOrThrow());
  }

  /** Events as answers show them: with their bot's status. */
  private eventsWithBots() {
    return this.ctx.db
      .selectFrom("calendar_events as e")
      .leftJoin("bots as b", "b.id", "e.bot_id")
      .selectAll("e")
      .select("b.status as bot_status");
  }

  /** One instance: a recurring event's needs its recurrenceId (422 without), 404 when there is none. */
  private async requireEvent(
    calendarId: number,
    uid: string,
    query: EventBotQuery,
  ): Promise<CalendarEventRow> {
    const rows = await this.ctx.db
      .selectFrom("calendar_events")
      .selectAll()
      .where("calendar_id", "=", calendarId)
      .where("uid", "=", uid)
      .execute();
    if (rows.length === 0) throw new NotFoundError("Event not found");
    const recurring = rows.some((row) => row.recurrence_id !== "");
    if (recurring && query.recurrenceId === undefined)
      throw new ValidationError([
        {
          loc: ["query", "recurrenceId"],
          msg: "the event recurs: name the instance by its recurrenceId",
          type: "missing",
        },
      ]);
    const wanted = query.recurrenceId === undefined ? "" : toIso(new Date(query.recurrenceId));
    const row = rows.find((r) => r.recurrence_id === wanted);
    if (!row) throw new NotFoundError("Event not found");
    return row;
  }

  private async requireOwned(userId: number, calendarId: number): Promise<CalendarRow> {
    const row = await this.ctx.db
      .selectFrom("calendars")
      .selectAll()
      .where("id", "=", calendarId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!row) throw new NotFoundError("Calendar not found");
    return row;
  }

  /** The webhooks' address rule (a 422 now, rather than failed syncs), and a key to seal it with; its host. */
  private checkUrl(url: string): string {
    const problem = checkTargetUrl(fetchableUrl(url), this.ctx.config.outbound);
    if (problem) throw new ValidationError([{ loc: ["body", "url"], msg: problem, type: "value_error" }]);
    if (!this.box.configured)
      throw new ValidationError([
        {
          loc: ["body", "url"],
          msg: "a feed's address is stored encrypted, and the operator has not set MEETBOT_SECRET_KEY",
          type: "value_error",
        },
      ]);
    return new URL(fetchableUrl(url)).host;
  }
}

function toCalendar(row: CalendarRow): Calendar {
  return {
    id: row.id,
    name: row.name,
    urlHost: row.url_host,
    autoJoin: row.auto_join,
    botDefaults: parseJson<BotDefaults>(row.bot_defaults),
    lastSyncStatus: row.last_sync_at === null ? "pending" : row.last_sync_error === null ? "ok" : "failed",
    lastSyncError: row.last_sync_error,
    lastSyncAt: row.last_sync_at,
    lastSyncedAt: row.last_synced_at,
    nextSyncAt: row.next_sync_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const MODES = { auto: "auto", on: "added", off: "removed" } as const;

function toEvent(row: CalendarEventRow & { bot_status: string | null }): CalendarEvent {
  return {
    uid: row.uid,
    recurrenceId: row.recurrence_id === "" ? null : row.recurrence_id,
    title: row.title,
    start: row.start_at,
    end: row.end_at,
    meetingInfo: parseJson<MeetingInfo>(row.meeting_info),
    botId: row.bot_id,
    botStatus: row.bot_id === null ? null : (row.bot_status as BotStatus | null),
    bot: MODES[row.bot_mode],
  };
}
