import { setTimeout as delay } from "node:timers/promises";

/** Waits for `work` to settle, `ms` at most; the timer does not outlive the wait. */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  const waited = new AbortController();
  await Promise.race([work, delay(ms, undefined, { signal: waited.signal }).catch(() => {})]);
  waited.abort();
}
