import type { Kysely } from "kysely";
import type { CallbackEvent } from "../../core/index.js";
import { parseJson } from "../db/database.js";
import type { Database, LiveEventRow } from "../db/schema.js";
import type { LiveEvent } from "../schemas/index.js";

/**
 * A bot's live stream (GET /v1/bots/{id}/live): the runner's reports that tell what happens in the
 * meeting, written in the same transaction that applies the report, so the stream's order is the
 * reports' order and a resumed stream misses nothing. Transcript partials are superseded: only
 * the newest of an utterance is kept until its final arrives, then none.
 */

/** What a live-stream event says: the report's data, as the runner sent it (validated). */
type LiveData = Record<string, unknown>;

/**
 * Appends what `event` adds to the bot's live stream (and its live transcript and chat).
 * Answers "appended", "none" (not a live event), or "duplicate" (a chat message the bot already
 * has, re-rendered by the page: nothing is appended and nothing should be sent for it).
 */
export async function appendLiveEvent(
  db: Kysely<Database>,
  botId: number,
  event: CallbackEvent,
  eventTime: string,
  now: string,
): Promise<"appended" | "none" | "duplicate"> {
  const insert = (utteranceId: string | null, data: LiveData) =>
    db
      .insertInto("live_events")
      .values({
        bot_id: botId,
        event_type: event.type,
        utterance_id: utteranceId,
        data: JSON.stringify(data),
        event_time: eventTime,
      })
      .execute();
  switch (event.type) {
    case "status":
    case "participant.joined":
    case "participant.left":
    case "speaker.started":
    case "speaker.stopped":
    case "transcript.source":
    case "output.started":
    case "output.ended":
    case "recording.paused":
    case "recording.resumed":
      await insert(null, { ...event.data });
      return "appended";
    case "transcript.partial":
    case "transcript.final": {
      const { utteranceId } = event.data;
      // A newer partial, or the final, replaces what a resuming client would otherwise replay.
      await db
        .deleteFrom("live_events")
        .where("bot_id", "=", botId)
        .where("utterance_id", "=", utteranceId)
        .where("event_type", "=", "transcript.partial")
        .execute();
      await insert(utteranceId, { ...event.data });
      if (event.type === "transcript.final") await keepUtterance(db, botId, event.data);
      return "appended";
    }
    case "chat.message": {
      const { messageId, sender, text, sentAt, fromBot } = event.data;
      const stored = await db
        .insertInto("chat_messages")
        .values({
          bot_id: botId,
          message_id: messageId,
          sender_id: sender?.participantId ?? null,
          sender_name: sender?.name ?? null,
          text,
          sent_at: new Date(sentAt).toISOString(),
          from_bot: fromBot ? 1 : 0,
          created_at: now,
        })
        .onConflict((oc) => oc.columns(["bot_id", "message_id"]).doNothing())
        .executeTakeFirst();
      if (Number(stored.numInsertedOrUpdatedRows ?? 0) === 0) return "duplicate";
      await insert(null, { ...event.data });
      return "appended";
    }
    case "recording.started":
    case "recording.stopped":
    case "command.result":
    case "log":
    case "heartbeat":
      return "none";
  }
}

/** A settled utterance, kept for the stored transcript (the same id again replaces it). */
async function keepUtterance(
  db: Kysely<Database>,
  botId: number,
  utterance: Extract<CallbackEvent, { type: "transcript.final" }>["data"],
): Promise<void> {
  const row = {
    speaker_id: utterance.speaker?.participantId ?? null,
    speaker_name: utterance.speaker?.name ?? null,
    text: utterance.text,
    start_ms: utterance.startMs,
    end_ms: Math.max(utterance.endMs, utterance.startMs),
    source: utterance.source,
    language: utterance.language,
  };
  await db
    .insertInto("live_utterances")
    .values({ bot_id: botId, utterance_id: utterance.utteranceId, ...row })
    .onConflict((oc) => oc.columns(["bot_id", "utterance_id"]).doUpdateSet(row))
    .execute();
}

/** Up to `limit` live events of the bot after `afterId`, oldest first. */
export async function liveEventsAfter(
  db: Kysely<Database>,
  botId: number,
  afterId: number,
  limit: number,
): Promise<LiveEvent[]> {
  const rows = await db
    .selectFrom("live_events")
    .selectAll()
    .where("bot_id", "=", botId)
    .where("id", ">", afterId)
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map(toLiveEvent);
}

/** The id a stream "from now on" starts after: the bot's newest live event, or 0. */
export async function newestLiveEventId(db: Kysely<Database>, botId: number): Promise<number> {
  const row = await db
    .selectFrom("live_events")
    .select((eb) => eb.fn.max("id").as("id"))
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

function toLiveEvent(row: LiveEventRow): LiveEvent {
  return {
    id: row.id,
    botId: row.bot_id,
    type: row.event_type as LiveEvent["type"],
    eventTime: row.event_time,
    data: parseJson<LiveData>(row.data),
  };
}
