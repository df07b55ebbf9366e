import type { JobRow, JobState } from "../jobs/queue.js";

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
