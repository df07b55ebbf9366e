import type { FastifyBaseLogger } from "fastify";
import type { Kysely } from "kysely";
import type { Database, DialectName } from "../db/schema.js";
import { Deliverer } from "./deliver.js";
import type { OutboundClient } from "./outbound.js";
import type { WakeSignal } from "../wake-signal.js";
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
 * Sends what the outbox holds. Started by the app (`start`): it is woken at once when this
 * process commits deliveries, and polls for the rest (retries coming due, rows written by other
 * processes, leases of a worker that died). Up to `concurrency` attempts run at once, at most one
 * per endpoint, so a slow or hanging receiver holds one slot, never the others' deliveries.
 * Any number of processes may run a worker on the same database (see claimDueDeliveries).
 *
 * Tests do not start it: they call `runDue()`, which sends everything due by the injected clock
 * and returns when it is done.
 */
export class WebhookWorker {
  private readonly deliverer: Deliverer;
  /** One lane per endpoint being sent to: its deliveries one after another. */
  private readonly lanes = new Set<Promise<void>>();
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private running = false;
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
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.deps.signal?.subscribe(() => this.wake()) ?? null;
    this.timer = setInterval(() => {
      this.wake();
      this.pruneHourly();
    }, this.deps.pollIntervalMs);
    this.timer.unref();
    this.wake(); // whatever a previous run left queued
  }

  /**
   * Stops claiming, waits up to the grace period for attempts in flight, then abandons the rest
   * without recording them: their leases run out and a worker (this one after a restart, or
   * another process's) sends them again. Closes the outbound client.
   */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
    await this.pumping;
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.deps.stopGraceMs ?? 5000).unref());
    await Promise.race([Promise.allSettled(this.lanes), grace]);
    this.abandoned = true;
    await this.deps.outbound.close();
  }

  /** Looks for due deliveries now (coalesced: one claim at a time, another right after if asked). */
  wake(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.deps.log.error({ err }, "webhook worker: claiming deliveries failed"))
      .finally(() => {
        this.pumping = null;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.wake();
        }
      });
  }

  /**
   * Sends every delivery that is due by the injected clock, endpoint by endpoint in order, until
   * none is; returns the number of attempts made. For tests and tools, on a worker not started.
   */
  async runDue(): Promise<number> {
    let attempts = 0;
    for (;;) {
      const claimed = await this.claim(this.deps.concurrency);
      if (claimed.length === 0) return attempts;
      await Promise.all(
        claimed.map((delivery) => this.deliverer.attempt(delivery, { retry: delivery.event !== TEST_EVENT })),
      );
      attempts += claimed.length;
    }
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

  private async pump(): Promise<void> {
    while (this.running) {
      const free = this.deps.concurrency - this.lanes.size;
      if (free <= 0) return;
      const claimed = await this.claim(free);
      for (const delivery of claimed) this.send(delivery);
      if (claimed.length < free) return;
    }
  }

  private claim(limit: number): Promise<ClaimedDelivery[]> {
    return claimDueDeliveries(this.deps.db, this.deps.dialect, {
      now: this.deps.now(),
      limit,
      leaseMs: this.deps.leaseMs,
    });
  }

  private send(first: ClaimedDelivery): void {
    const lane = this.lane(first)
      .catch((err: unknown) => {
        if (this.abandoned) return;
        // The claim runs out and the delivery is sent again later.
        this.deps.log.error({ err, endpoint: first.endpoint_key }, "webhook worker: a delivery lane failed");
      })
      .finally(() => {
        this.lanes.delete(lane);
        this.wake(); // a slot is free
      });
    this.lanes.add(lane);
  }

  /**
   * Sends `first`, then the same endpoint's next due delivery (claimed by an index lookup rather
   * than the general claim, which reads every due row), and so on, up to LANE_LENGTH deliveries;
   * then the slot goes back to the general claim, so that every endpoint gets its turn.
   */
  private async lane(first: ClaimedDelivery): Promise<void> {
    let delivery: ClaimedDelivery | undefined = first;
    for (let sent = 1; delivery; sent++) {
      await this.deliverer.attempt(delivery, {
        retry: delivery.event !== TEST_EVENT,
        abandoned: () => this.abandoned,
      });
      if (!this.running || sent >= LANE_LENGTH) return;
      [delivery] = await claimDueDeliveries(this.deps.db, this.deps.dialect, {
        now: this.deps.now(),
        limit: 1,
        leaseMs: this.deps.leaseMs,
        endpointKey: delivery.endpoint_key,
      });
    }
  }
}
