import { z } from "zod";
import {
  AGGREGATED_EVENT_TYPES,
  AutomaticLeave,
  BotConfig,
  BotStatus,
  LogLevel,
  MeetingInfo,
  Platform,
  SubCode,
} from "../core/index.js";
import { Pagination } from "./validation.js";

/**
 * The HTTP shapes of /v1, as zod: route files validate and serialize with them, services take and
 * return their inferred types, and @fastify/swagger can turn them into OpenAPI. Everything a bot
 * runner also needs (MeetingInfo, durations, statuses) comes from src/core.
 */

const Timestamp = z.iso.datetime().describe("ISO 8601, UTC");
const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

export const Detail = z.object({ detail: z.string() });

// ---- auth --------------------------------------------------------------------------------------

export const RegisterBody = z.object({
  email: z.email().max(320),
  password: z.string().min(8, "password must be at least 8 characters").max(256),
  name: z.string().trim().min(1).max(200),
});
export type RegisterBody = z.infer<typeof RegisterBody>;

export const LoginBody = z.object({
  email: z.string().max(320),
  password: z.string().max(256),
});
export type LoginBody = z.infer<typeof LoginBody>;

export const RefreshBody = z.object({ refresh_token: z.string().min(1) });

export const AuthResult = z.object({
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal("bearer"),
  /** "usr_<id>" from register, the integer from login (spec §2). */
  user_id: z.union([z.string(), z.number().int()]),
  email: z.string(),
  name: z.string(),
});
export type AuthResult = z.infer<typeof AuthResult>;

export const RefreshResult = z.object({ access_token: z.string(), token_type: z.literal("bearer") });
export type RefreshResult = z.infer<typeof RefreshResult>;

// ---- bots --------------------------------------------------------------------------------------

export const Recording = z.object({
  botId: z.number().int(),
  format: z.literal("mp4"),
  mimeType: z.literal("video/mp4"),
  sizeBytes: z.number().int().nonnegative(),
  durationSeconds: z.number().nonnegative(),
  createdAt: Timestamp,
});
export type Recording = z.infer<typeof Recording>;

/** GET /v1/recordings/{bot_id}: the recording, and who spoke when in it. */
export const RecordingInfo = Recording.extend({
  speakerTimeline: z.array(
    z.object({
      participantId: z.string(),
      name: z.string(),
      startMs: z.number().int().nonnegative(),
      endMs: z.number().int().nonnegative(),
    }),
  ),
});
export type RecordingInfo = z.infer<typeof RecordingInfo>;

export const DeploymentError = z.object({
  code: SubCode,
  message: z.string(),
  artifacts: z.array(z.string()).optional(),
});
export type DeploymentError = z.infer<typeof DeploymentError>;

export const Bot = z.object({
  id: z.number().int(),
  botDisplayName: z.string(),
  meetingTitle: z.string(),
  status: BotStatus,
  meetingInfo: MeetingInfo,
  createdAt: Timestamp,
  recording: Recording.nullable(),
});
export type Bot = z.infer<typeof Bot>;

export const BotDetail = Bot.extend({
  deploymentError: DeploymentError.nullable(),
  lastHeartbeat: Timestamp.nullable(),
});
export type BotDetail = z.infer<typeof BotDetail>;

/** Same rules and defaults as the runner's BotConfig; durations in milliseconds. */
export const CreateBotBody = z.object({
  meetingInfo: MeetingInfo,
  botDisplayName: BotConfig.shape.botDisplayName,
  meetingTitle: BotConfig.shape.meetingTitle,
  callbackUrl: HttpUrl.optional(),
  heartbeatInterval: BotConfig.shape.heartbeatInterval,
  automaticLeave: AutomaticLeave.prefault({}),
});
export type CreateBotBody = z.infer<typeof CreateBotBody>;

export const BotListQuery = z.object({ ...Pagination, status: BotStatus.optional() });
export type BotListQuery = z.infer<typeof BotListQuery>;

export const BotList = z.object({
  bots: z.array(Bot),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type BotList = z.infer<typeof BotList>;

export const DeployResult = z.object({
  message: z.string(),
  botId: z.number().int(),
  status: z.literal("DEPLOYING"),
});
export type DeployResult = z.infer<typeof DeployResult>;

// ---- events and logs ---------------------------------------------------------------------------

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

// ---- runner callbacks --------------------------------------------------------------------------

export const CallbackResult = z.object({
  applied: z.boolean(),
  duplicate: z.boolean().optional(),
  status: BotStatus,
});
export type CallbackResult = z.infer<typeof CallbackResult>;

// ---- recordings --------------------------------------------------------------------------------

export const DownloadLink = z.object({ url: z.url(), expiresAt: Timestamp });
export type DownloadLink = z.infer<typeof DownloadLink>;
