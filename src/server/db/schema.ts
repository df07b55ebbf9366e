import type { Generated, Insertable, Selectable } from "kysely";

/**
 * The Kysely view of the database. Portable on purpose (SQLite now, PostgreSQL later with the same
 * code): integer autoincrement ids, timestamps as ISO-8601 UTC text, JSON as text.
 */
export interface Database {
  users: UsersTable;
  bots: BotsTable;
  bot_events: BotEventsTable;
  aggregated_events: AggregatedEventsTable;
  bot_logs: BotLogsTable;
  callback_receipts: CallbackReceiptsTable;
  recordings: RecordingsTable;
  speaker_changes: SpeakerChangesTable;
}

/** Speaking starts and stops reported by a runner, in the order it reported them. */
export interface SpeakerChangesTable {
  id: Generated<number>;
  bot_id: number;
  /** "started" | "stopped" */
  change: string;
  participant_id: string;
  participant_name: string;
  event_time: string;
}

export interface UsersTable {
  id: Generated<number>;
  email: string;
  name: string;
  password_hash: string;
  created_at: string;
}

export interface BotsTable {
  id: Generated<number>;
  user_id: number;
  bot_display_name: string;
  meeting_title: string;
  status: string;
  platform: string;
  /** JSON of core MeetingInfo. */
  meeting_info: string;
  callback_url: string | null;
  heartbeat_interval: number;
  /** JSON of core AutomaticLeave. */
  automatic_leave: string;
  /** sha256 (hex) of the per-bot callback token; null until deployed. */
  callback_token_hash: string | null;
  /** JSON of DeploymentError; null unless FATAL. */
  deployment_error: string | null;
  last_heartbeat: string | null;
  /** When the recording's 0 s was, from the runner's recording.started; null before that. */
  recording_started_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface BotEventsTable {
  id: Generated<number>;
  bot_id: number;
  event_type: string;
  event_time: string;
  /** JSON object. */
  data: string;
  created_at: string;
}

export interface AggregatedEventsTable {
  id: Generated<number>;
  bot_id: number;
  event_type: string;
  event_time: string;
  /** JSON object. */
  data: string;
  created_at: string;
}

export interface BotLogsTable {
  id: Generated<number>;
  bot_id: number;
  level: string;
  message: string;
  created_at: string;
}

/** One row per applied runner event: the (bot_id, seq) key is what makes replays harmless. */
export interface CallbackReceiptsTable {
  bot_id: number;
  seq: number;
  event_type: string;
  received_at: string;
}

export interface RecordingsTable {
  bot_id: number;
  format: string;
  size_bytes: number;
  duration_ms: number;
  created_at: string;
}

export type UserRow = Selectable<UsersTable>;
export type BotRow = Selectable<BotsTable>;
export type NewBot = Insertable<BotsTable>;
export type RecordingRow = Selectable<RecordingsTable>;
