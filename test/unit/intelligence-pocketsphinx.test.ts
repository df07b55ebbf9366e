import { describe, expect, it } from "vitest";
import { parseTimeLine } from "../../src/intelligence/pocketsphinx.js";

describe("parseTimeLine (pocketsphinx -time yes output)", () => {
  it("reads a word with its times in milliseconds and its posterior probability", () => {
    expect(parseTimeLine("report 0.960 1.470 0.993918")).toEqual({
      text: "report",
      startMs: 960,
      endMs: 1470,
      confidence: 0.993918,
    });
  });

  it("strips the alternate pronunciation's number", () => {
    expect(parseTimeLine("will(2) 0.280 0.440 0.654588")?.text).toBe("will");
    expect(parseTimeLine("for(3) 2.230 2.450 0.523680")?.text).toBe("for");
  });

  it("keeps apostrophes inside words", () => {
    expect(parseTimeLine("i'll 1.000 1.200 0.9")?.text).toBe("i'll");
  });

  it("skips segment markers, silences and fillers", () => {
    for (const line of [
      "<s> 0.070 0.160 0.999700",
      "</s> 2.100 2.270 1.000000",
      "<sil> 1.630 1.650 0.598721",
      "[NOISE] 4.290 4.500 0.594009",
      "[SPEECH] 4.290 4.500 0.594009",
      "++UM++ 1.0 1.2 0.5",
    ]) {
      expect(parseTimeLine(line), line).toBeNull();
    }
  });

  it("ignores the hypothesis line printed before each segment's words", () => {
    expect(parseTimeLine("i will send the report tomorrow")).toBeNull();
    expect(parseTimeLine("good morning everyone")).toBeNull();
    expect(parseTimeLine("")).toBeNull();
  });

  it("clamps the probability into 0..1 (pocketsphinx prints 1.0009 at times)", () => {
    expect(parseTimeLine("found 9.630 10.070 1.000901")?.confidence).toBe(1);
    expect(parseTimeLine("found 9.630 10.070 -0.001")?.confidence).toBe(0);
    expect(parseTimeLine("you 0.790 0.840 5.239e-3")?.confidence).toBeCloseTo(0.005239, 6);
  });

  it("rounds times to whole milliseconds", () => {
    const word = parseTimeLine("tomorrow 1.4805 2.0904 0.7");
    expect(word).toMatchObject({ startMs: 1481, endMs: 2090 });
  });
});
