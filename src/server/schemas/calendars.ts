import { z } from "zod";
import { BotStatus, MeetingInfo } from "../../core/index.js";
import { CreateBotBody } from "./bots.js";
import { Timestamp } from "./common.js";

/**
 * Ours: calendar feeds (services/calendars.ts). A feed's address is a secret (it reads someone's
 * calendar): it is stored encrypted and answers show only its host.
 */

/** An iCalendar feed's address: http(s), or webcal(s) (read as https), as calendar programs export it. */
const FeedUrl = z
  .string()
  .max(2000)
  .refine((text) => /^(https?|webcals?):\/\/[^\s]+$/i.test(text) && URL.canParse(text), {
    message: "must be an http(s) or webcal URL",
  })
  .describe(
    "the feed's secret iCalendar address (https, or webcal as calendar programs export it); never shown again",
  );

export const AutoJoin = z
  .enum(["all", "none"])
  .describe("all: every event with a meeting link gets a scheduled bot; none: only those you add by hand");

/**
 * What the calendar's bots are created with: a bot's create options (POST /v1/bots) except the
 * ones the event gives (meetingInfo, meetingTitle, joinAt) and those that carry a secret or a file
 * (audioStream, output).
 */
export const BotDefaults = z.strictObject(
  CreateBotBody.pick({
    botDisplayName: true,
    callbackUrl: true,
    heartbeatInterval: true,
    automaticLeave: true,
    transcription: true,
    summary: true,
    login: true,
    liveTranscript: true,
    chat: true,
    retention: true,
  }).shape,
);
export type BotDefaults = z.infer<typeof BotDefaults>;

const Name = z.string().trim().min(1).max(200);

export const CreateCalendarBody = z.object({
  name: Name,
  url: FeedUrl,
  autoJoin: AutoJoin,
  botDefaults: BotDefaults.optional().describe(
    "options of the bots made for its events: POST /v1/bots's, less meetingInfo, meetingTitle, joinAt, audioStream and output",
  ),
});
export type CreateCalendarBody = z.infer<typeof CreateCalendarBody>;

/** PATCH: any of the create fields; absent ones stay. Unknown fields are a 422. */
export const UpdateCalendarBody = z.strictObject({
  name: Name.optional(),
  url: FeedUrl.optional(),
  autoJoin: AutoJoin.optional(),
  botDefaults: BotDefaults.nullable()
    .optional()
    .describe("replaced whole; null: none (bots get the defaults)"),
});
export type UpdateCalendarBody = z.infer<typeof UpdateCalendarBody>;

export const Calendar = z.object({
  id: z.number().int(),
  name: z.string(),
  urlHost: z.string().describe("the host of the feed's address: the address itself is never shown"),
  autoJoin: AutoJoin,
  botDefaults: BotDefaults.nullable(),
  lastSyncStatus: z
    .enum(["pending", "ok", "failed"])
    .describe(
      "pending: not synced yet; ok: the last sync read the feed; failed: it could not (lastSyncError)",
    ),
  lastSyncError: z.string().nullable(),
  lastSyncAt: Timestamp.nullable().describe("the last sync, either way"),
  lastSyncedAt: Timestamp.nullable().describe("the last sync that read the feed"),
  nextSyncAt: Timestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Calendar = z.infer<typeof Calendar>;

export const CalendarList = z.object({ calendars: z.array(Calendar) });
export type CalendarList = z.infer<typeof CalendarList>;

export const CalendarEvent = z.object({
  uid: z.string().describe("the event's iCalendar UID"),
  recurrenceId: Timestamp.nullable().describe(
    "a recurring event's instance: its original start (ISO 8601 UTC); null for an event that does not recur",
  ),
  title: z.string(),
  start: Timestamp,
  end: Timestamp,
  meetingInfo: MeetingInfo,
  botId: z.number().int().nullable().describe("its bot; null: none"),
  botStatus: BotStatus.nullable().describe("its bot's status; READY_TO_DEPLOY: scheduled"),
  bot: z
    .enum(["auto", "added", "removed"])
    .describe("auto: as the calendar's autoJoin says; added / removed: by hand, whatever autoJoin says"),
});
export type CalendarEvent = z.infer<typeof CalendarEvent>;

export const CalendarEventList = z.object({ events: z.array(CalendarEvent) });
export type CalendarEventList = z.infer<typeof CalendarEventList>;

export const SyncResult = z.object({
  calendar: Calendar,
  added: z.number().int().describe("events with a meeting link new in the feed"),
  changed: z.number().int().describe("events moved, renamed or given another link"),
  removed: z.number().int().describe("events gone from the feed, or cancelled"),
});
export type SyncResult = z.infer<typeof SyncResult>;

export const EventBotQuery = z.object({
  recurrenceId: Timestamp.optional().describe(
    "which instance of a recurring event: its recurrenceId as GET .../events shows it; required for one",
  ),
});
export type EventBotQuery = z.infer<typeof EventBotQuery>;
