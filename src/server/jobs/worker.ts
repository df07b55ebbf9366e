import type { FastifyBaseLogger } from "fastify";
import type { Kysely, Transaction } from "kysely";
import { EngineError } from "../../intelligence/types.js";
import { toIso } from "../db/database.js";
import type { Database, DialectName } from "../db/schema.js";
import type { WakeSignal } from "../wake-signal.js";
import { holdLease, PollingWorker, WorkerStopping } from "../durable/polling-worker.js";
import {
  type ClaimedJob,
  claimDueJobs,
  type JobFailure,
  type JobKind,
  MAX_JOB_ATTEMPTS,
  nextAfterFailure,
  releaseClaim,
  renewLease,
  settleClaim,
} from "./queue.js";

/** What a running job may do besides its work: notice it should stop, and say how far it got. */
export interface JobControl {
  /** Aborted when the job must stop: its claim was lost (deleted, taken over) or the worker stops. */
  signal: AbortSignal;
  /** 0..1; written to the job at most every PROGRESS_WRITE_MS. */
  progress(fraction: number): void;
}

/** Stores a finished job's result inside the transaction that completes it; returns the webhook deliveries it queued. */
export type StoreResult = (trx: Transaction<Database>, now: Date) => Promise<number>;

/** One kind of job: how to do it, and what a final failure adds (its webhook, a waiting summary failed). */
export interface JobHandler {
  run(job: ClaimedJob, control: JobControl): Promise<StoreResult>;
  /** In the transaction that fails the job for good; returns the webhook deliveries it queued. */
  failed(trx: Transaction<Database>, job: ClaimedJob, failure: JobFailure, now: Date): Promise<number>;
}

export interface JobWorkerDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  now(): Date;
  log: Pick<FastifyBaseLogger, "error" | "warn" | "info">;
  handlers: Record<JobKind, JobHandler>;
  /** Jobs run at once in this process. */
  concurrency: number;
  pollIntervalMs: number;
  /** How long a claim holds without renewal; renewed every third of it while the job runs. */
  leaseMs: number;
  /** Wakes the worker when this process has committed new jobs. */
  signal?: WakeSignal;
  /** Wakes the webhook worker after a job queued deliveries. */
  outbox?: WakeSignal;
  retryDelaysMs?: readonly number[];
  maxAttempts?: number;
  /** stop() waits this long for jobs to hand their claims back; default 5000 ms. */
  stopGraceMs?: number;
}

/** A claim lasts 2 minutes unrenewed: a dead process's job is resumed that soon after. */
export const JOB_LEASE_MS = 120_000;
const PROGRESS_WRITE_MS = 2_000;

class ClaimLost extends Error {
  constructor() {
    super("the job's claim was lost (deleted, or taken over after its lease ran out)");
  }
}

/**
 * Runs the content jobs (src/server/jobs/queue.ts) on the polling worker: woken when this process
 * queues one, polling for the rest (retries coming due, other processes' jobs, jobs whose worker
 * died). Each running job renews its lease and writes its progress; a lost claim aborts it. Any
 * number of processes may run a worker on one database. Tests call `runDue()` on a worker that
 * was not started.
 */
export class JobWorker {
  private readonly worker: PollingWorker<ClaimedJob>;

  constructor(private readonly deps: JobWorkerDeps) {
    this.worker = new PollingWorker({
      name: "job worker",
      log: deps.log,
      claim: (limit) =>
        claimDueJobs(deps.db, deps.dialect, { now: deps.now(), limit, leaseMs: deps.leaseMs }),
      run: (job, signal) => this.execute(job, signal),
      concurrency: deps.concurrency,
      pollIntervalMs: deps.pollIntervalMs,
      signal: deps.signal,
      stopGraceMs: deps.stopGraceMs,
    });
  }

  start(): void {
    this.worker.start();
  }

  /**
   * Stops claiming and aborts the running jobs, which hand their claims back (queued, due at once,
   * the interrupted try not counted), so the next worker starts them again at once. A job that does
   * not stop within the grace period keeps its claim until the lease runs out.
   */
  stop(): Promise<void> {
    return this.worker.stop();
  }

  wake(): void {
    this.worker.wake();
  }

  /** Runs every job due by the injected clock, until none is; returns how many ran. For tests and tools. */
  runDue(): Promise<number> {
    return this.worker.runDue();
  }

  /** Runs one claimed job to its outcome; never rejects (failures are the job's, logged). */
  private async execute(job: ClaimedJob, stopping: AbortSignal): Promise<void> {
    const { db, log } = this.deps;
    const controller = new AbortController();
    stopping.addEventListener("abort", () => controller.abort(stopping.reason), { once: true });
    const maxAttempts = this.deps.maxAttempts ?? MAX_JOB_ATTEMPTS;
    const handler = this.deps.handlers[job.kind as JobKind];
    if (job.attempts > maxAttempts) {
      // Claimed again after its worker died mid-try, once too often (a job that kills its process).
      await this.fail(job, handler, {
        code: "interrupted",
        message: `the job was interrupted ${maxAttempts} times before it could finish`,
        retryable: false,
      });
      return;
    }
    const lease = this.holdLease(job, controller);
    try {
      const store = await handler.run(job, { signal: controller.signal, progress: lease.progress });
      lease.stop();
      await lease.idle;
      const queued = await db.transaction().execute(async (trx) => {
        const now = this.deps.now();
        const mine = await settleClaim(
          trx,
          job,
          {
            state: "completed",
            progress: 1,
            error_code: null,
            error_message: null,
            completed_at: toIso(now),
          },
          now,
        );
        return mine ? store(trx, now) : 0;
      });
      if (queued > 0) this.deps.outbox?.notify();
    } catch (err) {
      lease.stop();
      await lease.idle;
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : null;
      if (reason instanceof ClaimLost) {
        log.info({ jobId: job.id, botId: job.bot_id, kind: job.kind }, "job stopped: its claim was lost");
      } else if (reason instanceof WorkerStopping) {
        await releaseClaim(db, job, this.deps.now()).catch((releaseErr: unknown) =>
          log.warn(
            { err: releaseErr, jobId: job.id },
            "job worker: could not hand a job back (its lease will run out)",
          ),
        );
      } else {
        await this.fail(job, handler, failureOf(err));
      }
    }
  }

  /** A failed try: queued again after the next delay, or failed for good with the handler's extras. */
  private async fail(job: ClaimedJob, handler: JobHandler, failure: JobFailure): Promise<void> {
    const { db, log } = this.deps;
    try {
      const queued = await db.transaction().execute(async (trx) => {
        const now = this.deps.now();
        const next = nextAfterFailure(job, failure, now, {
          maxAttempts: this.deps.maxAttempts ?? MAX_JOB_ATTEMPTS,
          ...(this.deps.retryDelaysMs ? { retryDelaysMs: this.deps.retryDelaysMs } : {}),
        });
        const error = { error_code: failure.code, error_message: failure.message };
        if (next.state === "queued") {
          await settleClaim(
            trx,
            job,
            { state: "queued", next_attempt_at: next.nextAttemptAt, ...error },
            now,
          );
          return 0;
        }
        const mine = await settleClaim(
          trx,
          job,
          { state: "failed", completed_at: toIso(now), ...error },
          now,
        );
        return mine ? handler.failed(trx, job, failure, now) : 0;
      });
      if (queued > 0) this.deps.outbox?.notify();
      log.warn(
        { jobId: job.id, botId: job.bot_id, kind: job.kind, attempt: job.attempts, ...failure },
        "job try failed",
      );
    } catch (err) {
      log.error({ err, jobId: job.id }, "job worker: could not record a failure (the lease will run out)");
    }
  }

  /**
   * Renews the job's lease every third of it, writing the latest progress (and progress alone at
   * most every PROGRESS_WRITE_MS); a renewal that finds the claim gone aborts the job.
   */
  private holdLease(job: ClaimedJob, controller: AbortController) {
    let latest: number | null = null;
    let lastWrite = 0;
    const lease = holdLease({
      leaseMs: this.deps.leaseMs,
      renew: () => {
        lastWrite = Date.now();
        return renewLease(this.deps.db, job, {
          now: this.deps.now(),
          leaseMs: this.deps.leaseMs,
          progress: latest,
        });
      },
      lost: () => controller.abort(new ClaimLost()),
      failed: (err) => this.deps.log.warn({ err, jobId: job.id }, "job worker: renewing a lease failed"),
    });
    return {
      progress: (fraction: number) => {
        latest = Math.min(1, Math.max(0, fraction));
        if (Date.now() - lastWrite < PROGRESS_WRITE_MS) return;
        lastWrite = Date.now();
        lease.renewNow();
      },
      stop: lease.stop,
      get idle() {
        return lease.idle;
      },
    };
  }
}

/** Engines fail with EngineError; anything else is a fault of ours, tried again like a provider's 5xx. */
function failureOf(err: unknown): JobFailure {
  if (err instanceof EngineError) {
    return { code: err.code, message: err.message, retryable: err.retryable, retryAfterMs: err.retryAfterMs };
  }
  return {
    code: "internal_error",
    message: err instanceof Error ? err.message : String(err),
    retryable: true,
  };
}
