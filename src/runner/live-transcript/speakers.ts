import type { CallbackEventBody } from "../../core/index.js";

export interface Speaker {
  participantId: string;
  name: string;
}

interface Turn extends Speaker {
  startMs: number;
  /** null while the indicator is still on. */
  endMs: number | null;
}

/**
 * The platform's speaking indicator as the runner reported it (`speaker.started` /
 * `speaker.stopped`), on the recording's clock: who spoke when, to name an utterance's speaker.
 * Turns are kept until the utterances they could belong to are settled (forgetBefore).
 */
export class SpeakerTimeline {
  private readonly turns: Turn[] = [];
  private readonly turnListeners: Array<() => void> = [];
  /** Who started speaking last. */
  private lastStarted: string | null = null;

  /** `now`: the current time on the recording's clock, in ms. */
  constructor(private readonly now: () => number) {}

  /** Keeps what a speaker event says; other events pass by. */
  note(body: CallbackEventBody): void {
    if (body.type === "speaker.started") this.started(body.data.participantId, body.data.participantName);
    if (body.type === "speaker.stopped") this.stopped(body.data.participantId);
  }

  started(participantId: string, name: string): void {
    if (this.openTurn(participantId)) return;
    this.turns.push({ participantId, name, startMs: this.now(), endMs: null });
    const changed = this.lastStarted !== null && this.lastStarted !== participantId;
    this.lastStarted = participantId;
    if (changed) for (const listener of this.turnListeners) listener();
  }

  /** Calls `listener` whenever someone starts speaking who is not the one who started last. */
  onTurnChange(listener: () => void): void {
    this.turnListeners.push(listener);
  }

  stopped(participantId: string): void {
    const turn = this.openTurn(participantId);
    if (turn) turn.endMs = this.now();
  }

  /**
   * Who spoke most between `startMs` and `endMs` by the indicator (a turn still on counts to the
   * end); null when nobody's indicator was on then.
   */
  dominant(startMs: number, endMs: number): Speaker | null {
    const spoken = new Map<string, { speaker: Speaker; ms: number }>();
    for (const turn of this.turns) {
      const overlap = Math.min(endMs, turn.endMs ?? Infinity) - Math.max(startMs, turn.startMs);
      if (overlap <= 0) continue;
      const entry = spoken.get(turn.participantId) ?? {
        speaker: { participantId: turn.participantId, name: turn.name },
        ms: 0,
      };
      entry.ms += overlap;
      spoken.set(turn.participantId, entry);
    }
    let best: { speaker: Speaker; ms: number } | null = null;
    for (const entry of spoken.values()) if (!best || entry.ms > best.ms) best = entry;
    return best?.speaker ?? null;
  }

  /** Forgets the turns that ended before `ms`: no utterance still to be named reaches back there. */
  forgetBefore(ms: number): void {
    for (let i = this.turns.length - 1; i >= 0; i--) {
      const end = this.turns[i]?.endMs;
      if (end !== null && end !== undefined && end < ms) this.turns.splice(i, 1);
    }
  }

  private openTurn(participantId: string): Turn | undefined {
    return this.turns.find((turn) => turn.participantId === participantId && turn.endMs === null);
  }
}
