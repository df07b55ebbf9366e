/**
 * Calls `check` until it returns without throwing, every `interval` ms, for at most `timeout` ms,
 * then throws its last error: vitest's `vi.waitFor`, which works only inside a vitest worker. The
 * helpers that the benches share with the tests (stack.ts, server-harness.ts) wait with this, so
 * that `make bench` can run them.
 */
export async function pollUntil<T>(
  check: () => Promise<T>,
  { timeout, interval }: { timeout: number; interval: number },
): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() + interval > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  }
}
