import { z } from "zod";
import { AGGREGATED_EVENT_TYPES, LogLevel, Platform } from "../../core/index.js";
import { Pagination } from "../validation.js";
import { Timestamp } from "./common.js";

const EventData = z.record(z.string(), z.unknown());

export const BotEvent = z.object({
  id: z.number().int(),
  eventType: z.string(),
  eventTime: Timestamp,
  data: EventData.nullable(),
});
export type BotEvent = z.infer<typeof BotEvent>;

export const BotLogEntry = z.object({
  id: z.number().int(),
  level: LogLevel,
  message: z.string(),
  createdAt: Timestamp,
});
export type BotLogEntry = z.infer<typeof BotLogEntry>;

export const BotLogsQuery = z.object({
  level: LogLevel.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
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

const DateParam = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), "must be an ISO 8601 date or date-time")
  .transform((s) => new Date(s));

export const EventListQuery = z.object({
  ...Pagination,
  bot_id: z.coerce.number().int().positive().optional(),
  event_type: z.enum(AGGREGATED_EVENT_TYPES).optional(),
  platform: Platform.optional(),
  start_date: DateParam.optional().describe("events at or after this time"),
  end_date: DateParam.optional().describe("events before this time"),
});
export type EventListQuery = z.infer<typeof EventListQuery>;

export const EventList = z.object({
  events: z.array(AggregatedEvent),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type EventList = z.infer<typeof EventList>;
