import { randomBytes } from "node:crypto";
import { type Kysely, sql, type Transaction } from "kysely";
import { toIso } from "../db/database.js";
import type { ContentJobRow, Database, DialectName } from "../db/schema.js";

/**
 * The content jobs (a recording's transcript and summary) and their moves, on content_jobs:
 *
 *   queued ──claim──▶ processing ──done──▶ completed
 *     ▲                   │
 *     └─retryable error ──┤ (next_attempt_at = now + the next delay)
 *                         └─final error, or no try left──▶ failed
 *
 * Like the webhook outbox, a claim is a lease that the running worker renews: a "processing" row
 * whose lease ran out (its process died) is due again, so a restart resumes it, and only the
 * holder of the current claim (claim_token) may move the row on. A summary asked for before its
 * transcript exists waits as "queued" with no next_attempt_at until the transcript completes.
 */
export const JOB_KINDS = ["transcript", "summary"] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATES = ["queued", "processing", "completed", "failed"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** Claims a job gets, counting claims whose worker died; then it is failed. */
export const MAX_JOB_ATTEMPTS = 5;
/** The wait before the 2nd, 3rd, 4th and 5th try after a retryable failure (a longer Retry-After wins). */
export const JOB_RETRY_DELAYS_MS: readonly number[] = [30_000, 120_000, 600_000, 1_800_000];

export type JobRow = ContentJobRow;
export type ClaimedJob = JobRow & { claim_token: string };

/** What a failed try leaves on the job. */
export interface JobFailure {
  code: string;
  message: string;
  /** Worth another try (a provider's 429 or 5xx, a timeout). */
  retryable: boolean;
  retryAfterMs?: number | undefined;
}

export function activeState(state: string): boolean {
  return state === "queued" || state === "processing";
}

/**
 * Puts a job for the bot's recording in the queue, replacing a completed or failed one; false
 * when one is already queued or processing (the caller answers 409). `waiting`: a summary whose
 * transcript is not there yet (released by releaseWaitingSummary). Run inside the transaction that
 * locked the bot.
 */
export async function queueJob(
  trx: Transaction<Database>,
  job: {
    botId: number;
    kind: JobKind;
    engine: string;
    language?: string | null | undefined;
    model?: string | null | undefined;
    waiting?: boolean;
  },
  now: Date,
): Promise<boolean> {
  const at = toIso(now);
  const fresh = {
    state: "queued",
    engine: job.engine,
    language: job.language ?? null,
    model: job.model ?? null,
    attempts: 0,
    next_attempt_at: job.waiting ? null : at,
    lease_until: null,
    claim_token: null,
    progress: null,
    error_code: null,
    error_message: null,
    created_at: at,
    updated_at: at,
    completed_at: null,
  };
  const existing = await trx
    .selectFrom("content_jobs")
    .select(["id", "state"])
    .where("bot_id", "=", job.botId)
    .where("kind", "=", job.kind)
    .executeTakeFirst();
  if (existing && activeState(existing.state)) return false;
  if (existing) await trx.updateTable("content_jobs").set(fresh).where("id", "=", existing.id).execute();
  else
    await trx
      .insertInto("content_jobs")
      .values({ ...fresh, bot_id: job.botId, kind: job.kind })
      .execute();
  return true;
}

/**
 * Claims up to `limit` due jobs for `leaseMs`: queued ones whose time has come and processing ones
 * whose lease ran out, oldest first. One UPDATE; on PostgreSQL the candidates are locked FOR UPDATE
 * SKIP LOCKED, so workers in several processes never claim the same job (SQLite has one writer).
 */
export async function claimDueJobs(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; leaseMs: number },
): Promise<ClaimedJob[]> {
  const now = toIso(opts.now);
  const rows = await db
    .updateTable("content_jobs")
    .set((eb) => ({
      state: "processing",
      attempts: eb("attempts", "+", 1),
      lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
      claim_token: randomBytes(12).toString("hex"),
      updated_at: now,
    }))
    .where("id", "in", (eb) =>
      eb
        .selectFrom("content_jobs as j")
        .select("j.id")
        // Checked on the row itself too: PostgreSQL re-checks it on a row another worker claimed
        // and committed since this statement's snapshot, and skips it.
        .where(
          sql<boolean>`(j.state = 'queued' and j.next_attempt_at <= ${now})
            or (j.state = 'processing' and j.lease_until <= ${now})`,
        )
        .orderBy("j.id")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returningAll()
    .execute();
  return (rows as ClaimedJob[]).sort((a, b) => a.id - b.id);
}

/**
 * Extends the claim and records progress; false when the claim is no longer this worker's (the
 * job or its recording was deleted, or the lease ran out and another worker took it): stop then.
 */
export async function renewLease(
  db: Kysely<Database>,
  job: ClaimedJob,
  opts: { now: Date; leaseMs: number; progress?: number | null },
): Promise<boolean> {
  const result = await db
    .updateTable("content_jobs")
    .set({
      lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
      updated_at: toIso(opts.now),
      ...(opts.progress !== undefined ? { progress: opts.progress } : {}),
    })
    .where("id", "=", job.id)
    .where("state", "=", "processing")
    .where("claim_token", "=", job.claim_token)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Moves a claimed job on, if the claim is still the caller's: the one guarded write every outcome
 * goes through. Run inside the transaction that stores the outcome, so both happen or neither.
 */
export async function settleClaim(
  trx: Transaction<Database>,
  job: ClaimedJob,
  set: Partial<
    Pick<
      JobRow,
      "state" | "next_attempt_at" | "progress" | "error_code" | "error_message" | "completed_at" | "attempts"
    >
  >,
  now: Date,
): Promise<boolean> {
  const result = await trx
    .updateTable("content_jobs")
    .set({ ...set, lease_until: null, claim_token: null, updated_at: toIso(now) })
    .where("id", "=", job.id)
    .where("state", "=", "processing")
    .where("claim_token", "=", job.claim_token)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** What a failure does to a job: another try later (when one is left and worth it), or failed. */
export function nextAfterFailure(
  job: Pick<JobRow, "attempts">,
  failure: JobFailure,
  now: Date,
  opts: { maxAttempts?: number; retryDelaysMs?: readonly number[] } = {},
): { state: "queued"; nextAttemptAt: string } | { state: "failed" } {
  const maxAttempts = opts.maxAttempts ?? MAX_JOB_ATTEMPTS;
  const delays = opts.retryDelaysMs ?? JOB_RETRY_DELAYS_MS;
  if (!failure.retryable || job.attempts >= maxAttempts) return { state: "failed" };
  const delay = Math.max(delays[Math.min(job.attempts, delays.length) - 1] ?? 0, failure.retryAfterMs ?? 0);
  return { state: "queued", nextAttemptAt: toIso(new Date(now.getTime() + delay)) };
}

/**
 * A worker stopping (a shutdown) hands its job back: queued and due at once, and the interrupted
 * try does not count. False when the claim was no longer its own.
 */
export async function releaseClaim(db: Kysely<Database>, job: ClaimedJob, now: Date): Promise<boolean> {
  return db
    .transaction()
    .execute((trx) =>
      settleClaim(
        trx,
        job,
        { state: "queued", next_attempt_at: toIso(now), attempts: Math.max(0, job.attempts - 1) },
        now,
      ),
    );
}

/** A summary that waited for its bot's transcript may run now. */
export async function releaseWaitingSummary(
  trx: Transaction<Database>,
  botId: number,
  now: Date,
): Promise<void> {
  await trx
    .updateTable("content_jobs")
    .set({ next_attempt_at: toIso(now), updated_at: toIso(now) })
    .where("bot_id", "=", botId)
    .where("kind", "=", "summary")
    .where("state", "=", "queued")
    .where("next_attempt_at", "is", null)
    .execute();
}

/** The job row of a bot's transcript or summary, if any. */
export function findJob(db: Kysely<Database>, botId: number, kind: JobKind): Promise<JobRow | undefined> {
  return db
    .selectFrom("content_jobs")
    .selectAll()
    .where("bot_id", "=", botId)
    .where("kind", "=", kind)
    .executeTakeFirst();
}
