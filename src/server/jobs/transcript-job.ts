import type { Kysely, Transaction } from "kysely";
import { contentFailedWebhookEvent, transcriptReadyWebhookEvent } from "../../core/index.js";
import { attributeSpeakers } from "../../intelligence/index.js";
import type { AssemblyAiTranscribeRequest } from "../../intelligence/providers.js";
import { EngineError, type TranscriptionEngineName, type Utterance } from "../../intelligence/types.js";
import { toIso } from "../db/database.js";
import type { Database } from "../db/schema.js";
import { API_PREFIX } from "../http/openapi.js";
import type { MeetingEvents } from "../meeting-events.js";
import { loadSpeakerTimeline } from "../services/speaker-timeline.js";
import type { RecordingStore } from "../storage/recordings.js";
import { enqueueWebhookEvents } from "../webhooks/outbox.js";
import type { AssemblyAiWebhooks } from "./assemblyai-webhooks.js";
import type { Engines } from "./engines.js";
import { type ClaimedJob, releaseWaitingSummary } from "./queue.js";
import type { JobControl, JobHandler, StoreResult } from "./worker.js";

export interface ContentJobDeps {
  db: Kysely<Database>;
  store: RecordingStore;
  engines: Engines;
  assemblyAiWebhooks: AssemblyAiWebhooks;
  notesEvents: MeetingEvents;
}

/**
 * A transcript: the recording through the job's engine (audio extracted once, to a 16 kHz mono
 * WAV on disk, by the engine), then each word given its speaker from the recording's speaker
 * timeline (intelligence/attribution.ts); or, for the engine `live`, the bot's live transcript as
 * it settled during the call. Completing it releases a summary that waited for it.
 */
export function transcriptJobHandler(deps: ContentJobDeps): JobHandler {
  /** What stores a made transcript, in the worker's transaction: the row, its webhooks, a waiting summary. */
  const storeTranscript =
    (job: ClaimedJob, made: MadeTranscript): StoreResult =>
    async (trx, now) => {
      const { utterances } = made;
      const row = {
        engine: job.engine,
        language: made.language,
        duration_ms: Math.round(made.durationMs),
        text: made.text,
        utterances: JSON.stringify(utterances),
        completed_at: toIso(now),
      };
      await trx
        .insertInto("transcripts")
        .values({ bot_id: job.bot_id, ...row })
        .onConflict((oc) => oc.column("bot_id").doUpdateSet(row))
        .execute();
      await releaseWaitingSummary(trx, job.bot_id, now);
      const ready = transcriptReadyWebhookEvent({
        engine: job.engine,
        language: row.language,
        durationMs: row.duration_ms,
        utterances: utterances.length,
      });
      const notes = await deps.notesEvents.transcriptReady(trx, job.bot_id, utterances.length, now);
      return notes + (await queueForBot(trx, job.bot_id, [ready], now));
    };

  return {
    async run(job: ClaimedJob, control: JobControl): Promise<StoreResult> {
      if (job.engine === "live") return storeTranscript(job, await liveRecognition(deps.db, job.bot_id));
      const recording = await deps.db
        .selectFrom("recordings")
        .select("duration_ms")
        .where("bot_id", "=", job.bot_id)
        .executeTakeFirst();
      if (!recording) throw new EngineError("recording_missing", "the recording is gone", false);
      const transcriber = deps.engines.transcriber(job.engine as TranscriptionEngineName);
      const request: AssemblyAiTranscribeRequest = {
        mediaPath: "",
        signal: control.signal,
        onProgress: control.progress,
        ...(job.language ? { language: job.language } : {}),
        ...(job.model ? { model: job.model } : {}),
        ...(job.engine === "assemblyai" ? { webhook: deps.assemblyAiWebhooks.open(job.id, API_PREFIX) } : {}),
      };
      const recognition = await deps.store
        .withLocalFile(job.bot_id, (mediaPath) => transcriber.transcribe({ ...request, mediaPath }))
        .finally(() => deps.assemblyAiWebhooks.close(job.id));
      const timeline = await loadSpeakerTimeline(deps.db, job.bot_id, recording.duration_ms);
      const utterances = attributeSpeakers(recognition.words, timeline);
      const text = recognition.text.trim() || utterances.map((u) => u.text).join(" ");
      return storeTranscript(job, {
        language: recognition.language,
        durationMs: recognition.durationMs,
        text,
        utterances,
      });
    },
    /** transcript.failed; a summary waiting for this transcript fails with it. */
    async failed(trx, job, failure, now) {
      const events = [contentFailedWebhookEvent("transcript", failure)];
      const summary = await trx
        .updateTable("content_jobs")
        .set({
          state: "failed",
          error_code: "transcript_failed",
          error_message: `the transcript failed: ${failure.message}`,
          updated_at: toIso(now),
          completed_at: toIso(now),
        })
        .where("bot_id", "=", job.bot_id)
        .where("kind", "=", "summary")
        .where("state", "=", "queued")
        .where("next_attempt_at", "is", null)
        .executeTakeFirst();
      if (Number(summary.numUpdatedRows) > 0) {
        events.push(
          contentFailedWebhookEvent("summary", {
            code: "transcript_failed",
            message: `the transcript failed: ${failure.message}`,
          }),
        );
      }
      return queueForBot(trx, job.bot_id, events, now);
    },
  };
}

/** Queues webhook deliveries of a content event for the bot's owner (and its callbackUrl). */
export async function queueForBot(
  trx: Transaction<Database>,
  botId: number,
  events: Parameters<typeof enqueueWebhookEvents>[2],
  now: Date,
): Promise<number> {
  const bot = await trx
    .selectFrom("bots")
    .select(["id", "user_id", "callback_url"])
    .where("id", "=", botId)
    .executeTakeFirst();
  if (!bot) return 0;
  return enqueueWebhookEvents(trx, bot, events, toIso(now), toIso(now));
}

interface MadeTranscript {
  language: string;
  durationMs: number;
  text: string;
  utterances: Utterance[];
}

/**
 * The bot's live transcript as its transcript: every settled utterance (transcript.final), in
 * the order they started, with the speaker the platform (or the speaker timeline) named. No word
 * times: captions have none, so each utterance is one "word" spanning it.
 */
async function liveRecognition(db: Kysely<Database>, botId: number): Promise<MadeTranscript> {
  const bot = await db
    .selectFrom("bots")
    .select("live_transcript")
    .where("id", "=", botId)
    .executeTakeFirst();
  if (!bot?.live_transcript) {
    throw new EngineError(
      "no_live_transcript",
      "the bot was created without liveTranscript, so it has no live transcript to store",
      false,
    );
  }
  const rows = await db
    .selectFrom("live_utterances")
    .selectAll()
    .where("bot_id", "=", botId)
    .orderBy("start_ms")
    .orderBy("utterance_id")
    .execute();
  const utterances: Utterance[] = rows
    .filter((row) => row.text.trim() !== "")
    .map((row) => ({
      speaker:
        row.speaker_id === null ? null : { participantId: row.speaker_id, name: row.speaker_name ?? "" },
      startMs: row.start_ms,
      endMs: row.end_ms,
      text: row.text.trim(),
      confidence: null,
      words: [{ text: row.text.trim(), startMs: row.start_ms, endMs: row.end_ms, confidence: null }],
    }));
  const recording = await db
    .selectFrom("recordings")
    .select("duration_ms")
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  return {
    language: rows.find((row) => row.language)?.language ?? "en",
    durationMs: recording?.duration_ms ?? Math.max(0, ...rows.map((row) => row.end_ms)),
    text: utterances.map((u) => u.text).join(" "),
    utterances,
  };
}
