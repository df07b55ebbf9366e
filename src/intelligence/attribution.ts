import type { RecognizedWord, SpeakerTurn, Utterance } from "./types.js";

/**
 * Who said what: each recognized word gets the speaker of the platform's speaking indicator
 * (the recording's speakerTimeline), then consecutive words of one speaker become utterances.
 *
 * The rule, in order:
 * 1. **Overlap.** The turn overlapping the word the longest wins. On a tie (two people's indicators
 *    on for the whole word) the turn that started earlier wins: the one who was already talking.
 * 2. **Indicator lag.** A word overlapping no turn goes to the nearest turn it is close enough to:
 *    at most `leadMs` before the turn starts (the indicator lights up late, after the first
 *    syllables) or at most `tailMs` after it ends (recognizers stretch a word's end into the silence
 *    after it; Vexa keeps a 500 ms buffer after speaker-end events for the same reason). The
 *    defaults, 500 ms each, are that starting point, not a measurement of each platform (the
 *    mock meetings' indicator is near exact: on 50–60 ms after a line starts, off 15–60 ms after
 *    it ends, measured on the Meet and Teams mocks). Equal distances go to the earlier turn. Lag is handled only here, never by moving turns, so a word
 *    said just after someone else stopped is never taken from the person whose indicator is on.
 * 3. **Nobody.** Otherwise the word's speaker is null (someone talked before the bot joined, or
 *    the platform showed nobody).
 *
 * Utterances: a new one starts when the speaker changes, after a pause longer than `pauseMs`, or
 * when a provider's diarization hint changes. Hints only split: they never name anyone, since the
 * platform's indicator is what knows names.
 */
export interface AttributionOptions {
  /** How long before a turn's start a word may begin and still be that speaker's. */
  leadMs?: number;
  /** How long after a turn's end a word may begin and still be that speaker's. */
  tailMs?: number;
  /** A silence longer than this between two words of one speaker starts a new utterance. */
  pauseMs?: number;
}

export const ATTRIBUTION_DEFAULTS = { leadMs: 500, tailMs: 500, pauseMs: 1_500 } as const;

type Speaker = Utterance["speaker"];

export function attributeSpeakers(
  words: readonly RecognizedWord[],
  timeline: readonly SpeakerTurn[],
  options: AttributionOptions = {},
): Utterance[] {
  const settings = { ...ATTRIBUTION_DEFAULTS, ...options };
  const index = new TurnIndex(timeline, Math.max(settings.leadMs, settings.tailMs));
  const ordered = [...words].sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
  const utterances: Utterance[] = [];
  let current: { utterance: Utterance; hint: string | null; confidences: number[] } | undefined;
  for (const word of ordered) {
    const turn = speakerOf(word, index.near(word), settings);
    const speaker: Speaker = turn ? { participantId: turn.participantId, name: turn.name } : null;
    const hint = word.speakerHint ?? null;
    const last = current?.utterance;
    const continues =
      current &&
      last &&
      last.speaker?.participantId === speaker?.participantId &&
      current.hint === hint &&
      word.startMs - last.endMs <= settings.pauseMs;
    if (!continues) {
      if (current) utterances.push(finish(current));
      current = {
        utterance: {
          speaker,
          startMs: word.startMs,
          endMs: word.endMs,
          text: "",
          confidence: null,
          words: [],
        },
        hint,
        confidences: [],
      };
    }
    const open = current!;
    open.utterance.words.push({
      text: word.text,
      startMs: word.startMs,
      endMs: word.endMs,
      confidence: word.confidence,
    });
    open.utterance.endMs = Math.max(open.utterance.endMs, word.endMs);
    if (word.confidence !== null) open.confidences.push(word.confidence);
  }
  if (current) utterances.push(finish(current));
  return utterances;
}

function finish(current: { utterance: Utterance; confidences: number[] }): Utterance {
  const { utterance, confidences } = current;
  utterance.text = utterance.words.map((word) => word.text).join(" ");
  utterance.confidence = confidences.length
    ? confidences.reduce((sum, value) => sum + value, 0) / confidences.length
    : null;
  return utterance;
}

function speakerOf(
  word: RecognizedWord,
  candidates: readonly SpeakerTurn[],
  settings: { leadMs: number; tailMs: number },
): SpeakerTurn | null {
  let best: SpeakerTurn | null = null;
  let bestOverlap = 0;
  for (const turn of candidates) {
    const overlap = Math.min(word.endMs, turn.endMs) - Math.max(word.startMs, turn.startMs);
    // A zero-length word inside a turn overlaps by 0 yet lies within it: count it as touching.
    const inside = word.startMs >= turn.startMs && word.startMs <= turn.endMs;
    const score = overlap > 0 ? overlap : inside ? Number.MIN_VALUE : 0;
    if (score > bestOverlap || (score > 0 && score === bestOverlap && best && turn.startMs < best.startMs)) {
      best = turn;
      bestOverlap = score;
    }
  }
  if (best) return best;
  let nearest: SpeakerTurn | null = null;
  let nearestGap = Infinity;
  for (const turn of candidates) {
    const before = turn.startMs - word.endMs; // the word ends before the turn starts
    const after = word.startMs - turn.endMs; // the word starts after the turn ended
    const gap =
      before >= 0
        ? before <= settings.leadMs
          ? before
          : Infinity
        : after <= settings.tailMs
          ? after
          : Infinity;
    if (gap < nearestGap || (gap === nearestGap && nearest && turn.startMs < nearest.startMs)) {
      nearest = turn;
      nearestGap = gap;
    }
  }
  return nearestGap === Infinity ? null : nearest;
}

/**
 * Finds the turns near a word without scanning the whole timeline for every word (a 4-hour
 * meeting has tens of thousands of words and thousands of turns): turns sorted by start, with a
 * running maximum of their ends, so a backwards scan stops once no earlier turn can reach the word.
 */
class TurnIndex {
  private readonly turns: SpeakerTurn[];
  private readonly maxEndUpTo: number[];

  constructor(
    timeline: readonly SpeakerTurn[],
    private readonly slackMs: number,
  ) {
    this.turns = timeline.filter((turn) => turn.endMs >= turn.startMs).sort((a, b) => a.startMs - b.startMs);
    let maxEnd = -Infinity;
    this.maxEndUpTo = this.turns.map((turn) => (maxEnd = Math.max(maxEnd, turn.endMs)));
  }

  near(word: RecognizedWord): SpeakerTurn[] {
    const latestStart = word.endMs + this.slackMs;
    const earliestEnd = word.startMs - this.slackMs;
    // The first turn starting after latestStart: binary search.
    let low = 0;
    let high = this.turns.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.turns[middle]!.startMs <= latestStart) low = middle + 1;
      else high = middle;
    }
    const found: SpeakerTurn[] = [];
    for (let i = low - 1; i >= 0 && this.maxEndUpTo[i]! >= earliestEnd; i--) {
      if (this.turns[i]!.endMs >= earliestEnd) found.push(this.turns[i]!);
    }
    return found;
  }
}
