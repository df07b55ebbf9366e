import { z } from "zod";
import { AGGREGATED_EVENT_TYPES, LogLevel, Platform } from "../../core/index.js";
import { IdParam, Pagination } from "../validation.js";
import { Timestamp } from "./common.js";

const EventData = z.record(z.string(), z.unknown());

export const BotEvent = z.object({
  id: z.number().int(),
  eventType: z.string(),
  eventTime: Timestamp,
  data: EventData.nullable(),
});
export type BotEvent = z.infer<typeof BotEvent>;
export const BotEventList = z.array(BotEvent);

export const BotLogEntry = z.object({
  id: z.number().int(),
  level: LogLevel,
  message: z.string(),
  createdAt: Timestamp,
});
export type BotLogEntry = z.infer<typeof BotLogEntry>;
export const BotLogList = z.array(BotLogEntry);

/** Largest `limit` of GET /v1/bots/{id}/logs (the spec leaves the maximum open). */
export const MAX_LOGS_LIMIT = 1000;

export const BotLogsQuery = z.object({
  level: LogLevel.optional().describe("minimum severity: info (everything), warn (warn and error), error"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LOGS_LIMIT)
    .default(100)
    .describe("the newest `limit` entries, returned oldest first"),
});
export type BotLogsQuery = z.infer<typeof BotLogsQuery>;

export const AggregatedEvent = z.object({
  id: z.number().int(),
  botId: z.number().int(),
  botName: z.string(),
  platform: Platform,
  eventType: z.string(),
  eventTime: Timestamp,
  data: EventData,
  createdAt: Timestamp,
});
export type AggregatedEvent = z.infer<typeof AggregatedEvent>;

/** `2030-01-02` (midnight UTC) or `2030-01-02T10:00:00` with an optional offset (none = UTC). */
const ISO_DATE_OR_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

const DateParam = z
  .string()
  .regex(ISO_DATE_OR_TIME, "must be an ISO 8601 date (YYYY-MM-DD) or date-time")
  .transform((s, ctx) => {
    const [, year, month, day, offset] = ISO_DATE_OR_TIME.exec(s) as RegExpExecArray;
    // JavaScript rolls 2030-02-30 over into March, and reads a date-time without an offset as
    // local time; the API means the calendar date as written, in UTC.
    const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
    const date = new Date(s.length > 10 && !offset ? `${s}Z` : s);
    if (
      calendar.getUTCMonth() !== Number(month) - 1 ||
      calendar.getUTCDate() !== Number(day) ||
      Number.isNaN(date.getTime())
    ) {
      ctx.addIssue({ code: "custom", message: "not a valid date" });
      return z.NEVER;
    }
    return date;
  });

export const EventListQuery = z
  .object({
    ...Pagination,
    bot_id: IdParam.optional().describe("one of the caller's bots; another user's bot lists nothing"),
    event_type: z.enum(AGGREGATED_EVENT_TYPES).optional(),
    platform: Platform.optional(),
    start_date: DateParam.optional().describe("events at or after this time (eventTime)"),
    end_date: DateParam.optional().describe("events before this time (eventTime)"),
  })
  .refine((q) => !q.start_date || !q.end_date || q.start_date < q.end_date, {
    path: ["end_date"],
    message: "end_date must be after start_date",
  });
export type EventListQuery = z.infer<typeof EventListQuery>;

export const EventList = z.object({
  events: z.array(AggregatedEvent),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type EventList = z.infer<typeof EventList>;

const StreamPosition = z.coerce.number().int().min(0);

export const EventStreamQuery = z.object({
  since: StreamPosition.optional().describe(
    "start after this event id (e.g. the newest id GET /v1/events listed); default: from now on. " +
      "A Last-Event-ID header takes precedence.",
  ),
});
export type EventStreamQuery = z.infer<typeof EventStreamQuery>;

/** Loose: the other headers (Authorization, ...) stay as they are. */
export const EventStreamHeaders = z.looseObject({
  "last-event-id": StreamPosition.optional().describe(
    "resume after this event id: the `id:` of the last event received (sent again by reconnecting clients)",
  ),
});
