import type { ActionItem } from "../../intelligence/types.js";
import { NotFoundError } from "../errors.js";
import { checkEngines, queueSummary } from "../jobs/content-options.js";
import type { Engines } from "../jobs/engines.js";
import { findJob } from "../jobs/queue.js";
import type { SummarizeBody, Summary, SummaryJobStatus } from "../schemas/index.js";
import type { BotService } from "./bots.js";
import { lockBot } from "./bot-state.js";
import type { ServiceContext } from "./context.js";
import { requestContentJob, statusFields } from "./content-jobs.js";

/** A bot's summary: overview, key points, action items and decisions of its transcript. */
export class SummaryService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly engines: Engines,
  ) {}

  /**
   * Queues a summary. Without a transcript it waits for one: the one being made, or else one this
   * queues with the server's default engine. 404 without a recording, 409 while one is on its way.
   */
  async request(userId: number, botId: number, body: SummarizeBody): Promise<SummaryJobStatus> {
    await this.bots.requireOwned(userId, botId);
    const engine = body?.engine ?? this.engines.config.defaultSummary;
    checkEngines(this.engines, { summary: engine }, { summary: ["body", "engine"], transcription: [] });
    await requestContentJob(this.ctx, botId, "summary", (trx) =>
      queueSummary(trx, botId, engine, this.engines, this.ctx.now()),
    );
    return this.status(userId, botId);
  }

  async status(userId: number, botId: number): Promise<SummaryJobStatus> {
    await this.bots.requireOwned(userId, botId);
    const job = await findJob(this.ctx.db, botId, "summary");
    if (!job) throw new NotFoundError("No summary was asked for this recording");
    return statusFields(job);
  }

  async get(userId: number, botId: number): Promise<Summary> {
    await this.bots.requireOwned(userId, botId);
    const summary = await this.find(botId);
    if (summary) return summary;
    const job = await findJob(this.ctx.db, botId, "summary");
    if (!job) throw new NotFoundError("No summary was asked for this recording");
    if (job.state === "failed") {
      throw new NotFoundError(`The summary failed (${job.error_code}): ${job.error_message}`);
    }
    const waiting =
      job.state === "queued" && job.next_attempt_at === null ? " (waiting for the transcript)" : "";
    throw new NotFoundError(`The summary is ${job.state}${waiting}: see /status for its progress`);
  }

  async find(botId: number): Promise<Summary | null> {
    const row = await this.ctx.db
      .selectFrom("summaries")
      .innerJoin("content_jobs", (join) =>
        join.onRef("content_jobs.bot_id", "=", "summaries.bot_id").on("content_jobs.kind", "=", "summary"),
      )
      .select([
        "summaries.engine",
        "summaries.overview",
        "summaries.key_points",
        "summaries.action_items",
        "summaries.decisions",
        "summaries.completed_at",
        "content_jobs.state",
        "content_jobs.created_at",
      ])
      .where("summaries.bot_id", "=", botId)
      .executeTakeFirst();
    if (!row) return null;
    return {
      botId,
      status: row.state as Summary["status"],
      engine: row.engine,
      createdAt: row.created_at,
      completedAt: row.completed_at,
      overview: row.overview,
      keyPoints: JSON.parse(row.key_points) as string[],
      actionItems: JSON.parse(row.action_items) as ActionItem[],
      decisions: JSON.parse(row.decisions) as string[],
    };
  }

  /** Deletes the summary and its job (a running one stops). 404 when there is neither. */
  async remove(userId: number, botId: number): Promise<void> {
    await this.bots.requireOwned(userId, botId);
    const removed = await this.ctx.db.transaction().execute(async (trx) => {
      await lockBot(trx, this.ctx.dialect, botId);
      const summary = await trx.deleteFrom("summaries").where("bot_id", "=", botId).executeTakeFirst();
      const job = await trx
        .deleteFrom("content_jobs")
        .where("bot_id", "=", botId)
        .where("kind", "=", "summary")
        .executeTakeFirst();
      return Number(summary.numDeletedRows) + Number(job.numDeletedRows) > 0;
    });
    if (!removed) throw new NotFoundError("No summary was asked for this recording");
  }
}
