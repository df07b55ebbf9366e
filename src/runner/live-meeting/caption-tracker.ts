import type { CaptionEntryReading, SpeakerRef } from "../../../platforms/live.js";
import { LIVE_TEXT_MAX, type Utterance } from "../../core/index.js";
import type { ResolvedSpeaker } from "./speakers.js";

/** At most one partial per utterance in this time: a caption changes many times a second. */
export const PARTIAL_INTERVAL_MS = 150;
/** An utterance unchanged this long is settled (its final is sent). */
export const SETTLE_MS = 1_000;

export type TranscriptEventType = "transcript.partial" | "transcript.final";

export interface CaptionTrackerOptions {
  /**
   * Whether the recording is paused now: what is said meanwhile is not in the recording, so it is
   * not in the transcript either.
   */
  paused?: () => boolean;
  /** Now on the recording's clock (ms from its first frame). */
  clock(): number;
  resolve(ref: SpeakerRef | null): ResolvedSpeaker;
  emit(type: TranscriptEventType, utterance: Utterance): void;
  language: string | null;
  partialIntervalMs?: number;
  settleMs?: number;
}

/** The part of an entry being reported as one utterance. */
interface Segment {
  utteranceId: string;
  text: string;
  startMs: number;
  /** When its text last changed. */
  endMs: number;
  lastPartialAt: number | null;
  lastPartialText: string | null;
  partialTimer: NodeJS.Timeout | null;
  settleTimer: NodeJS.Timeout | null;
}

/** A caption entry on screen. */
interface Entry {
  /** Undefined until the page names someone. */
  speaker: ResolvedSpeaker | undefined;
  /**
   * The entry's words as they stood at its last final: what it shows after the part it still
   * shares with them (a rewrite may change words already final) is a new utterance.
   */
  committed: string[];
  /** Its words in the last reading. */
  words: string[];
  open: Segment | null;
}

/**
 * Turns readings of the caption entries on screen into utterances: an entry is one utterance
 * (stable id) whose whole text so far goes out as `transcript.partial` when it changes (at most one
 * per PARTIAL_INTERVAL_MS, the latest text), and whose `transcript.final` goes out once: when it
 * has not changed for SETTLE_MS, when its entry leaves the page, or at stop(). Text may shrink as
 * well as grow (platforms rewrite captions in place): a partial always carries the text as shown.
 * An entry that changes again after its final (a pause longer than SETTLE_MS in one turn) goes on
 * as a new utterance of the words after those it still shares with its last final: the rest of
 * the turn, also where the platform rewrote words already final (they cannot be taken back; the
 * corrected rest is not lost). The bot's own captions are skipped: the bot only listens, and one
 * that speaks transcribes its own output itself.
 */
export class CaptionTracker {
  private readonly entries = new Map<string, Entry>();
  private nextId = 1;
  private stopped = false;
  private readonly partialIntervalMs: number;
  private readonly settleMs: number;

  constructor(private readonly opts: CaptionTrackerOptions) {
    this.partialIntervalMs = opts.partialIntervalMs ?? PARTIAL_INTERVAL_MS;
    this.settleMs = opts.settleMs ?? SETTLE_MS;
  }

  /** A reading of every caption entry on screen now, in order. */
  update(readings: readonly CaptionEntryReading[]): void {
    if (this.stopped) return;
    const now = this.opts.clock();
    const onScreen = new Set<string>();
    for (const reading of readings) {
      if (onScreen.has(reading.key)) continue;
      onScreen.add(reading.key);
      let entry = this.entries.get(reading.key);
      if (!entry) {
        entry = { speaker: undefined, committed: [], words: [], open: null };
        this.entries.set(reading.key, entry);
      }
      if (!entry.speaker && reading.speaker) entry.speaker = this.opts.resolve(reading.speaker);
      if (entry.speaker === "self") continue;
      const words = reading.text.split(/\s+/).filter((word) => word !== "");
      entry.words = words;
      if (this.opts.paused?.()) {
        // An utterance under way ends at the pause, and the words shown meanwhile count as
        // reported: after the resume only words said after them go out.
        this.finish(entry);
        entry.committed = words;
        continue;
      }
      const text = words.slice(sharedPrefix(entry.committed, words)).join(" ").slice(0, LIVE_TEXT_MAX);
      if (!entry.open) {
        if (text === "") continue;
        entry.open = this.segment(now);
      }
      if (text !== entry.open.text) this.changed(entry, text, now);
    }
    for (const [key, entry] of this.entries) {
      if (onScreen.has(key)) continue;
      this.finish(entry);
      this.entries.delete(key);
    }
  }

  /** The call is over: every open utterance gets its final now; later readings are ignored. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const entry of this.entries.values()) this.finish(entry);
    this.entries.clear();
  }

  private segment(now: number): Segment {
    return {
      utteranceId: `cap-${this.nextId++}`,
      text: "",
      startMs: now,
      endMs: now,
      lastPartialAt: null,
      lastPartialText: null,
      partialTimer: null,
      settleTimer: null,
    };
  }

  private changed(entry: Entry, text: string, now: number): void {
    const segment = entry.open as Segment;
    segment.text = text;
    segment.endMs = now;
    // Coalesced: the first change goes out at once, later ones no sooner than the interval.
    if (!segment.partialTimer) {
      const due = segment.lastPartialAt === null ? 0 : segment.lastPartialAt + this.partialIntervalMs - now;
      if (due <= 0) this.partial(entry, segment);
      else
        segment.partialTimer = setTimeout(() => {
          segment.partialTimer = null;
          this.partial(entry, segment);
        }, due);
    }
    if (segment.settleTimer) clearTimeout(segment.settleTimer);
    // Settled once the readings that came meanwhile are in: a runner that stalled longer than the
    // settle time finds this timer due before the readings waiting in its socket (timers run
    // first), so the final waits one more turn of the event loop, after its I/O.
    segment.settleTimer = setTimeout(() => {
      segment.settleTimer = setTimeout(() => {
        if (entry.open === segment && segment.endMs === now) this.finish(entry);
      }, 0);
    }, this.settleMs);
  }

  private partial(entry: Entry, segment: Segment): void {
    if (segment.text === "" || segment.text === segment.lastPartialText) return;
    segment.lastPartialAt = this.opts.clock();
    segment.lastPartialText = segment.text;
    this.opts.emit("transcript.partial", this.utterance(entry, segment));
  }

  /** Sends the open segment's final (once), and counts its words as reported. */
  private finish(entry: Entry): void {
    const segment = entry.open;
    if (!segment) return;
    entry.open = null;
    if (segment.partialTimer) clearTimeout(segment.partialTimer);
    if (segment.settleTimer) clearTimeout(segment.settleTimer);
    // Nothing was said (a caption rewritten to nothing before any partial): nothing to settle.
    if (segment.text === "" && segment.lastPartialText === null) return;
    entry.committed = entry.words;
    this.opts.emit("transcript.final", this.utterance(entry, segment));
  }

  private utterance(entry: Entry, segment: Segment): Utterance {
    const speaker = entry.speaker === "self" || entry.speaker === undefined ? null : entry.speaker;
    return {
      utteranceId: segment.utteranceId,
      speaker,
      text: segment.text,
      startMs: Math.max(0, Math.round(segment.startMs)),
      endMs: Math.max(0, Math.round(segment.endMs)),
      source: "captions",
      language: this.opts.language,
    };
  }
}

/** How many words `a` and `b` share from their start. */
function sharedPrefix(a: readonly string[], b: readonly string[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}
