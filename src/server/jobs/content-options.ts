import type { Transaction } from "kysely";
import { z } from "zod";
import { SUMMARY_ENGINES, TRANSCRIPTION_ENGINES } from "../../intelligence/types.js";
import type { Database } from "../db/schema.js";
import { ValidationError } from "../errors.js";
import { toIso } from "../db/database.js";
import type { Engines } from "./engines.js";
import { activeState, findJob, queueJob } from "./queue.js";

export const TranscriptionEngine = z.enum(TRANSCRIPTION_ENGINES);
export const SummaryEngine = z.enum(SUMMARY_ENGINES);
/** A BCP 47 tag or an engine's own code ("en", "en-US", "de"); the engine checks what it supports. */
export const Language = z
  .string()
  .regex(/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/, "a language code such as en or en-US");

/** `transcription` of POST /v1/bots: transcribe the recording once it is stored. */
export const TranscriptionOptions = z.strictObject({
  engine: TranscriptionEngine.optional().describe("default: the server's MEETBOT_TRANSCRIPTION_ENGINE"),
  language: Language.optional().describe("default: the engine's (pocketsphinx: en)"),
});
/** `summary` of POST /v1/bots: summarize the transcript once it is made (implies a transcript). */
export const SummaryOptions = z.strictObject({
  engine: SummaryEngine.optional().describe("default: the server's MEETBOT_SUMMARY_ENGINE"),
});

export interface ContentOptions {
  transcription?: z.infer<typeof TranscriptionOptions> | undefined;
  summary?: z.infer<typeof SummaryOptions> | undefined;
}

/** 422 when a named engine is not configured on this server; `loc` points at the field. */
export function checkEngines(
  engines: Engines,
  choice: { transcription?: string | undefined; summary?: string | undefined },
  loc: { transcription: (string | number)[]; summary: (string | number)[] },
): void {
  const issues = [];
  const transcription = choice.transcription as z.infer<typeof TranscriptionEngine> | undefined;
  const summary = choice.summary as z.infer<typeof SummaryEngine> | undefined;
  const whyT = transcription ? engines.transcriptionUnavailable(transcription) : null;
  if (whyT) issues.push({ loc: loc.transcription, msg: whyT, type: "value_error" });
  const whyS = summary ? engines.summaryUnavailable(summary) : null;
  if (whyS) issues.push({ loc: loc.summary, msg: whyS, type: "value_error" });
  if (issues.length > 0) throw new ValidationError(issues);
}

/**
 * Queues what a bot's create options ask for, once its recording is stored: the transcript, and
 * the summary waiting for it. Returns true when a job was queued. Inside the upload's transaction.
 */
export async function queueRequestedContent(
  trx: Transaction<Database>,
  botId: number,
  options: ContentOptions,
  engines: Engines,
  now: Date,
  live: { runnerDone: boolean } | null,
): Promise<boolean> {
  if (!options.transcription && !options.summary && !live) return false;
  // A bot with a live transcript has its transcript already: it is stored once its runner is
  // done sending it (startLiveTranscript), so the job waits until then; at once when the runner
  // is done already (a late upload, a lost runner's segments salvaged).
  await queueJob(
    trx,
    live
      ? { botId, kind: "transcript", engine: "live", waiting: !live.runnerDone }
      : {
          botId,
          kind: "transcript",
          engine: options.transcription?.engine ?? engines.config.defaultTranscription,
          language: options.transcription?.language,
        },
    now,
  );
  if (options.summary) {
    await queueJob(
      trx,
      {
        botId,
        kind: "summary",
        engine: options.summary.engine ?? engines.config.defaultSummary,
        waiting: true,
      },
      now,
    );
  }
  return true;
}

/**
 * Queues a summary: due now when the transcript is there, else waiting for the transcript being
 * made, else waiting for a transcript queued here with the server's default engine. False when a
 * summary is already queued or processing.
 */
export async function queueSummary(
  trx: Transaction<Database>,
  botId: number,
  engine: string,
  engines: Engines,
  now: Date,
): Promise<boolean> {
  const transcript = await trx
    .selectFrom("transcripts")
    .select("bot_id")
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  const transcriptJob = await findJob(trx, botId, "transcript");
  const transcriptComing = transcriptJob !== undefined && activeState(transcriptJob.state);
  const queued = await queueJob(
    trx,
    { botId, kind: "summary", engine, waiting: transcriptComing || !transcript },
    now,
  );
  if (queued && !transcript && !transcriptComing) {
    await queueJob(trx, { botId, kind: "transcript", engine: engines.config.defaultTranscription }, now);
  }
  return queued;
}

/**
 * The runner of a bot with a live transcript is done (its last report): every settled utterance
 * is in, so its transcript job may run: the one waiting since the upload, or a new one when the
 * bot ended without a recording. A transcript asked for by hand since is left as it is. Answers
 * whether a job became due.
 */
export async function startLiveTranscript(
  trx: Transaction<Database>,
  botId: number,
  now: Date,
): Promise<boolean> {
  const job = await findJob(trx, botId, "transcript");
  if (job) {
    if (job.engine !== "live" || job.state !== "queued" || job.next_attempt_at !== null) return false;
    await trx
      .updateTable("content_jobs")
      .set({ next_attempt_at: toIso(now), updated_at: toIso(now) })
      .where("id", "=", job.id)
      .execute();
    return true;
  }
  // A transcript belongs to its recording: a bot that delivered none keeps its finals in its live
  // stream only. (A failing runner delivers what it recorded before its last report.)
  const recording = await trx
    .selectFrom("recordings")
    .select("bot_id")
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  const said = await trx
    .selectFrom("live_utterances")
    .select("bot_id")
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  if (!recording || !said) return false;
  return queueJob(trx, { botId, kind: "transcript", engine: "live" }, now);
}
