/**
 * Wakes a background worker of this process once a transaction that gave it work has committed
 * (webhook deliveries for the outbox worker, jobs for the content worker). Other processes find
 * the rows by polling; this only saves the local worker its poll delay.
 */
export class WakeSignal {
  private readonly listeners = new Set<() => void>();

  notify(): void {
    for (const listener of this.listeners) listener();
  }

  /** Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
