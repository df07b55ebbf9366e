import type { Transaction } from "kysely";
import type { Database } from "../db/schema.js";
import { ConflictError, NotFoundError } from "../errors.js";
import type { JobKind, JobRow, JobState } from "../jobs/queue.js";
import { lockBot } from "./bot-state.js";
import type { ServiceContext } from "./context.js";

/**
 * The one way a transcript or summary is asked for: under the bot's lock, 404 without a
 * recording, `queue` puts the job in (false: one is on its way, 409), then the worker is woken.
 */
export async function requestContentJob(
  ctx: ServiceContext,
  botId: number,
  kind: JobKind,
  queue: (trx: Transaction<Database>) => Promise<boolean>,
): Promise<void> {
  const queued = await ctx.db.transaction().execute(async (trx) => {
    await lockBot(trx, ctx.dialect, botId);
    const recording = await trx
      .selectFrom("recordings")
      .select("bot_id")
      .where("bot_id", "=", botId)
      .executeTakeFirst();
    if (!recording) {
      const verb = kind === "transcript" ? "transcribe" : "summarize";
      throw new NotFoundError(`Recording not found: there is nothing to ${verb} yet`);
    }
    return queue(trx);
  });
  if (!queued) throw new ConflictError(`A ${kind} of this recording is already queued or processing`);
  ctx.jobs.notify();
}

/** The fields a transcript's and a summary's status share, from their job row. */
export function statusFields(job: JobRow) {
  return {
    botId: job.bot_id,
    status: job.state as JobState,
    engine: job.engine,
    progress: job.state === "completed" ? 1 : job.progress,
    // A queued retry shows why the last try failed; a completed job shows nothing of earlier tries.
    error:
      job.state !== "completed" && job.error_code !== null
        ? { code: job.error_code, message: job.error_message ?? "" }
        : null,
    createdAt: job.created_at,
    updatedAt: job.updated_at,
  };
}
