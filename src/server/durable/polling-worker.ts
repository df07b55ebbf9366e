import type { WakeSignal } from "../wake-signal.js";

/**
 * The one polling worker of the durable tasks (docs/design.md, "One durable-task pattern"): webhook
 * deliveries, content jobs, account checks, scheduled deploys and retention sweeps are rows with
 * leases; each kind supplies only its claim (a conditional UPDATE that takes due rows, so several
 * processes never take one row twice) and its run. This holds what they share: start, a wake that
 * is coalesced (one claim round at a time, one more right after if woken meanwhile), a slot per
 * running item, stop with a grace period, and lease renewal for runs that outlast their lease.
 */
export interface PollingWorkerOptions<T> {
  /** Names the worker in its log lines ("job worker", "webhook worker"). */
  name: string;
  log: { error(obj: object, msg: string): void };
  /** Claims up to `limit` due items for this process. */
  claim(limit: number): Promise<T[]>;
  /** Runs one claimed item to its outcome; `signal` aborts (with WorkerStopping) when the worker stops. */
  run(item: T, signal: AbortSignal): Promise<void>;
  /** Items run at once in this process. */
  concurrency: number;
  /** How often to look for due items when nothing woke the worker (retries, other processes' rows). */
  pollIntervalMs: number;
  /** Wakes the worker when this process has committed new items. */
  signal?: WakeSignal | undefined;
  /** stop() waits this long for running items; default 5000 ms. */
  stopGraceMs?: number | undefined;
  /** Before each claim round of the started worker: housekeeping that makes items due or settles others. */
  beforeClaims?: (() => Promise<unknown>) | undefined;
  /** On every poll tick, besides the wake (e.g. an hourly prune). */
  onTick?: (() => void) | undefined;
}

/** The reason a running item's signal aborts with when its worker stops. */
export class WorkerStopping extends Error {
  constructor(name: string) {
    super(`the ${name} is stopping`);
  }
}

export class PollingWorker<T> {
  private readonly running = new Map<Promise<void>, AbortController>();
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private started = false;

  constructor(private readonly opts: PollingWorkerOptions<T>) {}

  /** Whether the worker is started (and not stopping). */
  get active(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.opts.signal?.subscribe(() => this.wake()) ?? null;
    this.timer = setInterval(() => {
      this.wake();
      this.opts.onTick?.();
    }, this.opts.pollIntervalMs);
    this.timer.unref();
    this.wake(); // whatever a previous run left due
  }

  /**
   * Stops claiming, aborts the running items' signals (WorkerStopping) and waits up to the grace
   * period for them; an item still running after it keeps its claim until the lease runs out.
   */
  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
    const abortAll = () => {
      for (const controller of this.running.values()) controller.abort(new WorkerStopping(this.opts.name));
    };
    abortAll();
    await this.pumping;
    abortAll(); // and what the last claim round started
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.opts.stopGraceMs ?? 5000).unref());
    await Promise.race([Promise.allSettled(this.running.keys()), grace]);
  }

  /** Looks for due items now (coalesced: one claim round at a time, another right after if asked). */
  wake(): void {
    if (!this.started) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.opts.log.error({ err }, `${this.opts.name}: claiming failed`))
      .finally(() => {
        this.pumping = null;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.wake();
        }
      });
  }

  /**
   * Claims and runs (`runOne`, default the kind's run) every item due, `concurrency` at a time, until
   * none is; returns how many it claimed. For tests and tools, on a worker that was not started.
   */
  async runDue(
    runOne: (item: T) => Promise<unknown> = (item) => this.opts.run(item, neverAborted),
  ): Promise<number> {
    let claimedInAll = 0;
    for (;;) {
      const claimed = await this.opts.claim(this.opts.concurrency);
      if (claimed.length === 0) return claimedInAll;
      await Promise.all(claimed.map(runOne));
      claimedInAll += claimed.length;
    }
  }

  private async pump(): Promise<void> {
    await this.opts.beforeClaims?.();
    while (this.started) {
      const free = this.opts.concurrency - this.running.size;
      if (free <= 0) return;
      const claimed = await this.opts.claim(free);
      for (const item of claimed) this.launch(item);
      if (claimed.length < free) return;
    }
  }

  private launch(item: T): void {
    const controller = new AbortController();
    const done: Promise<void> = this.opts
      .run(item, controller.signal)
      .catch((err: unknown) => this.opts.log.error({ err }, `${this.opts.name}: a run failed`))
      .finally(() => {
        this.running.delete(done);
        this.wake(); // a slot is free
      });
    this.running.set(done, controller);
  }
}

const neverAborted = new AbortController().signal;

/**
 * Keeps a claim alive while its item runs: `renew` every third of the lease (and at once on
 * `renewNow`), one write at a time; a renewal that answers false (the claim was deleted, or taken
 * over after its lease ran out) calls `lost`, once, unless stopped.
 */
export function holdLease(opts: {
  leaseMs: number;
  renew(): Promise<boolean>;
  lost(): void;
  failed(err: unknown): void;
}): { renewNow(): void; stop(): void; readonly idle: Promise<void> } {
  let writing: Promise<void> = Promise.resolve();
  let stopped = false;
  const renewNow = () => {
    writing = writing
      .then(async () => {
        if (stopped) return;
        const mine = await opts.renew();
        if (!mine && !stopped) opts.lost();
      })
      .catch(opts.failed);
  };
  const timer = setInterval(renewNow, Math.max(1, Math.floor(opts.leaseMs / 3)));
  timer.unref();
  return {
    renewNow,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
    get idle() {
      return writing;
    },
  };
}
