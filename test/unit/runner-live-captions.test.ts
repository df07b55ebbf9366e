import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CaptionEntryReading, SpeakerRef } from "../../platforms/live.js";
import type { Utterance } from "../../src/core/index.js";
import {
  CaptionTracker,
  PARTIAL_INTERVAL_MS,
  SETTLE_MS,
  type TranscriptEventType,
} from "../../src/runner/live-meeting/caption-tracker.js";
import { SpeakerDirectory } from "../../src/runner/live-meeting/speakers.js";

/**
 * The captions' bookkeeping with fake readings on vitest's fake clock: what the page shows goes
 * in, partials and finals come out. The recording's clock starts at the fake clock's 0.
 */

/** A settle time and the event loop's next turn after it (a timer of 0 ms: 1 ms, as in Node). */
const SETTLED = SETTLE_MS + 1;

const ALICE: SpeakerRef = { name: "Alice", nth: 0 };
const entry = (key: string, text: string, speaker: SpeakerRef | null = ALICE): CaptionEntryReading => ({
  key,
  text,
  speaker,
});

function setUp() {
  const events: Array<{ type: TranscriptEventType; at: number } & Utterance> = [];
  const speakers = new SpeakerDirectory("Note Bot");
  speakers.update({
    phase: "in_call",
    participants: [
      { id: "p-1", name: "Alice" },
      { id: "p-2", name: "Bob" },
      { id: "p-3", name: "Bob" },
    ],
  });
  const tracker = new CaptionTracker({
    clock: () => Date.now(),
    resolve: (ref) => speakers.resolve(ref),
    emit: (type, utterance) => events.push({ type, at: Date.now(), ...utterance }),
    language: "en-US",
  });
  const of = (type: TranscriptEventType) => events.filter((e) => e.type === type);
  return { tracker, events, of };
}

beforeEach(() => {
  // setImmediate too: a final waits for the readings already in (see the stalled-runner test).
  vi.useFakeTimers({
    now: 0,
    toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "Date"],
  });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the caption tracker", () => {
  it("sends the first change at once, then at most one partial per interval, with the latest text", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "I")]);
    vi.advanceTimersByTime(50);
    tracker.update([entry("e1", "I will")]);
    vi.advanceTimersByTime(50);
    tracker.update([entry("e1", "I will send")]);
    expect(of("transcript.partial").map((e) => [e.at, e.text])).toEqual([[0, "I"]]);
    vi.advanceTimersByTime(PARTIAL_INTERVAL_MS);
    expect(of("transcript.partial").map((e) => [e.at, e.text])).toEqual([
      [0, "I"],
      [PARTIAL_INTERVAL_MS, "I will send"],
    ]);
    // One utterance: every partial has the same id.
    expect(new Set(of("transcript.partial").map((e) => e.utteranceId)).size).toBe(1);
  });

  it("settles an utterance once after it stopped changing: one final, with its times and speaker", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "I will")]);
    vi.advanceTimersByTime(400);
    tracker.update([entry("e1", "I will send the report")]);
    vi.advanceTimersByTime(SETTLE_MS);
    expect(of("transcript.final")).toEqual([]);
    vi.advanceTimersByTime(1);
    // Unchanged readings later do not settle it again.
    tracker.update([entry("e1", "I will send the report")]);
    vi.advanceTimersByTime(5 * SETTLE_MS);
    expect(of("transcript.final")).toEqual([
      expect.objectContaining({
        text: "I will send the report",
        startMs: 0,
        endMs: 400,
        speaker: { participantId: "p-1", name: "Alice" },
        source: "captions",
        language: "en-US",
        utteranceId: of("transcript.partial")[0]?.utteranceId,
      }),
    ]);
  });

  it("takes a rewrite that shrinks the text: the partial shows it, the final has the words as they settled", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "we decided to")]);
    vi.advanceTimersByTime(300);
    tracker.update([entry("e1", "we decided to ship and then the other thing that we said before")]);
    vi.advanceTimersByTime(300);
    tracker.update([entry("e1", "we decided to ship")]);
    vi.advanceTimersByTime(300);
    tracker.update([entry("e1", "we decided to ship the new version")]);
    vi.advanceTimersByTime(SETTLED);
    expect(of("transcript.partial").map((e) => e.text)).toEqual([
      "we decided to",
      "we decided to ship and then the other thing that we said before",
      "we decided to ship",
      "we decided to ship the new version",
    ]);
    expect(of("transcript.final").map((e) => e.text)).toEqual(["we decided to ship the new version"]);
  });

  it("settles an entry at once when it leaves the page, and each entry is its own utterance", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "first turn"), entry("e2", "second", { name: "Bob", nth: 1 })]);
    vi.advanceTimersByTime(100);
    tracker.update([entry("e2", "second turn", { name: "Bob", nth: 1 })]);
    expect(of("transcript.final").map((e) => [e.text, e.at])).toEqual([["first turn", 100]]);
    vi.advanceTimersByTime(SETTLED);
    const finals = of("transcript.final");
    expect(finals.map((e) => e.text)).toEqual(["first turn", "second turn"]);
    expect(finals[0]?.utteranceId).not.toBe(finals[1]?.utteranceId);
    // The second Bob of the roster, as the page (Zoom's avatars) told them apart.
    expect(finals[1]?.speaker).toEqual({ participantId: "p-3", name: "Bob" });
  });

  it("sends every open utterance's final at stop, once, and nothing after", () => {
    const { tracker, events, of } = setUp();
    tracker.update([entry("e1", "still talking")]);
    vi.advanceTimersByTime(10);
    tracker.update([entry("e1", "still talking when")]);
    tracker.stop();
    expect(of("transcript.final").map((e) => e.text)).toEqual(["still talking when"]);
    const count = events.length;
    tracker.update([entry("e1", "still talking when the call ended"), entry("e9", "late")]);
    tracker.stop();
    vi.advanceTimersByTime(5 * SETTLE_MS);
    expect(events).toHaveLength(count);
  });

  it("goes on in a new utterance when a settled entry grows again, with only the new words", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "thanks everyone")]);
    vi.advanceTimersByTime(SETTLED);
    tracker.update([entry("e1", "thanks everyone for joining today")]);
    vi.advanceTimersByTime(SETTLED);
    const finals = of("transcript.final");
    expect(finals.map((e) => e.text)).toEqual(["thanks everyone", "for joining today"]);
    expect(finals[0]?.utteranceId).not.toBe(finals[1]?.utteranceId);
    expect(finals[1]?.startMs).toBe(SETTLED);
  });

  it("goes on after a final the platform then rewrote: the corrected rest comes, nothing repeats", () => {
    const { tracker, of } = setUp();
    // The page stalled while it showed a wrong hypothesis: that was final.
    tracker.update([entry("e1", "I will send the report and then the other thing")]);
    vi.advanceTimersByTime(SETTLED);
    tracker.update([entry("e1", "I will send the report")]);
    tracker.update([entry("e1", "I will send the report to the team tomorrow")]);
    vi.advanceTimersByTime(SETTLED);
    expect(of("transcript.final").map((e) => e.text)).toEqual([
      "I will send the report and then the other thing",
      "to the team tomorrow",
    ]);
  });

  it("settles nothing that changed in readings waiting behind its timer (a stalled runner)", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "thanks")]);
    vi.advanceTimersByTime(SETTLE_MS - 1);
    // A reading due at the same instant as the settle timer and run after it, as one waiting in
    // the socket of a runner that stalled is.
    setTimeout(() => tracker.update([entry("e1", "thanks everyone")]), 1);
    vi.advanceTimersByTime(1);
    vi.advanceTimersByTime(1);
    expect(of("transcript.final")).toEqual([]);
    vi.advanceTimersByTime(SETTLED);
    expect(of("transcript.final").map((e) => e.text)).toEqual(["thanks everyone"]);
  });

  it("skips the bot's own captions and entries with no words", () => {
    const { tracker, events } = setUp();
    tracker.update([entry("e1", "hello from the bot", { self: true }), entry("e2", "  ")]);
    // Teams marks nothing: the bot's own name, with nobody else of that name, is the bot.
    tracker.update([entry("e3", "also the bot", { name: "Note Bot", nth: 0 })]);
    vi.advanceTimersByTime(5 * SETTLE_MS);
    tracker.stop();
    expect(events).toEqual([]);
  });

  it("names a speaker the roster does not have by their name, and no one when the page names no one", () => {
    const { tracker, of } = setUp();
    tracker.update([entry("e1", "a guest speaks", { name: "Zed", nth: 0 }), entry("e2", "who?", null)]);
    tracker.stop();
    expect(of("transcript.final").map((e) => e.speaker)).toEqual([
      { participantId: "name:Zed", name: "Zed" },
      null,
    ]);
  });
});
