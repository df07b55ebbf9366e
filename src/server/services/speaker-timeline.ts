import type { Kysely } from "kysely";
import { type PauseSpan, type SpeakerSegment, speakerTimeline } from "../../core/index.js";
import { parseJson } from "../db/database.js";
import type { Database } from "../db/schema.js";

/**
 * Who spoke when in a bot's recording, on the recording's clock: the runner's speaker changes from
 * its recording.started on, through the recording's pauses, cut to `durationMs`. Empty before the
 * recording started.
 */
export async function loadSpeakerTimeline(
  db: Kysely<Database>,
  botId: number,
  durationMs: number,
): Promise<SpeakerSegment[]> {
  const bot = await db
    .selectFrom("bots")
    .select("recording_started_at")
    .where("id", "=", botId)
    .executeTakeFirst();
  if (!bot?.recording_started_at) return [];
  const changes = await db
    .selectFrom("speaker_changes")
    .selectAll()
    .where("bot_id", "=", botId)
    .orderBy("id")
    .execute();
  return speakerTimeline(
    changes.map((c) => ({
      type: c.change === "started" ? "speaker.started" : "speaker.stopped",
      participantId: c.participant_id,
      participantName: c.participant_name,
      eventTime: c.event_time,
    })),
    { startedAt: bot.recording_started_at, durationMs, pauses: await loadPauses(db, botId) },
  );
}

/**
 * The recording's pauses, from the bot's RECORDING_PAUSED / RECORDING_RESUMED events (the runner's
 * wall-clock instants, the same clock as its speaker changes), in order.
 */
export async function loadPauses(db: Kysely<Database>, botId: number): Promise<PauseSpan[]> {
  const rows = await db
    .selectFrom("bot_events")
    .select(["event_type", "data"])
    .where("bot_id", "=", botId)
    .where("event_type", "in", ["RECORDING_PAUSED", "RECORDING_RESUMED"])
    .orderBy("id")
    .execute();
  const pauses: PauseSpan[] = [];
  for (const row of rows) {
    const data = parseJson<{ pausedAt?: string; resumedAt?: string }>(row.data);
    const open = pauses.at(-1);
    if (row.event_type === "RECORDING_PAUSED" && data.pausedAt && (!open || open.toMs !== null)) {
      pauses.push({ fromMs: Date.parse(data.pausedAt), toMs: null });
    } else if (row.event_type === "RECORDING_RESUMED" && data.resumedAt && open && open.toMs === null) {
      open.toMs = Date.parse(data.resumedAt);
    }
  }
  return pauses;
}
