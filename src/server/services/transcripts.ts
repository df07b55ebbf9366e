import type { Utterance } from "../../intelligence/types.js";
import { NotFoundError } from "../errors.js";
import { checkEngines } from "../jobs/content-options.js";
import type { Engines } from "../jobs/engines.js";
import { findJob, queueJob } from "../jobs/queue.js";
import type { Transcript, TranscribeBody, TranscriptJobStatus } from "../schemas/index.js";
import type { BotService } from "./bots.js";
import { lockBot } from "./bot-state.js";
import type { ServiceContext } from "./context.js";
import { requestContentJob, statusFields } from "./content-jobs.js";

/** A bot's transcript: asked for, followed, read, deleted. The job worker makes it. */
export class TranscriptService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly engines: Engines,
  ) {}

  /** Queues a transcript of the bot's recording: 404 without one, 409 while one is on its way. */
  async request(userId: number, botId: number, body: TranscribeBody): Promise<TranscriptJobStatus> {
    await this.bots.requireOwned(userId, botId);
    const engine = body?.engine ?? this.engines.config.defaultTranscription;
    checkEngines(this.engines, { transcription: engine }, { transcription: ["body", "engine"], summary: [] });
    await requestContentJob(this.ctx, botId, "transcript", (trx) =>
      queueJob(
        trx,
        { botId, kind: "transcript", engine, language: body?.language, model: body?.model },
        this.ctx.now(),
      ),
    );
    return this.status(userId, botId);
  }

  async status(userId: number, botId: number): Promise<TranscriptJobStatus> {
    await this.bots.requireOwned(userId, botId);
    const job = await findJob(this.ctx.db, botId, "transcript");
    if (!job) throw new NotFoundError("No transcript was asked for this recording");
    return { ...statusFields(job), language: job.language };
  }

  /**
   * The stored transcript (while a new one is being made, the previous one, with the new one's
   * status). 404 saying why when there is none yet.
   */
  async get(userId: number, botId: number): Promise<Transcript> {
    await this.bots.requireOwned(userId, botId);
    const transcript = await this.find(botId);
    if (transcript) return transcript;
    const job = await findJob(this.ctx.db, botId, "transcript");
    if (!job) throw new NotFoundError("No transcript was asked for this recording");
    if (job.state === "failed") {
      throw new NotFoundError(`The transcript failed (${job.error_code}): ${job.error_message}`);
    }
    throw new NotFoundError(`The transcript is ${job.state}: see /status for its progress`);
  }

  /** The completed transcript of a bot, whoever asks (the share page has checked its token). */
  async find(botId: number): Promise<Transcript | null> {
    const row = await this.ctx.db
      .selectFrom("transcripts")
      .innerJoin("content_jobs", (join) =>
        join
          .onRef("content_jobs.bot_id", "=", "transcripts.bot_id")
          .on("content_jobs.kind", "=", "transcript"),
      )
      .select([
        "transcripts.engine",
        "transcripts.language",
        "transcripts.duration_ms",
        "transcripts.text",
        "transcripts.utterances",
        "transcripts.completed_at",
        "content_jobs.state",
        "content_jobs.created_at",
      ])
      .where("transcripts.bot_id", "=", botId)
      .executeTakeFirst();
    if (!row) return null;
    return {
      botId,
      status: row.state as Transcript["status"],
      engine: row.engine,
      language: row.language,
      durationMs: row.duration_ms,
      createdAt: row.created_at,
      completedAt: row.completed_at,
      text: row.text,
      utterances: JSON.parse(row.utterances) as Utterance[],
    };
  }

  /**
   * Deletes the transcript and its job (a running one stops: its claim is gone), and a summary
   * still waiting for it. A summary already made stays. 404 when there is neither.
   */
  async remove(userId: number, botId: number): Promise<void> {
    await this.bots.requireOwned(userId, botId);
    const removed = await this.ctx.db.transaction().execute(async (trx) => {
      await lockBot(trx, this.ctx.dialect, botId);
      const transcript = await trx.deleteFrom("transcripts").where("bot_id", "=", botId).executeTakeFirst();
      const job = await trx
        .deleteFrom("content_jobs")
        .where("bot_id", "=", botId)
        .where("kind", "=", "transcript")
        .executeTakeFirst();
      await trx
        .deleteFrom("content_jobs")
        .where("bot_id", "=", botId)
        .where("kind", "=", "summary")
        .where("state", "=", "queued")
        .where("next_attempt_at", "is", null)
        .execute();
      return Number(transcript.numDeletedRows) + Number(job.numDeletedRows) > 0;
    });
    if (!removed) throw new NotFoundError("No transcript was asked for this recording");
  }
}
