import { type PauseSpan, pausedAt, recordingMsAt } from "../core/index.js";

/**
 * The recording's clock, in ms from its first frame: the wall clock minus the time it was paused,
 * frozen while it is paused (core/recording-clock.ts). Everything the runner times on the
 * recording (speaker turns, live utterances, the bot's own speech, captions, the silence timeout)
 * reads this one clock, so it stays consistent with the file, which leaves the paused time out.
 */
export class RecordingClock {
  private readonly pauses: PauseSpan[] = [];

  constructor(
    readonly startedAt: Date,
    private readonly wallNow: () => number = Date.now,
  ) {}

  /** Now, on the recording's clock. */
  now(): number {
    return this.at(this.wallNow());
  }

  /** The wall-clock instant `wallMs` on the recording's clock (inside a pause: where it paused). */
  at(wallMs: number): number {
    return recordingMsAt(wallMs, this.startedAt.getTime(), this.pauses);
  }

  get paused(): boolean {
    return pausedAt(this.wallNow(), this.pauses);
  }

  /** Was the recording paused at the wall-clock instant `wallMs`? */
  pausedAt(wallMs: number): boolean {
    return pausedAt(wallMs, this.pauses);
  }

  /** All the time paused so far, in ms (a pause still under way counts up to now). */
  get pausedMs(): number {
    const now = this.wallNow();
    return this.pauses.reduce((sum, p) => sum + (p.toMs ?? now) - p.fromMs, 0);
  }

  /** Freezes the clock now; answers the instant (wall ms). */
  pause(): number {
    const now = this.wallNow();
    if (!this.paused) this.pauses.push({ fromMs: now, toMs: null });
    return now;
  }

  /** Lets the clock run again now; answers how long this pause lasted (ms). */
  resume(): number {
    const now = this.wallNow();
    const open = this.pauses.at(-1);
    if (!open || open.toMs !== null) return 0;
    open.toMs = now;
    return now - open.fromMs;
  }
}
