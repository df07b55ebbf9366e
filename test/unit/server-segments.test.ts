import { describe, expect, it } from "vitest";
import { missingSegments } from "../../src/server/services/recording-segments.js";

/** A set that counts how often it is asked: the work a completion does. */
class CountingSet extends Set<number> {
  asked = 0;
  override has(value: number): boolean {
    this.asked += 1;
    return super.has(value);
  }
}

describe("missingSegments", () => {
  it("lists the gaps below the count, one past the limit to say there are more", () => {
    expect(missingSegments(new Set([0, 1, 3]), 4, 20)).toEqual([2]);
    expect(missingSegments(new Set([0, 1, 2, 3]), 4, 20)).toEqual([]);
    expect(missingSegments(new Set([5]), 30, 3)).toEqual([0, 1, 2, 3]);
  });

  it("costs what was stored, not what a runner's count claims", () => {
    const stored = new CountingSet([0, 1, 2]);
    const missing = missingSegments(stored, 10_000_001, 20);
    expect(missing).toEqual(Array.from({ length: 21 }, (_, i) => i + 3));
    expect(stored.asked).toBe(3 + 21);
  });
});
