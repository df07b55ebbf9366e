import { LOG_LEVELS, type LogLevel, type Platform } from "../../core/index.js";
import { parseJson, toIso } from "../db/database.js";
import type {
  AggregatedEvent,
  BotEvent,
  BotLogEntry,
  BotLogsQuery,
  EventList,
  EventListQuery,
} from "../schemas/index.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";

type Data = Record<string, unknown>;

export class EventService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
  ) {}

  /** The bot's events, oldest first. */
  async listForBot(userId: number, botId: number): Promise<BotEvent[]> {
    await this.bots.requireOwned(userId, botId);
    const rows = await this.ctx.db
      .selectFrom("bot_events")
      .selectAll()
      .where("bot_id", "=", botId)
      .orderBy("id", "asc")
      .execute();
    return rows.map((r) => ({
      id: r.id,
      eventType: r.event_type,
      eventTime: r.event_time,
      data: parseJson<Data>(r.data),
    }));
  }

  /**
   * The newest `limit` log entries, oldest first. `level` is a minimum severity: info is
   * everything, warn is warn and error, error is error only.
   */
  async logsForBot(userId: number, botId: number, query: BotLogsQuery): Promise<BotLogEntry[]> {
    await this.bots.requireOwned(userId, botId);
    const rows = await this.ctx.db
      .selectFrom("bot_logs")
      .selectAll()
      .where("bot_id", "=", botId)
      .$if(query.level !== undefined, (qb) => qb.where("level", "in", atLeast(query.level as LogLevel)))
      .orderBy("id", "desc")
      .limit(query.limit)
      .execute();
    return rows.reverse().map((r) => ({
      id: r.id,
      level: r.level as LogLevel,
      message: r.message,
      createdAt: r.created_at,
    }));
  }

  /** Aggregated events of all the caller's bots, newest first. */
  async listAggregated(userId: number, query: EventListQuery): Promise<EventList> {
    const base = this.ctx.db
      .selectFrom("aggregated_events as e")
      .innerJoin("bots as b", "b.id", "e.bot_id")
      .where("b.user_id", "=", userId)
      .$if(query.bot_id !== undefined, (qb) => qb.where("e.bot_id", "=", query.bot_id as number))
      .$if(query.event_type !== undefined, (qb) => qb.where("e.event_type", "=", query.event_type as string))
      .$if(query.platform !== undefined, (qb) => qb.where("b.platform", "=", query.platform as Platform))
      .$if(query.start_date !== undefined, (qb) =>
        qb.where("e.event_time", ">=", toIso(query.start_date as Date)),
      )
      .$if(query.end_date !== undefined, (qb) =>
        qb.where("e.event_time", "<", toIso(query.end_date as Date)),
      );
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .select(AGGREGATED_COLUMNS)
      .orderBy("e.id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      events: rows.map(toAggregatedEvent),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  /** The caller's aggregated events with an id above `afterId`, oldest first: what a stream sends next. */
  async aggregatedAfter(userId: number, afterId: number, limit: number): Promise<AggregatedEvent[]> {
    const rows = await this.ctx.db
      .selectFrom("aggregated_events as e")
      .innerJoin("bots as b", "b.id", "e.bot_id")
      .where("b.user_id", "=", userId)
      .where("e.id", ">", afterId)
      .select(AGGREGATED_COLUMNS)
      .orderBy("e.id", "asc")
      .limit(limit)
      .execute();
    return rows.map(toAggregatedEvent);
  }

  /** The newest aggregated event id of anyone's bots (0 when there is none): "from now on". */
  async newestAggregatedId(): Promise<number> {
    const row = await this.ctx.db
      .selectFrom("aggregated_events")
      .select((eb) => eb.fn.max("id").as("newest"))
      .executeTakeFirst();
    return Number(row?.newest ?? 0);
  }
}

const AGGREGATED_COLUMNS = [
  "e.id",
  "e.bot_id",
  "e.event_type",
  "e.event_time",
  "e.data",
  "e.created_at",
  "b.bot_display_name",
  "b.platform",
] as const;

function toAggregatedEvent(r: {
  id: number;
  bot_id: number;
  event_type: string;
  event_time: string;
  data: string;
  created_at: string;
  bot_display_name: string;
  platform: string;
}): AggregatedEvent {
  return {
    id: r.id,
    botId: r.bot_id,
    botName: r.bot_display_name,
    platform: r.platform as Platform,
    eventType: r.event_type,
    eventTime: r.event_time,
    data: parseJson<Data>(r.data),
    createdAt: r.created_at,
  };
}

/** The levels as severe as `level` or more (LOG_LEVELS is ordered from least to most severe). */
function atLeast(level: LogLevel): LogLevel[] {
  return LOG_LEVELS.slice(LOG_LEVELS.indexOf(level));
}
