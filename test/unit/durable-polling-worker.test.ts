import { afterEach, describe, expect, it, vi } from "vitest";
import { holdLease, PollingWorker, WorkerStopping } from "../../src/server/durable/polling-worker.js";
import { WakeSignal } from "../../src/server/wake-signal.js";

/**
 * The polling worker every durable task runs on, with an in-memory queue standing in for a table:
 * claims take due items off it; runs are promises the test settles by hand.
 */

/** A promise with its resolve in the test's hand. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits for a condition by yielding to the event loop (no timers: fake ones may be on). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setImmediate(r));
  expect(condition()).toBe(true);
}

class Queue {
  items: number[] = [];
  claims: number[] = [];
  claimsInFlight = 0;
  maxClaimsInFlight = 0;
  gate: Promise<void> | null = null;
  async claim(limit: number): Promise<number[]> {
    this.claimsInFlight += 1;
    this.maxClaimsInFlight = Math.max(this.maxClaimsInFlight, this.claimsInFlight);
    try {
      this.claims.push(limit);
      await this.gate;
      return this.items.splice(0, limit);
    } finally {
      this.claimsInFlight -= 1;
    }
  }
}

const silent = { error: () => {} };
const workers: PollingWorker<number>[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const worker of workers.splice(0)) await worker.stop();
});

function worker(queue: Queue, run: (item: number, signal: AbortSignal) => Promise<void>, extra = {}) {
  const w = new PollingWorker<number>({
    name: "test worker",
    log: silent,
    claim: (limit) => queue.claim(limit),
    run,
    concurrency: 2,
    pollIntervalMs: 60_000,
    stopGraceMs: 50,
    ...extra,
  });
  workers.push(w);
  return w;
}

describe("PollingWorker", () => {
  it("runs at most `concurrency` items at once, and claims again as each slot frees", async () => {
    const queue = new Queue();
    queue.items = [1, 2, 3, 4, 5];
    const gates = new Map<number, ReturnType<typeof deferred<void>>>();
    const done: number[] = [];
    let runningNow = 0;
    let mostAtOnce = 0;
    const w = worker(queue, async (item) => {
      runningNow += 1;
      mostAtOnce = Math.max(mostAtOnce, runningNow);
      const gate = deferred();
      gates.set(item, gate);
      await gate.promise;
      runningNow -= 1;
      done.push(item);
    });
    w.start();
    await until(() => gates.size === 2);
    expect(queue.items).toEqual([3, 4, 5]); // not claimed while no slot is free
    for (let item = 1; item <= 5; item++) {
      await until(() => gates.has(item));
      gates.get(item)!.resolve();
    }
    await until(() => done.length === 5);
    expect(mostAtOnce).toBe(2);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it("coalesces wakes: one claim at a time, and one more right after when woken meanwhile", async () => {
    const queue = new Queue();
    const gate = deferred();
    queue.gate = gate.promise;
    const signal = new WakeSignal();
    const w = worker(queue, async () => {}, { signal });
    w.start(); // the first claim, held at the gate
    await until(() => queue.claims.length === 1);
    for (let i = 0; i < 5; i++) signal.notify();
    queue.gate = null;
    gate.resolve();
    await until(() => queue.claims.length === 2);
    await new Promise((r) => setImmediate(r));
    expect(queue.claims).toHaveLength(2);
    expect(queue.maxClaimsInFlight).toBe(1);
  });

  it("stop aborts running items with WorkerStopping and waits for them, up to the grace period", async () => {
    const queue = new Queue();
    queue.items = [1, 2];
    const reasons: unknown[] = [];
    let stubborn = deferred();
    const w = worker(queue, async (item, signal) => {
      if (item === 1) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
        reasons.push(signal.reason);
      } else {
        await stubborn.promise; // ignores its signal: stop() returns after the grace period
      }
    });
    w.start();
    await until(() => queue.items.length === 0);
    await w.stop();
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(WorkerStopping);
    expect(w.active).toBe(false);
    stubborn.resolve();
    stubborn = deferred();
    // Stopped: a wake claims nothing.
    queue.items = [3];
    w.wake();
    await new Promise((r) => setImmediate(r));
    expect(queue.items).toEqual([3]);
  });

  it("a run that fails is logged, and the worker goes on", async () => {
    const queue = new Queue();
    queue.items = [1, 2, 3];
    const errors: unknown[] = [];
    const ran: number[] = [];
    const w = worker(
      queue,
      async (item) => {
        ran.push(item);
        if (item === 2) throw new Error("boom");
      },
      { log: { error: (obj: { err: unknown }) => errors.push(obj.err) } },
    );
    w.start();
    await until(() => ran.length === 3);
    await until(() => errors.length === 1);
    expect((errors[0] as Error).message).toBe("boom");
  });

  it("polls on its interval, with the housekeeping before each round and the tick hook", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const queue = new Queue();
    const order: string[] = [];
    const w = worker(queue, async () => {}, {
      pollIntervalMs: 1000,
      beforeClaims: async () => order.push("housekeeping"),
      onTick: () => order.push("tick"),
    });
    const claim = queue.claim.bind(queue);
    queue.claim = async (limit) => {
      order.push("claim");
      return claim(limit);
    };
    w.start();
    await until(() => order.length === 2);
    expect(order).toEqual(["housekeeping", "claim"]);
    vi.advanceTimersByTime(1000);
    await until(() => order.length === 5);
    expect(order.slice(2)).toEqual(["housekeeping", "tick", "claim"]);
  });

  it("runDue claims until nothing is due and says how many it ran, with the run it is given", async () => {
    const queue = new Queue();
    queue.items = [1, 2, 3, 4, 5];
    const ran: number[] = [];
    const w = worker(queue, async (item) => {
      ran.push(item);
    });
    expect(await w.runDue()).toBe(5);
    expect(ran).toEqual([1, 2, 3, 4, 5]);
    expect(queue.claims).toEqual([2, 2, 2, 2]); // the last claim found nothing
    queue.items = [6];
    const other: number[] = [];
    expect(await w.runDue(async (item) => other.push(item))).toBe(1);
    expect(other).toEqual([6]);
  });
});

describe("holdLease", () => {
  it("renews every third of the lease, one write at a time, and says when the claim was lost", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let renewals = 0;
    let mine = true;
    let lost = 0;
    const lease = holdLease({
      leaseMs: 300,
      renew: async () => {
        renewals += 1;
        return mine;
      },
      lost: () => (lost += 1),
      failed: () => {},
    });
    vi.advanceTimersByTime(100);
    await lease.idle;
    expect(renewals).toBe(1);
    lease.renewNow();
    await lease.idle;
    expect(renewals).toBe(2);
    mine = false;
    vi.advanceTimersByTime(100);
    await lease.idle;
    expect(lost).toBe(1);
    lease.stop();
    vi.advanceTimersByTime(1000);
    lease.renewNow(); // stopped: no write
    await lease.idle;
    expect(renewals).toBe(3);
  });

  it("a renewal that throws is reported, and the next one still runs", async () => {
    const failures: unknown[] = [];
    let calls = 0;
    const lease = holdLease({
      leaseMs: 60_000,
      renew: async () => {
        calls += 1;
        if (calls === 1) throw new Error("db away");
        return true;
      },
      lost: () => {},
      failed: (err) => failures.push(err),
    });
    lease.renewNow();
    lease.renewNow();
    await lease.idle;
    lease.stop();
    expect(calls).toBe(2);
    expect(failures).toHaveLength(1);
  });
});
