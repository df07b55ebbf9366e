import type { Generated, Insertable, Selectable } from "kysely";

/** The two databases the same Kysely code runs on. */
export type DialectName = "sqlite" | "postgres";

/**
 * The Kysely view of the database. Portable on purpose (SQLite and PostgreSQL with the same
 * code): integer autoincrement ids, timestamps as ISO-8601 UTC text, JSON as text.
 */
export interface Database {
  users: UsersTable;
  plan_usage: PlanUsageTable;
  bots: BotsTable;
  bot_accounts: BotAccountsTable;
  bot_account_checks: BotAccountChecksTable;
  bot_commands: BotCommandsTable;
  live_events: LiveEventsTable;
  live_utterances: LiveUtterancesTable;
  chat_messages: ChatMessagesTable;
  bot_events: BotEventsTable;
  aggregated_events: AggregatedEventsTable;
  bot_logs: BotLogsTable;
  callback_receipts: CallbackReceiptsTable;
  recordings: RecordingsTable;
  recording_shares: RecordingSharesTable;
  content_jobs: ContentJobsTable;
  transcripts: TranscriptsTable;
  summaries: SummariesTable;
  speaker_changes: SpeakerChangesTable;
  api_keys: ApiKeysTable;
  api_request_logs: ApiRequestLogsTable;
  user_identities: UserIdentitiesTable;
  refresh_token_families: RefreshTokenFamiliesTable;
  webhooks: WebhooksTable;
  webhook_signing_secrets: WebhookSigningSecretsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable;
  calendars: CalendarsTable;
  calendar_events: CalendarEventsTable;
}

/** Only the sha256 (hex) of a key is kept; the full key is shown once, at creation. */
export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  key_hash: string;
  /** Prefix, first characters, an ellipsis, last characters (spec §2). */
  key_preview: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface ApiRequestLogsTable {
  id: Generated<number>;
  user_id: number;
  /** Set when the credential was an API key. */
  api_key_id: number | null;
  /** "access_token" | "api_key" */
  credential_kind: string;
  method: string;
  /** The URL path as requested, without the query string. */
  path: string;
  /** The route pattern, e.g. "/v1/bots/:id": what usage is grouped by. */
  route: string;
  status_code: number;
  latency_ms: number;
  created_at: string;
}

export interface UserIdentitiesTable {
  id: Generated<number>;
  user_id: number;
  /** "google" | "microsoft" */
  provider: string;
  /** The provider's `sub` claim. */
  subject: string;
  email: string | null;
  created_at: string;
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
  /** "free" | "pro" | "enterprise" (src/notes/plans.ts); null: the configured default plan. */
  plan: string | null;
  /**
   * Moved on by a password change and by POST /v1/auth/sessions/revoke. Every JWT carries the
   * value it was issued under (`gen`); one of another generation is refused.
   */
  session_generation: Generated<number>;
}

/**
 * One sign-in (login, register, OAuth): its refresh tokens rotate, and only the newest
 * (`current_jti`) may be used. Using an older one revokes the family, and with it every access
 * and refresh token issued in it.
 */
export interface RefreshTokenFamiliesTable {
  /** The `fam` claim of its tokens: 16 random bytes, base64url. */
  id: string;
  user_id: number;
  /** The `jti` of the one refresh token of this family that may still be used. */
  current_jti: string;
  created_at: string;
  /** When the current refresh token expires; the row may go after that. */
  expires_at: string;
  /** Set when a refresh token was used twice. */
  revoked_at: string | null;
}

/** Notes-interface requests per user and clock hour (src/notes/plan-limits.ts). */
export interface PlanUsageTable {
  user_id: number;
  /** ISO-8601 UTC start of the hour. */
  window_start: string;
  count: number;
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
  /**
   * From this instant the callback token is refused: the bot has ended and its runner is done
   * (services/callback-token.ts). Null while the bot may still hear from its runner.
   */
  callback_token_expires_at: string | null;
  /**
   * JSON of the bot.ended webhook events (and their event time) of a bot the server ended while
   * its runner may still deliver a recording: queued once that runner is done, so that bot.ended
   * stays a bot's last delivery (webhooks/outbox.ts). Null otherwise.
   */
  held_bot_ended: string | null;
  /** JSON of the `transcription` and `summary` create options (jobs/content-options.ts); null: none. */
  content_options: string | null;
  /** The notes interface's id of the bot's meeting (`mtg_…`); null until the bot joined a call. */
  meeting_id: string | null;
  /** When the bot joined the call (BOT_JOINED) and left it (BOT_LEFT, or its ERROR after joining). */
  meeting_started_at: string | null;
  meeting_ended_at: string | null;
  /** JSON of DeploymentError; null unless FATAL. */
  deployment_error: string | null;
  last_heartbeat: string | null;
  /** When the recording's 0 s was, from the runner's recording.started; null before that. */
  recording_started_at: string | null;
  /**
   * When the owner deleted the bot's recording: from then on nothing is stored for it again (a late
   * upload, a segment, a salvage at startup). Null while it was never deleted.
   */
  data_deleted_at: string | null;
  /** JSON of the bot's `login` option ({mode, accountId?, group?}); null: it joins anonymously. */
  login: string | null;
  /** The account held for (or last given to) the bot at deploy; null before, or without a login. */
  login_account_id: number | null;
  /** The account's session_version the bot was given: its write-back is kept only while it is current. */
  login_session_version: number | null;
  /** 1 while the bot holds its account (counted in the account's in_use), else 0. */
  login_held: Generated<number>;
  /** JSON of the bot's `liveTranscript` option; null: none. */
  live_transcript: string | null;
  /** JSON of the bot's `chat` option; null: none. */
  chat_options: string | null;
  /** The bot option output (core OutputOptions), JSON; null: none asked. */
  output_options: string | null;
  /** The bot option recording (schemas/bots.ts BotRecordingOption), JSON; null: the defaults. */
  recording_options: string | null;
  /** When a scheduled bot should be in its meeting (ISO, UTC); null: deployed by hand only. */
  join_at: string | null;
  /** The schedule's claim (services/schedules.ts): who deploys it, and until when it holds. */
  schedule_claim_token: string | null;
  schedule_lease_until: string | null;
  /** The bot option retention.hours; null: MEETBOT_RETENTION_HOURS (unset: kept). */
  retention_hours: number | null;
  /** When the bot ended (DONE or FATAL); null while it has not. */
  ended_at: string | null;
  /** ended_at + retention_hours, set as the bot ends; null without its own retention. */
  data_expires_at: string | null;
  /** The retention sweep's claim (services/retention.ts). */
  retention_claim_token: string | null;
  retention_lease_until: string | null;
  /** The bot option audioStream without its token (url, sampleRate), JSON; null: none. */
  audio_stream: string | null;
  /** The audioStream's token sealed with MEETBOT_SECRET_KEY (auth/secret-box.ts Sealed, JSON); null: none. */
  audio_stream_token: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * A user's signed-in platform account (services/bot-accounts.ts). The session is kept only
 * encrypted (AES-256-GCM, auth/secret-box.ts): key id, nonce and tag beside the ciphertext.
 */
/** services/account-checks.ts. */
export interface BotAccountChecksTable {
  id: Generated<number>;
  account_id: number;
  user_id: number;
  /** "queued" | "running" | "completed" | "failed". */
  state: string;
  /** "request" | "schedule". */
  origin: string;
  meeting_url: string;
  attempts: number;
  lease_until: string | null;
  claim_token: string | null;
  /** sha256 of the runner's callback token, once launched. */
  token_hash: string | null;
  /** The account's session version the runner was given. */
  session_version: number | null;
  deadline_at: string | null;
  /** "active" | "expired", once completed. */
  result: string | null;
  error_message: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}
export type BotAccountCheckRow = Selectable<BotAccountChecksTable>;

/** Commands to running bots (services/commands.ts), kept until the runner acknowledges each. */
export interface BotCommandsTable {
  id: Generated<number>;
  bot_id: number;
  /** core's CommandKind. */
  kind: string;
  /** JSON object: the command's arguments. */
  payload: string;
  /** "queued" | "sent" | "done" | "failed". */
  state: string;
  /** JSON object the runner answered with, once done. */
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: string;
  /** When a poll first handed it to the runner. */
  sent_at: string | null;
  deadline_at: string;
  completed_at: string | null;
}
export type BotCommandRow = Selectable<BotCommandsTable>;

/** A bot's live stream: status, participants, speakers, transcript and chat, in order (services/live.ts). */
export interface LiveEventsTable {
  id: Generated<number>;
  bot_id: number;
  event_type: string;
  /** transcript.partial / transcript.final: whose partials a final replaces. */
  utterance_id: string | null;
  /** JSON object: the event's data. */
  data: string;
  event_time: string;
}
export type LiveEventRow = Selectable<LiveEventsTable>;

/** A live transcript's settled utterances (transcript.final). */
export interface LiveUtterancesTable {
  bot_id: number;
  utterance_id: string;
  speaker_id: string | null;
  speaker_name: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
  source: string;
  language: string | null;
}

export interface ChatMessagesTable {
  id: Generated<number>;
  bot_id: number;
  message_id: string;
  sender_id: string | null;
  sender_name: string | null;
  text: string;
  sent_at: string;
  /** 1 or 0. */
  from_bot: number;
  created_at: string;
}
export type ChatMessageRow = Selectable<ChatMessagesTable>;

export interface BotAccountsTable {
  id: Generated<number>;
  user_id: number;
  platform: string;
  name: string;
  account_group: string;
  /** How many bots may hold the account at once. */
  max_concurrent: number;
  /** "unchecked" | "active" | "expired"; `disabled` is a switch of its own beside it. */
  state: string;
  /** 1 or 0. */
  disabled: number;
  /** Bots holding the account right now (bots.login_held); at most max_concurrent. */
  in_use: number;
  account_name: string | null;
  account_email: string | null;
  session_key_id: string;
  session_nonce: string;
  session_tag: string;
  session_ciphertext: string;
  /** Counts from 1; every stored session (create, PATCH, kept write-back) is a new version. */
  session_version: number;
  session_updated_at: string;
  last_used_at: string | null;
  last_checked_at: string | null;
  /** The meeting checks open (the last one a check was asked with); null: never checked so. */
  check_meeting_url: string | null;
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

/** A recording's public share link (at most one); only the sha256 (hex) of its token is kept. */
export interface RecordingSharesTable {
  bot_id: number;
  token_hash: string;
  expires_at: string;
  created_at: string;
}

/**
 * A recording's transcript or summary job (jobs/queue.ts): one row per (bot_id, kind), holding
 * where it stands for the status routes and the lease of the worker running it.
 */
export interface ContentJobsTable {
  id: Generated<number>;
  bot_id: number;
  /** "transcript" | "summary" */
  kind: string;
  /** "queued" | "processing" | "completed" | "failed" */
  state: string;
  engine: string;
  /** As requested (null: the engine's default); the transcript row has the one used. */
  language: string | null;
  model: string | null;
  /** Claims so far (a claim whose worker died counts). */
  attempts: number;
  /** When a queued job may run; null for a summary waiting for its transcript. */
  next_attempt_at: string | null;
  lease_until: string | null;
  claim_token: string | null;
  /** 0..1 while processing; null when unknown. */
  progress: number | null;
  error_code: string | null;
  error_message: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

/** A completed transcript; utterances are JSON of intelligence's Utterance[]. */
export interface TranscriptsTable {
  bot_id: number;
  engine: string;
  language: string;
  duration_ms: number;
  text: string;
  utterances: string;
  completed_at: string;
}

/** A completed summary; key_points, action_items and decisions are JSON arrays. */
export interface SummariesTable {
  bot_id: number;
  engine: string;
  overview: string;
  key_points: string;
  action_items: string;
  decisions: string;
  completed_at: string;
}

/** An endpoint registered through /v1/webhooks. The secret is kept as is: every delivery is signed with it. */
export interface WebhooksTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  url: string;
  /** JSON array of subscribed names ("*", spec names, aliases), as the user gave them. */
  events: string;
  secret: string;
  /** 1 or 0 (no boolean type on SQLite). */
  is_active: number;
  /** The interface it was registered on: "bot" or "notes" (WEBHOOK_APIS). */
  api: Generated<string>;
  created_at: string;
  updated_at: string;
}

/** Per user: signs the deliveries to the callbackUrl of the user's bots. Made on first use. */
export interface WebhookSigningSecretsTable {
  user_id: number;
  secret: string;
  created_at: string;
}

/**
 * The outbox: one row per (event, endpoint), written in the transaction of the event that causes
 * it; the worker claims and sends it. See src/server/webhooks/queue.ts for the states.
 */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  /** "whdel_" + hex: X-Webhook-Id, the same on every attempt. */
  public_id: string;
  user_id: number;
  /** Null for a delivery to a bot's callbackUrl. */
  webhook_id: number | null;
  /** Null for the test event. Not a foreign key: a delivery outlives its bot. */
  bot_id: number | null;
  /** The callbackUrl at the time of the event; null for webhooks (their current url is used). */
  target_url: string | null;
  /** Deliveries with the same key go one at a time, in id order: "webhook:<id>" or "callback:<hash>". */
  endpoint_key: string;
  event: string;
  /** The JSON body, exactly as sent. */
  payload: string;
  /** "pending" | "sending" | "succeeded" | "failed" */
  state: string;
  /** Number of the latest attempt; 0 before the first. */
  attempts: number;
  /** Failed attempts since the delivery was queued (or redelivered): which retry comes next. */
  round_failures: number;
  next_attempt_at: string | null;
  /** While "sending": the claim ends at this time, after which another worker may take it over. */
  lease_until: string | null;
  claim_token: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  last_error_message: string | null;
  last_response_time_ms: number | null;
  last_response_body: string | null;
  created_at: string;
}

export interface WebhookDeliveryAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  /** Copied from the delivery, for a webhook's statistics. */
  webhook_id: number | null;
  attempt: number;
  attempted_at: string;
  /** 1 for a 2xx answer, else 0. */
  succeeded: number;
  status_code: number | null;
  error: string | null;
  error_message: string | null;
  response_time_ms: number;
  response_body: string | null;
}

export type UserRow = Selectable<UsersTable>;
export type BotRow = Selectable<BotsTable>;
export type BotAccountRow = Selectable<BotAccountsTable>;
export type NewBot = Insertable<BotsTable>;
export type RecordingRow = Selectable<RecordingsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type ContentJobRow = Selectable<ContentJobsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

/** A user's iCalendar feed (services/calendars.ts); its address only sealed (MEETBOT_SECRET_KEY). */
export interface CalendarsTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  /** JSON of the sealed feed address (auth/secret-box.ts). */
  url_sealed: string;
  /** The address's host, the one part answers show. */
  url_host: string;
  auto_join: "all" | "none";
  /** JSON: the bot options its bots are created with, or null. */
  bot_defaults: string | null;
  /** The last sync, finished either way; null: not synced yet. */
  last_sync_at: string | null;
  /** Why the last sync failed; null when it did not. */
  last_sync_error: string | null;
  /** The last sync that succeeded. */
  last_synced_at: string | null;
  next_sync_at: string;
  sync_claim_token: string | null;
  sync_lease_until: string | null;
  created_at: string;
  updated_at: string;
}
export type CalendarRow = Selectable<CalendarsTable>;

/** One instance of a feed's event with a meeting link, in the sync window. */
export interface CalendarEventsTable {
  id: Generated<number>;
  calendar_id: number;
  user_id: number;
  uid: string;
  /** The instance's original start (ISO UTC); "" for an event that does not recur. */
  recurrence_id: string;
  title: string;
  start_at: string;
  end_at: string;
  /** JSON MeetingInfo. */
  meeting_info: string;
  /** The meeting's identity in its link (services/meeting-links.ts). */
  meeting_key: string;
  bot_mode: "auto" | "on" | "off";
  bot_id: number | null;
  created_at: string;
  updated_at: string;
}
export type CalendarEventRow = Selectable<CalendarEventsTable>;
