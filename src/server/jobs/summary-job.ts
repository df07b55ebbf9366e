import { contentFailedWebhookEvent, summaryReadyWebhookEvent } from "../../core/index.js";
import { EngineError, type SummaryEngineName, type Utterance } from "../../intelligence/types.js";
import { toIso } from "../db/database.js";
import type { ClaimedJob } from "./queue.js";
import { type ContentJobDeps, queueForBot } from "./transcript-job.js";
import type { JobControl, JobHandler, StoreResult } from "./worker.js";

/** A summary of the bot's stored transcript (the job runs only once there is one). */
export function summaryJobHandler(deps: Pick<ContentJobDeps, "db" | "engines" | "notesEvents">): JobHandler {
  return {
    async run(job: ClaimedJob, control: JobControl): Promise<StoreResult> {
      const source = await deps.db
        .selectFrom("transcripts")
        .innerJoin("bots", "bots.id", "transcripts.bot_id")
        .select(["transcripts.utterances", "bots.meeting_title"])
        .where("transcripts.bot_id", "=", job.bot_id)
        .executeTakeFirst();
      if (!source) {
        throw new EngineError(
          "transcript_missing",
          "the transcript was deleted before it could be summarized",
          false,
        );
      }
      const summarizer = deps.engines.summarizer(job.engine as SummaryEngineName);
      control.progress(0);
      const summary = await summarizer.summarize({
        utterances: JSON.parse(source.utterances) as Utterance[],
        meetingTitle: source.meeting_title,
        signal: control.signal,
      });
      return async (trx, now) => {
        const row = {
          engine: job.engine,
          overview: summary.overview,
          key_points: JSON.stringify(summary.keyPoints),
          action_items: JSON.stringify(summary.actionItems),
          decisions: JSON.stringify(summary.decisions),
          completed_at: toIso(now),
        };
        await trx
          .insertInto("summaries")
          .values({ bot_id: job.bot_id, ...row })
          .onConflict((oc) => oc.column("bot_id").doUpdateSet(row))
          .execute();
        const ready = summaryReadyWebhookEvent({
          engine: job.engine,
          overview: summary.overview,
          actionItems: summary.actionItems,
          decisions: summary.decisions,
        });
        const notes = await deps.notesEvents.actionItemsDetected(trx, job.bot_id, summary.actionItems, now);
        return notes + (await queueForBot(trx, job.bot_id, [ready], now));
      };
    },

    failed(trx, job, failure, now) {
      return queueForBot(trx, job.bot_id, [contentFailedWebhookEvent("summary", failure)], now);
    },
  };
}
