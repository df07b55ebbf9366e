import type { MeetingInfo } from "../../core/index.js";
import { parseJson, toIso } from "../db/database.js";
import type { CalendarEventRow, CalendarRow } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { type BotDefaults, CreateBotBody } from "../schemas/index.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";
import { MAX_JOIN_AHEAD_MS, MIN_JOIN_AHEAD_MS } from "./join-at.js";

/**
 * The bots of calendar events. A bot is an ordinary scheduled bot (joinAt = the event's start,
 * the event's title, the calendar's botDefaults); the event row holds its id. The rules:
 *
 * - An event wants a bot when added by hand, or when its calendar's autoJoin is "all" and it was
 *   not removed by hand.
 * - A bot only still waiting (READY_TO_DEPLOY) follows its event: moved, renamed, deleted when
 *   the event is cancelled or no longer wants one. A bot already deployed is the meeting's now and
 *   is left alone; an event moved after its bot was deployed gets a new bot for its new time.
 * - One meeting (the same link at the same start) in several of the user's feeds has one bot:
 *   the events share it, and it is deleted when the last of them lets go of it. An event that moves
 *   away from a shared bot takes (or makes) the bot of its new time instead. Two feeds synced at
 *   the same moment (two processes) may each make one; each later sync moves its events to the
 *   oldest, and the other goes.
 * - A bot is scheduled only at least 30 s ahead (join-at.ts): an event starting sooner gets none
 *   from a sync, but keeps the bot it has while nothing about it changes.
 */
export class CalendarBots {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
  ) {}

  /** Brings the event's bot in line with the event and its calendar. */
  async reconcile(calendar: CalendarRow, event: CalendarEventRow): Promise<void> {
    let bot = event.bot_id === null ? undefined : await this.botOf(event.bot_id);
    // A bot whose schedule its owner removed (PATCH joinAt null) is deployed by hand: theirs now.
    if (bot && bot.join_at === null) return;
    const wanted = event.bot_mode === "on" || (event.bot_mode === "auto" && calendar.auto_join === "all");
    const schedulable = canSchedule(event, this.ctx.now());
    if (bot && bot.status !== "READY_TO_DEPLOY") {
      // Deployed or ended, the bot is the meeting's now; an event moved since gets one for its new time.
      if (!wanted || bot.join_at === event.start_at || !schedulable) return;
      await this.letGo(event, bot.id);
      bot = undefined;
    }
    if (!wanted) {
      if (bot) await this.letGo(event, bot.id);
      return;
    }
    if (
      bot &&
      bot.join_at === event.start_at &&
      bot.meeting_title === event.title &&
      bot.meeting_info === event.meeting_info
    ) {
      // Two feeds synced at once may each have made a bot for their meeting: the oldest stays.
      const older = await this.sharedBot(event, bot.id);
      if (older !== undefined) {
        await this.letGo(event, bot.id);
        await this.link(event, older);
      }
      return;
    }
    if (bot) {
      if (schedulable && !(await this.sharedBeyond(event, bot.id))) {
        const moved = await this.move(event, bot.id);
        if (moved) return;
      }
      await this.letGo(event, bot.id);
    }
    if (schedulable) await this.attach(calendar, event);
  }

  /** The event no longer has its bot; the bot is deleted if no other event has it and it still waits. */
  async letGo(event: Pick<CalendarEventRow, "id" | "user_id">, botId: number): Promise<void> {
    await this.ctx.db
      .updateTable("calendar_events")
      .set({ bot_id: null, updated_at: toIso(this.ctx.now()) })
      .where("id", "=", event.id)
      .execute();
    if (await this.sharedBeyond(event, botId)) return;
    await this.bots.removeUndeployed(event.user_id, botId);
  }

  /** The meeting's bot from another feed, else a new one. */
  private async attach(calendar: CalendarRow, event: CalendarEventRow): Promise<void> {
    const botId = (await this.sharedBot(event)) ?? (await this.create(calendar, event));
    if (botId !== null) await this.link(event, botId);
  }

  /**
   * The oldest bot still waiting that another of the user's events has for the same meeting (link
   * and start); with `olderThan`, only one older than that bot.
   */
  private async sharedBot(event: CalendarEventRow, olderThan?: number): Promise<number | undefined> {
    const shared = await this.ctx.db
      .selectFrom("calendar_events as e")
      .innerJoin("bots as b", "b.id", "e.bot_id")
      .select("b.id")
      .where("e.user_id", "=", event.user_id)
      .where("e.meeting_key", "=", event.meeting_key)
      .where("e.start_at", "=", event.start_at)
      .where("e.id", "!=", event.id)
      .where("b.status", "=", "READY_TO_DEPLOY")
      .$if(olderThan !== undefined, (qb) => qb.where("b.id", "<", olderThan as number))
      .orderBy("b.id")
      .executeTakeFirst();
    return shared?.id;
  }

  private async link(event: CalendarEventRow, botId: number): Promise<void> {
    await this.ctx.db
      .updateTable("calendar_events")
      .set({ bot_id: botId, updated_at: toIso(this.ctx.now()) })
      .where("id", "=", event.id)
      .execute();
  }

  private async create(calendar: CalendarRow, event: CalendarEventRow): Promise<number | null> {
    try {
      const input = CreateBotBody.parse({
        ...parseJson<BotDefaults>(calendar.bot_defaults),
        meetingInfo: parseJson<MeetingInfo>(event.meeting_info),
        meetingTitle: event.title,
        joinAt: event.start_at,
      });
      return (await this.bots.create(calendar.user_id, input)).id;
    } catch (err) {
      // The calendar's botDefaults no longer fit (a login account deleted, ...): no bot, and why.
      if (!(err instanceof ApiError)) throw err;
      this.ctx.log.warn(
        { calendarId: calendar.id, eventId: event.id, reason: err.message },
        "a calendar event's bot could not be created",
      );
      return null;
    }
  }

  /** Moves a bot only this event has to the event's time and title; false when it was deployed meanwhile. */
  private async move(event: CalendarEventRow, botId: number): Promise<boolean> {
    try {
      await this.bots.update(event.user_id, botId, {
        joinAt: event.start_at,
        meetingTitle: event.title,
        meetingInfo: parseJson<MeetingInfo>(event.meeting_info),
      });
      return true;
    } catch (err) {
      if (err instanceof ApiError) return false;
      throw err;
    }
  }

  private async sharedBeyond(event: Pick<CalendarEventRow, "id">, botId: number): Promise<boolean> {
    const other = await this.ctx.db
      .selectFrom("calendar_events")
      .select("id")
      .where("bot_id", "=", botId)
      .where("id", "!=", event.id)
      .executeTakeFirst();
    return other !== undefined;
  }

  private botOf(botId: number) {
    return this.ctx.db
      .selectFrom("bots")
      .select(["id", "status", "join_at", "meeting_title", "meeting_info"])
      .where("id", "=", botId)
      .executeTakeFirst();
  }
}

/** Whether a bot can be scheduled for the event now: joinAt's limits (join-at.ts). */
export function canSchedule(event: Pick<CalendarEventRow, "start_at">, now: Date): boolean {
  const ahead = new Date(event.start_at).getTime() - now.getTime();
  return ahead >= MIN_JOIN_AHEAD_MS && ahead <= MAX_JOIN_AHEAD_MS;
}
