import { describe, expect, it } from "vitest";
import { dropoutsIn, type Silence, spokenLines } from "../../bench/speech-gaps.js";

const silence = (start: number, length: number): Silence => ({ start, end: start + length });

/** Two clean clips: the first has a 35 ms quiet stretch 2.38 s after its first sound, the second none. */
const clean = [
  ...spokenLines([silence(0, 0.14), silence(2.52, 0.035), silence(3.4, 0.17)], 3.57),
  ...spokenLines([silence(0, 0.2), silence(2.9, 0.2)], 3.1),
];

describe("dropouts in a recorded script (bench/speech-gaps.ts)", () => {
  it("splits a recording into its lines at the pauses, with the shorter silences inside each", () => {
    const lines = spokenLines([silence(0, 4), silence(5, 0.05), silence(7.3, 1.2), silence(11.3, 0.7)], 12);
    expect(lines).toEqual([
      { start: 4, end: 7.3, gaps: [silence(5, 0.05)] },
      { start: 8.5, end: 11.3, gaps: [] },
    ]);
    expect(clean.map((line) => line.gaps.length)).toEqual([1, 0]);
    // The last silence ending a millisecond before the file does leaves no line after it.
    expect(spokenLines([silence(0, 1), silence(3, 8.999)], 12)).toEqual([{ start: 1, end: 3, gaps: [] }]);
  });

  it("takes a gap where the clean clip is quiet for the clip's own, even a little longer", () => {
    // Line 1 starts at 4.0 s: its clip's quiet stretch (2.38 s in) comes out 41 ms long at 6.40 s.
    const recorded = spokenLines(
      [silence(0, 4), silence(6.4, 0.041), silence(7.26, 1), silence(11.2, 1)],
      12.2,
    );
    expect(recorded).toHaveLength(2);
    expect(dropoutsIn(recorded, clean)).toEqual([]);
  });

  it("counts a gap where the clean clip has sound, and one shorter than a dropout not at all", () => {
    const recorded = spokenLines(
      [
        silence(0, 4),
        silence(5.1, 0.1),
        silence(6.4, 0.041),
        silence(7.26, 1),
        silence(9.3, 0.03),
        silence(11.2, 1),
      ],
      12.2,
    );
    expect(dropoutsIn(recorded, clean)).toEqual([
      { line: 0, at: expect.closeTo(1.1, 5), length: expect.closeTo(0.1, 5) },
    ]);
  });

  it("counts a line cut in two (or lost) as a dropout", () => {
    const recorded = spokenLines([silence(0, 4), silence(5, 0.5), silence(7.26, 1), silence(11.2, 1)], 12.2);
    expect(recorded).toHaveLength(3);
    expect(dropoutsIn(recorded, clean).length).toBeGreaterThanOrEqual(1);
  });
});
