import {
  type CallbackEventBody,
  LIVE_TEXT_MAX,
  type LiveTranscriptSource,
  type Utterance,
} from "../../core/index.js";
import type { SpeakerTimeline } from "./speakers.js";

/** What a source knows of an utterance at one moment: its whole text so far and where it lies. */
export interface Hypothesis {
  text: string;
  /** On the recording's clock, in ms. */
  startMs: number;
  endMs: number;
}

/**
 * Turns a source's hypotheses into the live transcript's events, keeping their promises:
 * - an utterance gets its id (`<prefix>-<n>`) when it is first reported, and keeps it;
 * - `transcript.partial` carries the whole text so far, only when it changed (a partial replaces
 *   the last one of its id);
 * - exactly one `transcript.final` per reported utterance, after its partials; nothing follows it;
 * - an utterance that never had words (noise, a cough) is not reported at all, but one that had
 *   partials always gets its final, even if it settles empty: that tells a listener to drop it;
 * - the speaker is whoever the platform's indicator showed speaking most during it, else null.
 *
 * A source calls it with its own keys for utterances (any number, never reused).
 */
export class UtteranceReports {
  private nextNumber = 1;
  private readonly reported = new Map<number, { utteranceId: string; lastText: string }>();
  private readonly settled = new Set<number>();

  constructor(
    private readonly opts: {
      source: LiveTranscriptSource;
      idPrefix: string;
      language: string | null;
      speakers: SpeakerTimeline;
      report(body: CallbackEventBody): void;
    },
  ) {}

  partial(key: number, hypothesis: Hypothesis): void {
    if (this.settled.has(key)) return;
    const text = clean(hypothesis.text);
    const known = this.reported.get(key);
    if (!text || text === known?.lastText) return;
    const utteranceId = known?.utteranceId ?? this.newId();
    this.reported.set(key, { utteranceId, lastText: text });
    this.opts.report({ type: "transcript.partial", data: this.utterance(utteranceId, text, hypothesis) });
  }

  final(key: number, hypothesis: Hypothesis): void {
    if (this.settled.has(key)) return;
    this.settled.add(key);
    const text = clean(hypothesis.text);
    const known = this.reported.get(key);
    this.reported.delete(key);
    if (!text && !known) return;
    const utteranceId = known?.utteranceId ?? this.newId();
    this.opts.report({ type: "transcript.final", data: this.utterance(utteranceId, text, hypothesis) });
  }

  /** The text last reported for `key`, while it awaits its final ("" when nothing was). */
  lastText(key: number): string {
    return this.reported.get(key)?.lastText ?? "";
  }

  private newId(): string {
    return `${this.opts.idPrefix}-${this.nextNumber++}`;
  }

  private utterance(utteranceId: string, text: string, at: Hypothesis): Utterance {
    const startMs = Math.max(0, Math.round(at.startMs));
    const endMs = Math.max(startMs, Math.round(at.endMs));
    return {
      utteranceId,
      speaker: this.opts.speakers.dominant(startMs, endMs),
      text,
      startMs,
      endMs,
      source: this.opts.source,
      language: this.opts.language,
    };
  }
}

/** One space between words, none around, and never longer than an event may carry. */
function clean(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, LIVE_TEXT_MAX);
}
