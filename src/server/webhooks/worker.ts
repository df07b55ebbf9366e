import type { FastifyBaseLogger } from "fastify";
import type { Kysely } from "kysely";
import type { Database, DialectName } from "../db/schema.js";
import { Deliverer } from "./deliver.js";
import type { OutboundClient } from "./outbound.js";
import type { WakeSignal } from "../wake-signal.js";
import { PollingWorker } from "../durable/polling-worker.js";
import { TEST_EVENT } from "./events.js";
import { type ClaimedDelivery, claimDueDeliveries, pruneFinishedDeliveries } from "./queue.js";

/** Deliveries one lane sends to its endpoint before giving its slot back. */
const LANE_LENGTH = 20;

export interface WebhookWorkerDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  now(): Date;
  log: Pick<FastifyBaseLogger, "error" | "warn">;
  outbound: OutboundClient;
  /** Deliveries in flight at once, each to a different endpoint. */
  concurrency: number;
  /** How often to look for due deliveries when nothing woke the worker (retries, other processes). */
  pollIntervalMs: number;
  /** How long a claim holds; longer than the slowest possible attempt. */
  leaseMs: number;
  /** Wakes the worker when this process has committed new deliveries. */
  signal?: WakeSignal;
  /** stop() waits this long for attempts in flight; default 5000 ms. */
  stopGraceMs?: number;
  retryDelaysMs?: readonly number[];
  /** Finished deliveries older than this are deleted (at most once an hour); default 30 days. */
  retentionMs?: number;
}

const PRUNE_EVERY_MS = 60 * 60 * 1000;
const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Sends what the outbox holds, on the polling worker. Started by the app (`start`): it is woken at
 * once when this process commits deliveries, and polls for the rest (retries coming due, rows written by other
 * processes, leases of a worker that died). Up to `concurrency` attempts run at once, at most one
 * per endpoint, so a slow or hanging receiver holds one slot, never the others' deliveries.
 * Any number of processes may run a worker on the same database (see claimDueDeliveries).
 *
 * Tests do not start it: they call `runDue()`, which sends everything due by the injected clock
 * and returns when it is done.
 */
export class WebhookWorker {
  private readonly deliverer: Deliverer;
  private readonly worker: PollingWorker<ClaimedDelivery>;
  /** Set when stop() gives up on attempts still in flight: their results are not recorded. */
  private abandoned = false;
  private lastPruneMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: WebhookWorkerDeps) {
    this.deliverer = new Deliverer({
      db: deps.db,
      now: deps.now,
      outbound: deps.outbound,
      ...(deps.retryDelaysMs ? { retryDelaysMs: deps.retryDelaysMs } : {}),
    });
    // One run is a lane: an endpoint's deliveries one after another, so a slow or hanging
    // receiver holds one slot, never the others' deliveries.
    this.worker = new PollingWorker({
      name: "webhook worker",
      log: deps.log,
      claim: (limit) => this.claim(limit),
      run: (first, stopping) =>
        this.lane(first, stopping).catch((err: unknown) => {
          if (this.abandoned) return;
          // The claim runs out and the delivery is sent again later.
          this.deps.log.error(
            { err, endpoint: first.endpoint_key },
            "webhook worker: a delivery lane failed",
          );
        }),
      concurrency: deps.concurrency,
      pollIntervalMs: deps.pollIntervalMs,
      signal: deps.signal,
      stopGraceMs: deps.stopGraceMs,
      onTick: () => this.pruneHourly(),
    });
  }

  start(): void {
    this.worker.start();
  }

  /**
   * Stops claiming, waits up to the grace period for attempts in flight, then abandons the rest
   * without recording them: their leases run out and a worker (this one after a restart, or
   * another process's) sends them again. Closes the outbound client.
   */
  async stop(): Promise<void> {
    await this.worker.stop();
    this.abandoned = true;
    await this.deps.outbound.close();
  }

  /** Looks for due deliveries now (coalesced: one claim at a time, another right after if asked). */
  wake(): void {
    this.worker.wake();
  }

  /**
   * Sends every delivery that is due by the injected clock, endpoint by endpoint in order, until
   * none is; returns the number of attempts made. For tests and tools, on a worker not started.
   */
  runDue(): Promise<number> {
    return this.worker.runDue((delivery) =>
      this.deliverer.attempt(delivery, { retry: delivery.event !== TEST_EVENT }),
    );
  }

  /**
   * Deletes finished deliveries past the retention period (see pruneFinishedDeliveries); returns
   * how many. Run by the started worker at most once an hour; callable by tests and tools.
   */
  prune(): Promise<number> {
    const before = new Date(this.deps.now().getTime() - (this.deps.retentionMs ?? DEFAULT_RETENTION_MS));
    return pruneFinishedDeliveries(this.deps.db, before);
  }

  private pruneHourly(): void {
    const now = this.deps.now().getTime();
    if (now - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = now;
    this.prune().catch((err: unknown) =>
      this.deps.log.error({ err }, "webhook worker: pruning deliveries failed"),
    );
  }

  private claim(limit: number, endpointKey?: string): Promise<ClaimedDelivery[]> {
    return claimDueDeliveries(this.deps.db, this.deps.dialect, {
      now: this.deps.now(),
      limit,
      leaseMs: this.deps.leaseMs,
      ...(endpointKey !== undefined ? { endpointKey } : {}),
    });
  }

  /**
   * Sends `first`, then the same endpoint's next due delivery (claimed by an index lookup rather
   * than the general claim, which reads every due row), and so on, up to LANE_LENGTH deliveries;
   * then the slot goes back to the general claim, so that every endpoint gets its turn.
   */
  private async lane(first: ClaimedDelivery, stopping: AbortSignal): Promise<void> {
    let delivery: ClaimedDelivery | undefined = first;
    for (let sent = 1; delivery; sent++) {
      await this.deliverer.attempt(delivery, {
        retry: delivery.event !== TEST_EVENT,
        abandoned: () => this.abandoned,
      });
      if (stopping.aborted || sent >= LANE_LENGTH) return;
      [delivery] = await this.claim(1, delivery.endpoint_key);
    }
  }
}
