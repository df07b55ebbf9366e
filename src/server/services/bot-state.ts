import { randomBytes } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { z } from "zod";
import {
  type BotStatus,
  type CallbackEvent,
  canTransition,
  deriveEvents,
  isTerminal,
  type LogLevel,
  type StatusChangeEvent,
} from "../../core/index.js";
import { toIso } from "../db/database.js";
import type { BotRow, Database, DialectName } from "../db/schema.js";
import type { DeploymentError } from "../schemas/index.js";
import { artifactPath } from "../http/urls.js";
import { ARTIFACT_NAME } from "../storage/artifacts.js";
import { failOpenCommands } from "./command-rows.js";

/**
 * The writes that make up a bot's state, shared by the runner callbacks and by the server's own
 * transitions (deploy, launch failure, kill, watchdog). Every function takes the transaction it
 * runs in.
 */

export type StatusData = z.infer<typeof StatusChangeEvent>["data"];

/** Reads a bot and, on PostgreSQL, locks its row until the transaction ends (SQLite serializes). */
export function lockBot(
  db: Kysely<Database>,
  dialect: DialectName,
  botId: number,
): Promise<BotRow | undefined> {
  return db
    .selectFrom("bots")
    .selectAll()
    .where("id", "=", botId)
    .$if(dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
}

export async function appendLog(
  db: Kysely<Database>,
  botId: number,
  level: LogLevel,
  message: string,
  at: string,
): Promise<void> {
  await db.insertInto("bot_logs").values({ bot_id: botId, level, message, created_at: at }).execute();
}

/**
 * Appends the per-bot and aggregated events core's deriveEvents makes of a reported event.
 * Returns how many aggregated events it appended: once the transaction commits, the caller wakes
 * this process's event streams with them.
 */
export async function appendDerivedEvents(
  db: Kysely<Database>,
  dialect: DialectName,
  bot: Pick<BotRow, "id" | "meeting_title" | "platform">,
  event: CallbackEvent,
  eventTime: string,
  createdAt: string,
): Promise<number> {
  const { botEvents, aggregatedEvents } = deriveEvents(event, {
    meetingTitle: bot.meeting_title,
    platform: bot.platform,
  });
  const rows = (list: { eventType: string; data: Record<string, unknown> }[]) =>
    list.map((e) => ({
      bot_id: bot.id,
      event_type: e.eventType,
      event_time: eventTime,
      data: JSON.stringify(e.data),
      created_at: createdAt,
    }));
  if (botEvents.length > 0) await db.insertInto("bot_events").values(rows(botEvents)).execute();
  await recordMeetingTimes(db, bot.id, botEvents, eventTime);
  if (aggregatedEvents.length > 0) {
    // Event streams send ids in order and resume after the last one sent, so a smaller id must
    // never commit after a larger one: PostgreSQL hands out ids before commit, so these inserts
    // take turns until their transaction ends (SQLite has one writer at a time anyway).
    if (dialect === "postgres")
      await sql`select pg_advisory_xact_lock(${AGGREGATED_EVENTS_LOCK})`.execute(db);
    await db.insertInto("aggregated_events").values(rows(aggregatedEvents)).execute();
  }
  return aggregatedEvents.length;
}

/** The advisory lock key that orders aggregated event inserts (any fixed number of our own). */
const AGGREGATED_EVENTS_LOCK = 0x6d62_6576; // "mbev"

/**
 * A bot's meeting (the notes interface) starts when it joined the call and ends when it left it,
 * or failed after joining; the first of each counts. Joining gives the meeting its public id.
 */
async function recordMeetingTimes(
  db: Kysely<Database>,
  botId: number,
  botEvents: readonly { eventType: string }[],
  eventTime: string,
): Promise<void> {
  // Runners may send any UTC offset; meetings are filtered and ordered by these as text.
  const at = new Date(eventTime).toISOString();
  for (const { eventType } of botEvents) {
    if (eventType === "BOT_JOINED") {
      await db
        .updateTable("bots")
        .set({ meeting_started_at: at, meeting_id: newMeetingId() })
        .where("id", "=", botId)
        .where("meeting_started_at", "is", null)
        .execute();
    } else if (eventType === "BOT_LEFT" || eventType === "ERROR") {
      await db
        .updateTable("bots")
        .set({ meeting_ended_at: at })
        .where("id", "=", botId)
        .where("meeting_started_at", "is not", null)
        .where("meeting_ended_at", "is", null)
        .execute();
    }
  }
}

/** `mtg_` and 24 hex digits (96 random bits): says nothing of the bot's id or when it was made. */
export function newMeetingId(): string {
  return `mtg_${randomBytes(12).toString("hex")}`;
}

/** Keeps what the recording's speaker timeline is built from: its time zero and who spoke when. */
export async function appendSpeakerFacts(
  db: Kysely<Database>,
  botId: number,
  event: CallbackEvent,
  eventTime: string,
): Promise<void> {
  if (event.type === "recording.started" && event.data.startedAt) {
    await db
      .updateTable("bots")
      .set({ recording_started_at: toIso(new Date(event.data.startedAt)) })
      .where("id", "=", botId)
      .execute();
  }
  if (event.type === "speaker.started" || event.type === "speaker.stopped") {
    await db
      .insertInto("speaker_changes")
      .values({
        bot_id: botId,
        change: event.type === "speaker.started" ? "started" : "stopped",
        participant_id: event.data.participantId,
        participant_name: event.data.participantName,
        event_time: eventTime,
      })
      .execute();
  }
}

/** The runner names the artifacts it uploaded; the owner reads them at their API paths. */
export function deploymentErrorOf(data: StatusData, botId: number): DeploymentError {
  const code = data.subCode ?? "INTERNAL_ERROR";
  const artifacts = (data.artifacts ?? []).filter((name) => ARTIFACT_NAME.test(name));
  return {
    code,
    message: data.message ?? code,
    ...(artifacts.length > 0 ? { artifacts: artifacts.map((name) => artifactPath(botId, name)) } : {}),
  };
}

/**
 * Moves the bot to `data.status` when core's transition table allows it (FATAL also records the
 * deploymentError). Returns false, changing nothing, when it does not.
 */
export async function applyStatusChange(
  db: Kysely<Database>,
  bot: Pick<BotRow, "id" | "status" | "retention_hours">,
  data: StatusData,
  now: string,
  opts: { missedSchedule?: boolean } = {},
): Promise<boolean> {
  // The one move the table does not list: a scheduled bot the server could not deploy in time
  // fails before it was ever deployed (services/schedules.ts).
  const missed = opts.missedSchedule === true && bot.status === "READY_TO_DEPLOY" && data.status === "FATAL";
  if (!missed && !canTransition(bot.status as BotStatus, data.status)) return false;
  const result = await db
    .updateTable("bots")
    .set({
      status: data.status,
      updated_at: now,
      ...(data.status === "FATAL"
        ? { deployment_error: JSON.stringify(deploymentErrorOf(data, bot.id)) }
        : {}),
      // The bot's own retention counts from here (services/retention.ts).
      ...(isTerminal(data.status)
        ? {
            ended_at: now,
            data_expires_at:
              bot.retention_hours === null
                ? null
                : new Date(Date.parse(now) + bot.retention_hours * 3_600_000).toISOString(),
          }
        : {}),
    })
    .where("id", "=", bot.id)
    .where("status", "=", bot.status)
    .executeTakeFirst();
  const changed = Number(result.numUpdatedRows) === 1;
  // Nothing will run a command the bot never acknowledged: it fails now, not at its deadline.
  if (changed && isTerminal(data.status)) await failOpenCommands(db, bot.id, data.status, now);
  return changed;
}
