import { describe, expect, it } from "vitest";
import { wordAccuracy, wordErrorRate } from "../../src/intelligence/word-error-rate.js";

describe("wordErrorRate", () => {
  it("is 0 for the same words, whatever the case and punctuation", () => {
    expect(wordErrorRate("I will send the report, tomorrow.", "i will send the report tomorrow")).toBe(0);
  });

  it("counts substitutions, deletions and insertions against the reference's length", () => {
    expect(
      wordErrorRate("we decided to ship the new version", "we decided to shape the new version"),
    ).toBeCloseTo(1 / 7);
    expect(wordErrorRate("send the report tomorrow", "send report tomorrow")).toBeCloseTo(1 / 4);
    expect(wordErrorRate("send the report tomorrow", "send you the report tomorrow")).toBeCloseTo(1 / 4);
    expect(wordErrorRate("a b c", "x y z")).toBe(1);
  });

  it("finds the cheapest alignment, not the position-by-position comparison", () => {
    // Shifted by one inserted word: one error, not six.
    expect(wordErrorRate("one two three four five six", "zero one two three four five six")).toBeCloseTo(
      1 / 6,
    );
  });

  it("handles empty sides", () => {
    expect(wordErrorRate("", "")).toBe(0);
    expect(wordErrorRate("", "hello")).toBe(1);
    expect(wordErrorRate("hello there", "")).toBe(1);
  });

  it("keeps apostrophes and accepts typographic ones", () => {
    expect(wordErrorRate("I\u2019ll send it", "i'll send it")).toBe(0);
    expect(wordErrorRate("I'll send it", "ill send it")).toBeCloseTo(1 / 3);
  });
});

describe("wordAccuracy", () => {
  it("is 1 − WER, never below 0", () => {
    expect(wordAccuracy("send the report", "send a report")).toBeCloseTo(2 / 3);
    expect(wordAccuracy("yes", "no no no no")).toBe(0);
  });
});
