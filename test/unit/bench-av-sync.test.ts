import { describe, expect, it } from "vitest";
import { offsets, stretchesAbove } from "../../bench/av-sync.js";

/** A signal sampled every `step` s over `seconds`, high inside [start, start + length) of each pulse. */
function pulses(starts: number[], length: number, step: number, seconds: number): Array<[number, number]> {
  const samples: Array<[number, number]> = [];
  for (let i = 0; i * step < seconds; i++) {
    const t = i * step;
    samples.push([t, starts.some((s) => t >= s && t < s + length) ? 1 : 0]);
  }
  return samples;
}

describe("the A/V sync bench's analysis", () => {
  it("finds each pulse as one stretch", () => {
    const found = stretchesAbove(pulses([1, 2.5], 0.2, 0.001, 4), 0.001);
    expect(found).toHaveLength(2);
    expect(found[0]?.start).toBeCloseTo(1, 3);
    expect(found[0]?.end).toBeCloseTo(1.2, 3);
    expect(found[1]?.start).toBeCloseTo(2.5, 3);
  });

  it("recovers a known picture delay from 25 fps frames against 1 ms audio, without frame bias", () => {
    const period = 1.013;
    const beepStarts = Array.from({ length: 20 }, (_, k) => 0.5 + k * period);
    const delay = 0.03; // the picture 30 ms after the sound
    const audio = stretchesAbove(pulses(beepStarts, 0.2, 0.001, 22), 0.001);
    const video = stretchesAbove(
      pulses(
        beepStarts.map((s) => s + delay),
        0.2,
        0.04,
        22,
      ),
      0,
    );
    const found = offsets(video, audio);
    expect(found).toHaveLength(20);
    const mean = found.reduce((a, b) => a + b, 0) / found.length;
    expect(mean).toBeCloseTo(delay, 2);
    for (const offset of found) expect(Math.abs(offset - delay)).toBeLessThan(0.025);
  });

  it("leaves out a flash with no beep near it", () => {
    const audio = [{ start: 1, end: 1.2 }];
    const video = [
      { start: 1.01, end: 1.21 },
      { start: 5, end: 5.2 },
    ];
    expect(offsets(video, audio)).toEqual([expect.closeTo(0.01, 5)]);
  });
});
