/**
 * Webhook event names (spec §6), plus `bot.ended`: the bot reached DONE or FATAL, whichever way,
 * and ours: `recording.paused`/`recording.resumed` (pause_recording/resume_recording),
 * `recording.deleted` (a bot's meeting data deleted: retention, or its owner's request), transcript
 * and summary events, the live meeting's (`transcript.partial`/`final`/`source`, `chat.message`),
 * `bot_account.*` about a user's bot accounts, and `calendar.*` about the syncs of a user's
 * calendar feeds.
 * The spec's subscription example also names `recording.available`; the server accepts it as an
 * alias of `recording.ready` when subscribing, but never sends an event by that name.
 *
 * A module of its own, importing nothing, so that the dashboard's bundle can list the names
 * without taking zod along.
 */
export const WEBHOOK_EVENT_NAMES = [
  "bot.deploying",
  "bot.joining",
  "bot.joined",
  "bot.in_waiting_room",
  "bot.left",
  "bot.error",
  "bot.ended",
  "bot.output_started",
  "bot.output_ended",
  "recording.started",
  "recording.stopped",
  "recording.paused",
  "recording.resumed",
  "recording.ready",
  "recording.deleted",
  "participant.joined",
  "participant.left",
  "transcript.partial",
  "transcript.final",
  "transcript.source",
  "chat.message",
  "transcript.ready",
  "transcript.failed",
  "summary.ready",
  "summary.failed",
  "bot_account.checked",
  "bot_account.expired",
  "calendar.synced",
  "calendar.sync_failed",
] as const;

/**
 * Sent only to a webhook that names them: "*" does not include them. A live transcript's partials
 * come several times a second while someone talks, which no receiver wants unasked.
 */
export const EXPLICIT_ONLY_WEBHOOK_EVENTS: readonly string[] = ["transcript.partial"];
