import type { Kysely } from "kysely";
import { type SpeakerSegment, speakerTimeline } from "../../core/index.js";
import type { Database } from "../db/schema.js";

/**
 * Who spoke when in a bot's recording, on the recording's clock: the runner's speaker changes from
 * its recording.started on, cut to `durationMs`. Empty before the recording started.
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
    { startedAt: bot.recording_started_at, durationMs },
  );
}
