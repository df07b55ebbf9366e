import { describe, expect, it } from "vitest";
import { attributeSpeakers } from "../../src/intelligence/attribution.js";
import type { RecognizedWord, SpeakerTurn } from "../../src/intelligence/types.js";

const word = (
  text: string,
  startMs: number,
  endMs: number,
  confidence: number | null = 0.9,
): RecognizedWord => ({
  text,
  startMs,
  endMs,
  confidence,
});
const alice = (startMs: number, endMs: number): SpeakerTurn => ({
  participantId: "p-a",
  name: "Alice",
  startMs,
  endMs,
});
const bob = (startMs: number, endMs: number): SpeakerTurn => ({
  participantId: "p-b",
  name: "Bob",
  startMs,
  endMs,
});
const ALICE = { participantId: "p-a", name: "Alice" };
const BOB = { participantId: "p-b", name: "Bob" };

/** Words spaced evenly from `startMs`, `stepMs` apart, each lasting `stepMs - 50`. */
function spoken(text: string, startMs: number, stepMs = 400): RecognizedWord[] {
  return text.split(" ").map((part, i) => word(part, startMs + i * stepMs, startMs + (i + 1) * stepMs - 50));
}

describe("attributeSpeakers", () => {
  it("gives each line to the person whose indicator was on, one utterance per turn", () => {
    const words = [...spoken("i will send the report tomorrow", 1000), ...spoken("thanks alice", 4000)];
    const utterances = attributeSpeakers(words, [alice(900, 3500), bob(3900, 5000)]);
    expect(utterances.map((u) => [u.speaker?.name, u.text])).toEqual([
      ["Alice", "i will send the report tomorrow"],
      ["Bob", "thanks alice"],
    ]);
    expect(utterances[0]).toMatchObject({ speaker: ALICE, startMs: 1000, endMs: 3350 });
    expect(utterances[0]!.words).toHaveLength(6);
    expect(utterances[0]!.words[0]).toEqual({ text: "i", startMs: 1000, endMs: 1350, confidence: 0.9 });
  });

  it("gives a word overlapping two turns to the larger overlap", () => {
    const utterances = attributeSpeakers([word("okay", 1000, 2000)], [alice(0, 1300), bob(1300, 3000)]);
    expect(utterances[0]!.speaker).toEqual(BOB);
  });

  it("breaks a tie of overlaps in favour of the turn that started earlier (who was already talking)", () => {
    const utterances = attributeSpeakers([word("right", 2000, 2400)], [bob(1500, 5000), alice(1000, 5000)]);
    expect(utterances[0]!.speaker).toEqual(ALICE);
  });

  it("gives a word just before a turn to it (the indicator lights up late)", () => {
    const utterances = attributeSpeakers([word("so", 700, 1000)], [alice(1300, 3000)]);
    expect(utterances[0]!.speaker).toEqual(ALICE);
  });

  it("gives a word just after a turn to it (the recognizer's word end runs on)", () => {
    const utterances = attributeSpeakers([word("done", 3400, 3800)], [alice(1000, 3000)]);
    expect(utterances[0]!.speaker).toEqual(ALICE);
  });

  it("never takes a word from the turn it overlaps for a neighbour's lag window", () => {
    // Bob's first word starts 100 ms after Alice's indicator went off: well within Alice's tail,
    // but it overlaps Bob's own turn, which wins.
    const utterances = attributeSpeakers([word("hello", 3100, 3600)], [alice(1000, 3000), bob(3300, 6000)]);
    expect(utterances[0]!.speaker).toEqual(BOB);
  });

  it("takes the nearer turn in a gap between two, and the earlier one at equal distance", () => {
    const turns = [alice(0, 1000), bob(2000, 3000)];
    expect(attributeSpeakers([word("a", 1100, 1500)], turns)[0]!.speaker).toEqual(ALICE);
    expect(attributeSpeakers([word("b", 1600, 1900)], turns)[0]!.speaker).toEqual(BOB);
    expect(attributeSpeakers([word("c", 1300, 1700)], turns)[0]!.speaker).toEqual(ALICE);
  });

  it("leaves a word far from every turn without a speaker", () => {
    const utterances = attributeSpeakers(
      [word("hi", 0, 300), ...spoken("welcome everyone", 5000)],
      [alice(5000, 6000)],
    );
    expect(utterances.map((u) => [u.speaker, u.text])).toEqual([
      [null, "hi"],
      [ALICE, "welcome everyone"],
    ]);
  });

  it("leaves every word without a speaker when there is no timeline", () => {
    const utterances = attributeSpeakers(spoken("nobody is known here", 0), []);
    expect(utterances).toHaveLength(1);
    expect(utterances[0]).toMatchObject({ speaker: null, text: "nobody is known here" });
  });

  it("honours custom lag windows", () => {
    const words = [word("late", 1800, 2000)];
    expect(attributeSpeakers(words, [alice(0, 1000)])[0]!.speaker).toBeNull();
    expect(attributeSpeakers(words, [alice(0, 1000)], { tailMs: 1000 })[0]!.speaker).toEqual(ALICE);
    expect(
      attributeSpeakers([word("early", 0, 200)], [alice(1000, 2000)], { leadMs: 0 })[0]!.speaker,
    ).toBeNull();
  });

  it("starts a new utterance after a long pause of the same speaker", () => {
    const words = [...spoken("first part", 0), ...spoken("second part", 3000)];
    const utterances = attributeSpeakers(words, [alice(0, 5000)]);
    expect(utterances.map((u) => u.text)).toEqual(["first part", "second part"]);
    expect(attributeSpeakers(words, [alice(0, 5000)], { pauseMs: 5000 })).toHaveLength(1);
  });

  it("alternates utterances as speakers alternate, even when one speaks twice", () => {
    const words = [...spoken("one", 0), ...spoken("two", 1000), ...spoken("three", 2000)];
    const utterances = attributeSpeakers(words, [alice(0, 800), bob(900, 1800), alice(1900, 2800)]);
    expect(utterances.map((u) => `${u.speaker?.name}:${u.text}`)).toEqual([
      "Alice:one",
      "Bob:two",
      "Alice:three",
    ]);
  });

  it("keeps one participant renamed mid-utterance in one utterance, named as at its start", () => {
    const turns = [alice(0, 1000), { participantId: "p-a", name: "Alice Smith", startMs: 1000, endMs: 2000 }];
    const utterances = attributeSpeakers([word("a", 100, 500), word("b", 1100, 1500)], turns);
    expect(utterances).toHaveLength(1);
    expect(utterances[0]).toMatchObject({ speaker: ALICE, text: "a b" });
    const later = attributeSpeakers(
      [word("a", 100, 500), word("b", 3600, 3900)],
      [...turns, { ...turns[1]!, startMs: 3500, endMs: 4000 }],
    );
    expect(later[1]!.speaker).toEqual({ participantId: "p-a", name: "Alice Smith" });
  });

  it("averages the known confidences and gives null when none is known", () => {
    const words = [word("a", 0, 100, 0.5), word("b", 200, 300, null), word("c", 400, 500, 1)];
    expect(attributeSpeakers(words, [alice(0, 600)])[0]!.confidence).toBeCloseTo(0.75);
    const unknown = [word("a", 0, 100, null), word("b", 200, 300, null)];
    expect(attributeSpeakers(unknown, [alice(0, 600)])[0]!.confidence).toBeNull();
  });

  it("splits on a provider's diarization hint without ever naming anyone from it", () => {
    const words = [
      { ...word("hi", 0, 300), speakerHint: "A" },
      { ...word("there", 400, 700), speakerHint: "B" },
    ];
    const withTimeline = attributeSpeakers(words, [alice(0, 1000)]);
    expect(withTimeline.map((u) => [u.speaker, u.text])).toEqual([
      [ALICE, "hi"],
      [ALICE, "there"],
    ]);
    const without = attributeSpeakers(words, []);
    expect(without.map((u) => u.speaker)).toEqual([null, null]);
    expect(without[0]!.words[0]).not.toHaveProperty("speakerHint");
  });

  it("sorts words and turns given out of order", () => {
    const words = [word("second", 1000, 1400), word("first", 0, 400)];
    const utterances = attributeSpeakers(words, [bob(900, 2000), alice(0, 800)]);
    expect(utterances.map((u) => `${u.speaker?.name}:${u.text}`)).toEqual(["Alice:first", "Bob:second"]);
  });

  it("accepts turns before the recording started (negative times) and ignores inverted ones", () => {
    const utterances = attributeSpeakers([word("early", 0, 300)], [alice(-2000, 200), bob(500, 100)]);
    expect(utterances[0]!.speaker).toEqual(ALICE);
  });

  it("finds a long turn that started long before many short ones (the index's backward scan)", () => {
    const turns = [
      alice(0, 100_000),
      ...Array.from({ length: 50 }, (_, i) => bob(1000 + i * 1000, 1000 + i * 1000 + 10)),
    ];
    // The word overlaps Alice's long turn by 400 ms and a short Bob turn by 10 ms.
    const utterances = attributeSpeakers([word("still", 30_000, 30_400)], turns);
    expect(utterances[0]!.speaker).toEqual(ALICE);
  });

  it("gives a zero-length word inside a turn to that turn", () => {
    expect(attributeSpeakers([word("uh", 1500, 1500)], [alice(1000, 2000)])[0]!.speaker).toEqual(ALICE);
  });

  it("answers nothing for no words", () => {
    expect(attributeSpeakers([], [alice(0, 1000)])).toEqual([]);
  });

  it("attributes a 4-hour meeting's worth of words and turns", () => {
    // 36,000 words and 4,000 turns: a scan of every turn per word would be 144 million steps.
    const turns = Array.from({ length: 4000 }, (_, i) => (i % 2 ? bob : alice)(i * 3600, i * 3600 + 3500));
    const words = Array.from({ length: 36_000 }, (_, i) => word("w", i * 400, i * 400 + 350));
    const utterances = attributeSpeakers(words, turns);
    expect(utterances).toHaveLength(4000);
    expect(utterances.every((u, i) => u.speaker?.name === (i % 2 ? "Bob" : "Alice"))).toBe(true);
  });
});
