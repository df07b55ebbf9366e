import { z } from "zod";
import { Pagination } from "../validation.js";
import { Timestamp } from "./common.js";

/** What a bot's live stream carries: the runner's reports of what happens in the meeting. */
export const LIVE_EVENT_TYPES = [
  "status",
  "participant.joined",
  "participant.left",
  "speaker.started",
  "speaker.stopped",
  "transcript.partial",
  "transcript.final",
  "transcript.source",
  "chat.message",
  "output.started",
  "output.ended",
  "recording.paused",
  "recording.resumed",
] as const;

/** One event of GET /v1/bots/{id}/live (and its WebSocket): its `data` is the runner's report. */
export const LiveEvent = z.object({
  id: z.number().int().describe("Increasing per bot: resume after it with Last-Event-ID"),
  botId: z.number().int(),
  type: z.enum(LIVE_EVENT_TYPES),
  eventTime: Timestamp,
  data: z.record(z.string(), z.unknown()),
});
export type LiveEvent = z.infer<typeof LiveEvent>;

export const ChatMessageView = z.object({
  messageId: z.string(),
  sender: z.object({ participantId: z.string(), name: z.string() }).nullable(),
  text: z.string(),
  sentAt: Timestamp,
  fromBot: z.boolean(),
});
export type ChatMessageView = z.infer<typeof ChatMessageView>;

export const ChatMessageListQuery = z.object({ ...Pagination });
export const ChatMessageList = z.object({
  messages: z.array(ChatMessageView).describe("oldest first"),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type ChatMessageList = z.infer<typeof ChatMessageList>;

export const SendChatBody = z.strictObject({
  text: z.string().trim().min(1).describe("Meet takes at most 500 characters, Zoom and Teams 4096"),
});
