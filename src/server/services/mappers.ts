import type { ContentOptions } from "../jobs/content-options.js";
import type {
  BotStatus,
  ChatOptions,
  LiveTranscriptOptions,
  MeetingInfo,
  OutputOptions,
} from "../../core/index.js";
import { parseJson } from "../db/database.js";
import { audioStreamOf } from "./audio-stream.js";
import type { BotRow } from "../db/schema.js";
import {
  type Bot,
  type BotLogin,
  type BotRecordingOption,
  RECORDING_MIME_TYPES,
  type Recording,
  type StoredLogin,
} from "../schemas/index.js";

/**
 * Database rows to the API's shapes, for every service that answers with a bot or a recording
 * (a module of its own, so that those services need not import one another).
 */

/** The recording columns of a bots ⟕ recordings query. */
export const recordingColumns = [
  "recordings.size_bytes as rec_size_bytes",
  "recordings.duration_ms as rec_duration_ms",
  "recordings.created_at as rec_created_at",
  "recordings.format as rec_format",
] as const;

export interface RecordingColumns {
  rec_format: string | null;
  rec_size_bytes: number | string | null;
  rec_duration_ms: number | null;
  rec_created_at: string | null;
}

export function toRecording(botId: number, cols: RecordingColumns): Recording | null {
  if (cols.rec_created_at === null) return null;
  const format = cols.rec_format === "m4a" ? "m4a" : "mp4";
  return {
    botId,
    format,
    mimeType: RECORDING_MIME_TYPES[format],
    // bigint comes back as a string from PostgreSQL
    sizeBytes: Number(cols.rec_size_bytes),
    durationSeconds: Number(cols.rec_duration_ms) / 1000,
    createdAt: cols.rec_created_at,
  };
}

export function toBot(row: BotRow, recording: RecordingColumns | null): Bot {
  return {
    id: row.id,
    botDisplayName: row.bot_display_name,
    meetingTitle: row.meeting_title,
    status: row.status as BotStatus,
    meetingInfo: parseJson<MeetingInfo>(row.meeting_info),
    createdAt: row.created_at,
    recording: recording ? toRecording(row.id, recording) : null,
    ...contentOptionsOf(row.content_options),
    login: loginOf(row),
    liveTranscript: parseJson<LiveTranscriptOptions>(row.live_transcript),
    chat: parseJson<ChatOptions>(row.chat_options) ?? {},
    output: parseJson<OutputOptions>(row.output_options) ?? {},
    joinAt: row.join_at,
    retention: row.retention_hours === null ? null : { hours: Number(row.retention_hours) },
    dataDeletedAt: row.data_deleted_at,
    audioStream: audioStreamOf(row),
    recordingOptions: recordingOptionOf(row),
  };
}

/** The bot option `recording` as stored; a bot created before it existed records video. */
export function recordingOptionOf(row: Pick<BotRow, "recording_options">): BotRecordingOption {
  return parseJson<BotRecordingOption>(row.recording_options) ?? { video: true };
}

/** The stored column of the bot option `recording`: null for the defaults. */
export function recordingOptionColumn(option: BotRecordingOption): string | null {
  return option.video ? null : JSON.stringify(option);
}

/** The bot's login option as stored, and the account it was given at deploy: never a session. */
function loginOf(row: Pick<BotRow, "login" | "login_account_id">): BotLogin | null {
  const login = parseJson<StoredLogin>(row.login);
  if (!login) return null;
  return {
    mode: login.mode,
    accountId: "accountId" in login ? login.accountId : null,
    group: "group" in login ? login.group : null,
    assignedAccountId: row.login_account_id,
  };
}

/** The bot's `transcription` and `summary` create options as it was given them; null: not asked. */
function contentOptionsOf(stored: string | null): Pick<Bot, "transcription" | "summary"> {
  const options = stored ? (JSON.parse(stored) as ContentOptions) : {};
  return { transcription: options.transcription ?? null, summary: options.summary ?? null };
}
