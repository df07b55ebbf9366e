/**
 * The JSON answer of each /v1 operation, by method and documented path: the same zod schemas
 * the routes serialize with (test/integration/response-map.test.ts holds the two together).
 * Typed clients read answers through it (src/client/api-client.ts, the test harness), so a field
 * renamed in a schema breaks the compile of every reader of the old name. Operations that answer
 * with a file, a stream or no content are not listed.
 */
import type { z } from "zod";
import {
  Analytics,
  ApiKeyList,
  ApiKeyUsage,
  ApiLogList,
  ArtifactSaved,
  AuthResult,
  Bot,
  BotAccount,
  BotAccountCheckQueued,
  BotAccountCheckResult,
  BotAccountList,
  BotDetail,
  BotEventList,
  BotList,
  BotLogList,
  Calendar,
  CalendarEvent,
  CalendarEventList,
  CalendarList,
  CallbackResult,
  ChatMessageList,
  Command,
  CreatedApiKey,
  CreatedShare,
  DeployResult,
  DownloadLink,
  EventList,
  KillResult,
  LogoutResult,
  ProviderList,
  ProviderWebhookReceived,
  Recording,
  RecordingInfo,
  RecordingList,
  RefreshResult,
  RevokeSessionsResult,
  SegmentSaved,
  ShareInfo,
  SharedRecording,
  SigningSecret,
  Summary,
  SummaryJobStatus,
  SyncResult,
  Transcript,
  TranscriptJobStatus,
  UpdateProfileResult,
  Usage,
  UserProfile,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookDeliveryList,
  WebhookDetail,
  WebhookList,
  WebhookTestResult,
  WebhookWithSecret,
} from "./index.js";
import { CommandPoll, LoginSessionWriteBackResult } from "../../core/index.js";

export const BOT_API_RESPONSES = {
  "POST /v1/auth/register": AuthResult,
  "POST /v1/auth/login": AuthResult,
  "POST /v1/auth/refresh": RefreshResult,
  "POST /v1/auth/logout": LogoutResult,
  "POST /v1/auth/sessions/revoke": RevokeSessionsResult,
  "GET /v1/auth/oauth": ProviderList,
  "GET /v1/share/{token}": SharedRecording,
  "PUT /v1/bot-callbacks/{id}/artifacts/{name}": ArtifactSaved,
  "POST /v1/bot-callbacks/{id}/event": CallbackResult,
  "GET /v1/bot-callbacks/{id}/commands": CommandPoll,
  "PUT /v1/bot-callbacks/{id}/login-session": LoginSessionWriteBackResult,
  "PUT /v1/bot-callbacks/{id}/recording": Recording,
  "PUT /v1/bot-callbacks/{id}/recording/segments/{seq}": SegmentSaved,
  "POST /v1/bot-callbacks/{id}/recording/complete": Recording,
  "POST /v1/bot-account-checks/{id}/result": BotAccountCheckResult,
  "POST /v1/api-keys": CreatedApiKey,
  "GET /v1/api-keys": ApiKeyList,
  "GET /v1/api-keys/{id}/usage": ApiKeyUsage,
  "POST /v1/bots": Bot,
  "GET /v1/bots": BotList,
  "GET /v1/bots/{id}": BotDetail,
  "PATCH /v1/bots/{id}": BotDetail,
  "POST /v1/bots/{id}/delete-data": BotDetail,
  "POST /v1/bots/{id}/deploy": DeployResult,
  "POST /v1/bots/{id}/kill": KillResult,
  "POST /v1/bots/{id}/leave": Command,
  "POST /v1/bots/{id}/pause-recording": Command,
  "POST /v1/bots/{id}/resume-recording": Command,
  "GET /v1/bots/{id}/commands/{commandId}": Command,
  "GET /v1/bots/{id}/chat-messages": ChatMessageList,
  "POST /v1/bots/{id}/chat": Command,
  "POST /v1/bots/{id}/speak": Command,
  "POST /v1/bots/{id}/output-audio": Command,
  "DELETE /v1/bots/{id}/output-audio": Command,
  "POST /v1/bots/{id}/output-image": Command,
  "DELETE /v1/bots/{id}/output-image": Command,
  "GET /v1/bots/{id}/events": BotEventList,
  "GET /v1/bots/{id}/logs": BotLogList,
  "GET /v1/events": EventList,
  "POST /v1/bot-accounts": BotAccount,
  "GET /v1/bot-accounts": BotAccountList,
  "GET /v1/bot-accounts/{id}": BotAccount,
  "PATCH /v1/bot-accounts/{id}": BotAccount,
  "POST /v1/bot-accounts/{id}/check": BotAccountCheckQueued,
  "POST /v1/calendars": Calendar,
  "GET /v1/calendars": CalendarList,
  "GET /v1/calendars/{id}": Calendar,
  "PATCH /v1/calendars/{id}": Calendar,
  "POST /v1/calendars/{id}/sync": SyncResult,
  "GET /v1/calendars/{id}/events": CalendarEventList,
  "POST /v1/calendars/{id}/events/{uid}/bot": CalendarEvent,
  "DELETE /v1/calendars/{id}/events/{uid}/bot": CalendarEvent,
  "GET /v1/recordings": RecordingList,
  "GET /v1/recordings/{bot_id}": RecordingInfo,
  "GET /v1/recordings/{bot_id}/download": DownloadLink,
  "POST /v1/recordings/{bot_id}/share": CreatedShare,
  "GET /v1/recordings/{bot_id}/share": ShareInfo,
  "POST /v1/transcripts/{bot_id}/transcribe": TranscriptJobStatus,
  "GET /v1/transcripts/{bot_id}/status": TranscriptJobStatus,
  "GET /v1/transcripts/{bot_id}": Transcript,
  "GET /v1/recordings/{bot_id}/transcription": Transcript,
  "POST /v1/summaries/{bot_id}/summarize": SummaryJobStatus,
  "GET /v1/summaries/{bot_id}/status": SummaryJobStatus,
  "GET /v1/summaries/{bot_id}": Summary,
  "GET /v1/users/me": UserProfile,
  "PATCH /v1/users/me": UpdateProfileResult,
  "GET /v1/users/me/usage": Usage,
  "GET /v1/users/me/analytics": Analytics,
  "GET /v1/users/me/api-logs": ApiLogList,
  "POST /v1/webhook-receivers/assemblyai/{job_id}": ProviderWebhookReceived,
  "POST /v1/webhooks": WebhookWithSecret,
  "GET /v1/webhooks": WebhookList,
  "GET /v1/webhooks/signing-secret": SigningSecret,
  "POST /v1/webhooks/signing-secret/rotate": SigningSecret,
  "GET /v1/webhooks/callback-deliveries": WebhookDeliveryList,
  "GET /v1/webhooks/callback-deliveries/{deliveryId}": WebhookDeliveryDetail,
  "POST /v1/webhooks/callback-deliveries/{deliveryId}/redeliver": WebhookDelivery,
  "GET /v1/webhooks/{id}": WebhookDetail,
  "PATCH /v1/webhooks/{id}": Webhook,
  "POST /v1/webhooks/{id}/rotate-secret": WebhookWithSecret,
  "POST /v1/webhooks/{id}/test": WebhookTestResult,
  "GET /v1/webhooks/{id}/deliveries": WebhookDeliveryList,
  "GET /v1/webhooks/{id}/deliveries/{deliveryId}": WebhookDeliveryDetail,
  "POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver": WebhookDelivery,
} as const satisfies ResponseMap;

/** "METHOD /v1/path/{param}" → the zod schema of its JSON answer. */
export type ResponseMap = Record<string, z.ZodType>;

type Segments<S extends string> = S extends `${infer Head}/${infer Tail}` ? [Head, ...Segments<Tail>] : [S];
type WithoutQuery<P extends string> = P extends `${infer Path}?${string}` ? Path : P;
/** A documented segment `{name}` takes any one segment of a path; any other only itself. */
type SegmentMatches<Documented extends string, Actual extends string> = Documented extends `{${string}}`
  ? true
  : [Actual] extends [Documented]
    ? true
    : false;
type SegmentsMatch<Documented extends string[], Actual extends string[]> = Documented extends [
  infer D extends string,
  ...infer DocumentedRest extends string[],
]
  ? Actual extends [infer A extends string, ...infer ActualRest extends string[]]
    ? SegmentMatches<D, A> extends true
      ? SegmentsMatch<DocumentedRest, ActualRest>
      : false
    : false
  : Actual extends []
    ? true
    : false;

/** The key of `Map` that a request of `Method` to the concrete `Path` (ids filled in, maybe a query) is. */
export type OperationOf<Map extends ResponseMap, Method extends string, Path extends string> = {
  [Key in keyof Map & string]: Key extends `${Method} ${infer Documented}`
    ? SegmentsMatch<Segments<Documented>, Segments<WithoutQuery<Path>>> extends true
      ? Key
      : never
    : never;
}[keyof Map & string];

/** Of the operations a path matches, one with no `{param}` wins (as in the router: /webhooks/signing-secret is not /webhooks/{id}). */
type Preferred<Keys extends string> = [LiteralOnly<Keys>] extends [never] ? Keys : LiteralOnly<Keys>;
type LiteralOnly<Keys extends string> = Keys extends `${string}{${string}` ? never : Keys;

/**
 * The JSON answer of that request; `unknown` for a path the map does not list, and for a method or
 * path known only as some string (which could be any operation).
 */
export type AnswerOf<Map extends ResponseMap, Method extends string, Path extends string> = string extends
  Method | Path
  ? unknown
  : [OperationOf<Map, Method, Path>] extends [never]
    ? unknown
    : z.output<Map[Preferred<OperationOf<Map, Method, Path>>]>;

export type BotApiResponses = typeof BOT_API_RESPONSES;
