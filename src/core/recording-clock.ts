/**
 * The recording's clock (ms from its first frame) when the recording can be paused: paused time
 * is not in the file, so a wall-clock instant maps to the recording's start minus every pause
 * before it, and an instant inside a pause maps to where the pause began (nothing of it was
 * recorded). The runner's live clock and the server's speaker timeline both use this one mapping.
 */
export interface PauseSpan {
  /** Wall-clock ms at which the recording paused. */
  fromMs: number;
  /** Wall-clock ms at which it resumed; null while it is still paused. */
  toMs: number | null;
}

/** `wallMs` on the clock of a recording that started at `startedAtMs` and paused during `pauses` (in order). */
export function recordingMsAt(wallMs: number, startedAtMs: number, pauses: readonly PauseSpan[]): number {
  let paused = 0;
  for (const pause of pauses) {
    if (wallMs <= pause.fromMs) break;
    const end = pause.toMs ?? Number.POSITIVE_INFINITY;
    paused += Math.min(wallMs, end) - pause.fromMs;
  }
  return Math.max(0, wallMs - startedAtMs - paused);
}

/** Whether the recording is paused at `wallMs`. */
export function pausedAt(wallMs: number, pauses: readonly PauseSpan[]): boolean {
  return pauses.some((p) => wallMs >= p.fromMs && (p.toMs === null || wallMs < p.toMs));
}
