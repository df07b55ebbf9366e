import { z } from "zod";
import {
  AutomaticLeave,
  BotConfig,
  BotStatus,
  ChatOptions,
  OutputOptions,
  AudioStreamOptions,
  RecordingOptions,
  LiveTranscriptOptions,
  LoginMode,
  MeetingInfo,
  SubCode,
} from "../../core/index.js";
import { MAX_INTEGER_COLUMN } from "../db/database.js";
import { SummaryOptions, TranscriptionOptions } from "../jobs/content-options.js";
import { Pagination } from "../validation.js";
import { AccountGroup, DEFAULT_ACCOUNT_GROUP } from "./bot-accounts.js";
import { Timestamp, HttpUrl, RecordingFormat, RecordingMimeType } from "./common.js";
import { JobState } from "./content-jobs.js";
import { OutputOptionsBody } from "./picture.js";

/** The bot option `recording` (ours): `video: false` makes an audio-only bot. */
export const BotRecordingOption = z.strictObject({
  video: RecordingOptions.shape.video.describe(
    "false: an audio-only bot: no screen capture or video encoding, the browser renders as little as it can, and the recording is AAC sound alone (format m4a)",
  ),
});
export type BotRecordingOption = z.infer<typeof BotRecordingOption>;

export const Recording = z.object({
  botId: z.number().int(),
  format: RecordingFormat,
  mimeType: RecordingMimeType,
  sizeBytes: z.number().int().nonnegative(),
  durationSeconds: z.number().nonnegative(),
  createdAt: Timestamp,
});
export type Recording = z.infer<typeof Recording>;

/** GET /v1/recordings/{bot_id}: the recording, who spoke when in it, where its content stands. */
export const RecordingInfo = Recording.extend({
  transcriptStatus: JobState.nullable().describe("the transcript job's state; null: none was requested"),
  summaryStatus: JobState.nullable().describe("the summary job's state; null: none was requested"),
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

/**
 * Ours: the bot signs in with one of the user's bot accounts of its platform (GET
 * /v1/bot-accounts): `accountId`, or else the least recently used free account of `group`
 * (default "default"), held for it from deploy until it ends.
 */
export const BotLoginOption = z
  .object({
    mode: LoginMode.describe(
      "always: sign in before joining; only_if_required: join as a guest, sign in if the meeting asks",
    ),
    accountId: z.number().int().min(1).max(MAX_INTEGER_COLUMN).optional().describe("this account"),
    group: AccountGroup.optional(),
  })
  .refine((login) => login.accountId === undefined || login.group === undefined, {
    message: "give accountId or group, not both",
    path: ["group"],
  });
export type BotLoginOption = z.infer<typeof BotLoginOption>;

/** A bot's login as its answers show it: never a session. */
export const BotLogin = z.object({
  mode: LoginMode,
  accountId: z.number().int().nullable().describe("the account asked for; null: any of `group`"),
  group: z.string().nullable().describe("the group asked for; null when an accountId was"),
  assignedAccountId: z
    .number()
    .int()
    .nullable()
    .describe("the account the bot was given at deploy; null before (or when the account was deleted)"),
});
export type BotLogin = z.infer<typeof BotLogin>;

/** What a bot stores of its login option: the account, or the group (with its default). */
export function storedLogin(login: BotLoginOption): StoredLogin {
  return login.accountId !== undefined
    ? { mode: login.mode, accountId: login.accountId }
    : { mode: login.mode, group: login.group ?? DEFAULT_ACCOUNT_GROUP };
}
export type StoredLogin = { mode: LoginMode } & ({ accountId: number } | { group: string });

/**
 * Ours: the bot's meeting data (recording, transcript, summary, chat, live transcript, speaker
 * timeline, share link) is deleted this many hours after the bot ended (services/retention.ts).
 */
export const RetentionOption = z.strictObject({
  hours: z.number().positive().max(876_000).describe("hours after the bot ended (DONE or FATAL)"),
});
export type RetentionOption = z.infer<typeof RetentionOption>;
/** A bot's audio stream as answers show it: the token never, only whether there is one. */
export const BotAudioStream = z.object({
  url: z.string(),
  sampleRate: AudioStreamOptions.shape.sampleRate.unwrap(),
  hasToken: z.boolean().describe("a token was given (it is stored encrypted and never shown)"),
});
export type BotAudioStream = z.infer<typeof BotAudioStream>;

const AUDIO_STREAM_DESCRIPTION =
  "a live audio channel to an agent (ours): the runner connects to this WebSocket once in the call, sends the meeting's sound and its speaker and participant events, and plays the sound it receives into the meeting (docs/api.md, 'A live audio channel for agents')";

export const Bot = z.object({
  id: z.number().int(),
  botDisplayName: z.string(),
  meetingTitle: z.string(),
  status: BotStatus,
  meetingInfo: MeetingInfo,
  createdAt: Timestamp,
  recording: Recording.nullable(),
  transcription: TranscriptionOptions.nullable().describe(
    "as created: transcribed once recorded; null: not asked",
  ),
  summary: SummaryOptions.nullable().describe("as created: summarized once transcribed; null: not asked"),
  login: BotLogin.nullable().describe("signs in with a bot account (ours); null: joins as a guest"),
  liveTranscript: LiveTranscriptOptions.nullable().describe(
    "a transcript while people talk (ours); null: none, the recording can still be transcribed after",
  ),
  chat: ChatOptions.describe("the meeting's chat (ours): a message sent once in the call"),
  output: OutputOptions.describe("what the bot sends into the meeting (ours)"),
  joinAt: Timestamp.nullable().describe(
    "when the bot is to be in its meeting: the server deploys it by itself shortly before (ours); null: deployed by hand",
  ),
  retention: RetentionOption.nullable().describe(
    "as created: its meeting data is deleted this long after it ended (ours); null: the server's MEETBOT_RETENTION_HOURS, unset: kept",
  ),
  dataDeletedAt: Timestamp.nullable().describe(
    "when its meeting data was deleted (retention, or on request); null: not deleted",
  ),
  audioStream: BotAudioStream.nullable().describe(`${AUDIO_STREAM_DESCRIPTION}; null: none`),
  recordingOptions: z
    .object({ video: z.boolean() })
    .describe("the bot option `recording` as created (ours); video false: an audio-only bot"),
});
export type Bot = z.infer<typeof Bot>;

export const BotDetail = Bot.extend({
  deploymentError: DeploymentError.nullable(),
  lastHeartbeat: Timestamp.nullable(),
});
export type BotDetail = z.infer<typeof BotDetail>;

/**
 * Ours: a scheduled bot. It stays READY_TO_DEPLOY and the server deploys it by itself a lead
 * (MEETBOT_SCHEDULE_LEAD_MS) before this time. 30 s to 90 days ahead, checked against the
 * server's clock by the service (services/schedules.ts, checkJoinAt).
 */
const JoinAt = Timestamp.describe(
  "schedule the bot: ISO 8601 UTC, at least 30 s and at most 90 days ahead; the server deploys it by itself shortly before (ours)",
);

/** Same rules and defaults as the runner's BotConfig; durations in milliseconds. */
export const CreateBotBody = z.object({
  meetingInfo: MeetingInfo,
  botDisplayName: BotConfig.shape.botDisplayName,
  meetingTitle: BotConfig.shape.meetingTitle,
  callbackUrl: HttpUrl.optional(),
  heartbeatInterval: BotConfig.shape.heartbeatInterval,
  automaticLeave: AutomaticLeave.prefault({}),
  transcription: TranscriptionOptions.optional().describe(
    "transcribe the recording once it is stored (ours; the spec has no such field)",
  ),
  summary: SummaryOptions.optional().describe(
    "summarize the transcript once it is made; implies `transcription` with its defaults (ours)",
  ),
  login: BotLoginOption.optional().describe(
    "sign in with one of your bot accounts of the meeting's platform (ours); absent: join as a guest",
  ),
  liveTranscript: LiveTranscriptOptions.optional().describe(
    "a transcript while people talk, from the platform's captions or pocketsphinx (ours)",
  ),
  chat: ChatOptions.prefault({}).describe(
    "chat.onJoin: a message the bot sends once it is in the call (ours)",
  ),
  output: OutputOptionsBody.prefault({}).describe(
    "output.keepMicOn: the microphone stays on once the bot has spoken; output.image: a picture its camera shows from its join on (ours)",
  ),
  joinAt: JoinAt.optional(),
  retention: RetentionOption.optional().describe(
    "delete the bot's meeting data this many hours after it ended (ours); absent: the server's MEETBOT_RETENTION_HOURS, unset: kept",
  ),
  audioStream: AudioStreamOptions.optional().describe(AUDIO_STREAM_DESCRIPTION),
  recording: BotRecordingOption.prefault({}).describe(
    "recording.video false: an audio-only bot, recording sound alone (format m4a) (ours)",
  ),
});
export type CreateBotBody = z.infer<typeof CreateBotBody>;

/** Durations without their create-time defaults: a PATCH changes only what it names. */
const AutomaticLeavePatch = z.strictObject({
  waitingRoomTimeout: AutomaticLeave.shape.waitingRoomTimeout.unwrap().optional(),
  noOneJoinedTimeout: AutomaticLeave.shape.noOneJoinedTimeout.unwrap().optional(),
  everyoneLeftTimeout: AutomaticLeave.shape.everyoneLeftTimeout.unwrap().optional(),
  maxDuration: AutomaticLeave.shape.maxDuration.unwrap().optional(),
  silenceTimeout: AutomaticLeave.shape.silenceTimeout.unwrap().optional(),
  botNames: AutomaticLeave.shape.botNames.unwrap().optional(),
  onlyBotsTimeout: AutomaticLeave.shape.onlyBotsTimeout.unwrap().optional(),
});

/**
 * PATCH /v1/bots/{id}: any of the create fields; absent ones stay as they are. meetingInfo is
 * replaced whole (its platform rules apply again), automaticLeave is merged field by field,
 * callbackUrl null removes it. Unknown fields (a typo, or `status`) are a 422, not silently ignored.
 */
export const UpdateBotBody = z.strictObject({
  meetingInfo: MeetingInfo.optional(),
  botDisplayName: BotConfig.shape.botDisplayName.unwrap().optional(),
  meetingTitle: BotConfig.shape.meetingTitle.unwrap().optional(),
  callbackUrl: HttpUrl.nullable().optional(),
  heartbeatInterval: BotConfig.shape.heartbeatInterval.unwrap().optional(),
  automaticLeave: AutomaticLeavePatch.optional(),
  login: BotLoginOption.nullable().optional().describe("null: join as a guest"),
  liveTranscript: LiveTranscriptOptions.nullable().optional().describe("null: no live transcript"),
  chat: ChatOptions.optional().describe("replaced whole"),
  output: OutputOptionsBody.optional().describe("replaced whole"),
  joinAt: JoinAt.nullable().optional().describe("moves the schedule; null: deployed by hand only"),
  retention: RetentionOption.nullable().optional().describe("null: the server's MEETBOT_RETENTION_HOURS"),
  audioStream: AudioStreamOptions.nullable()
    .optional()
    .describe("replaced whole (the token too); null: none"),
  recording: BotRecordingOption.optional().describe("replaced whole"),
});
export type UpdateBotBody = z.infer<typeof UpdateBotBody>;

export const BotListQuery = z.object({
  ...Pagination,
  status: BotStatus.optional(),
  scheduled: z
    .enum(["true", "false"])
    .optional()
    .describe(
      "true: only the bots waiting for their joinAt, soonest first (ours); false or absent: every bot",
    ),
});
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

export const KillResult = z.object({
  message: z.string(),
  botId: z.number().int(),
  status: z.literal("FATAL"),
});
export type KillResult = z.infer<typeof KillResult>;
