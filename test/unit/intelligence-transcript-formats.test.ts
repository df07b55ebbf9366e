import { describe, expect, it } from "vitest";
import {
  MAX_CUE_CHARS,
  MAX_CUE_MS,
  MIN_CUE_MS,
  TRANSCRIPT_CONTENT_TYPES,
  TRANSCRIPT_FORMATS,
  renderTranscript,
  subtitleCues,
  toPlainText,
  toSrt,
  toWebVtt,
} from "../../src/intelligence/transcript-formats.js";
import type { Utterance } from "../../src/intelligence/types.js";

type Speaker = Utterance["speaker"];
const ALICE: Speaker = { participantId: "p-a", name: "Alice" };
const BOB: Speaker = { participantId: "p-b", name: "Bob" };

/** An utterance made of `[text, startMs, endMs]` words, as attribution makes them. */
function said(speaker: Speaker, words: Array<[string, number, number]>): Utterance {
  return {
    speaker,
    startMs: words[0]![1],
    endMs: Math.max(...words.map(([, , end]) => end)),
    text: words.map(([text]) => text).join(" "),
    confidence: 0.9,
    words: words.map(([text, startMs, endMs]) => ({ text, startMs, endMs, confidence: 0.9 })),
  };
}

/** An utterance without word times (as some engines give), possibly with its times out of order. */
function bare(speaker: Speaker, text: string, startMs: number, endMs: number): Utterance {
  return { speaker, startMs, endMs, text, confidence: null, words: [] };
}

/** `count` words "word01".."wordNN", each `lengthMs` long, one every `stepMs` from `startMs`. */
function evenly(count: number, startMs: number, stepMs: number, lengthMs: number, stem = "word") {
  return Array.from({ length: count }, (_, i): [string, number, number] => [
    `${stem}${String(i + 1).padStart(2, "0")}`,
    startMs + i * stepMs,
    startMs + i * stepMs + lengthMs,
  ]);
}

const meeting = [
  said(ALICE, [
    ["Hello", 1000, 1400],
    ["everyone", 1450, 2000],
  ]),
  said(BOB, [
    ["Thanks", 2500, 2900],
    ["Alice", 2950, 3400],
  ]),
  said(ALICE, [
    ["Let's", 65_000, 65_300],
    ["begin", 65_350, 65_900],
  ]),
];

describe("transcript formats", () => {
  it("lists the formats and the text formats' content types", () => {
    expect(TRANSCRIPT_FORMATS).toEqual(["json", "txt", "srt", "vtt"]);
    expect(TRANSCRIPT_CONTENT_TYPES).toEqual({
      txt: "text/plain; charset=utf-8",
      srt: "application/x-subrip; charset=utf-8",
      vtt: "text/vtt; charset=utf-8",
    });
    expect(renderTranscript("txt", meeting)).toBe(toPlainText(meeting));
    expect(renderTranscript("srt", meeting)).toBe(toSrt(meeting));
    expect(renderTranscript("vtt", meeting)).toBe(toWebVtt(meeting));
  });

  it("writes a two-speaker meeting as plain text lines", () => {
    expect(toPlainText(meeting)).toBe(
      "[00:01] Alice: Hello everyone\n[00:02] Bob: Thanks Alice\n[01:05] Alice: Let's begin\n",
    );
  });

  it("writes a two-speaker meeting as SubRip", () => {
    expect(toSrt(meeting)).toBe(
      [
        "1\n00:00:01,000 --> 00:00:02,000\nAlice: Hello everyone\n",
        "2\n00:00:02,500 --> 00:00:03,400\nBob: Thanks Alice\n",
        "3\n00:01:05,000 --> 00:01:05,900\nAlice: Let's begin\n",
      ].join("\n"),
    );
  });

  it("writes a two-speaker meeting as WebVTT with voice spans", () => {
    expect(toWebVtt(meeting)).toBe(
      [
        "WEBVTT\n",
        "00:00:01.000 --> 00:00:02.000\n<v Alice>Hello everyone\n",
        "00:00:02.500 --> 00:00:03.400\n<v Bob>Thanks Alice\n",
        "00:01:05.000 --> 00:01:05.900\n<v Alice>Let's begin\n",
      ].join("\n"),
    );
  });

  it("writes nothing but the WebVTT header for no utterances", () => {
    expect(toPlainText([])).toBe("");
    expect(toSrt([])).toBe("");
    expect(toWebVtt([])).toBe("WEBVTT\n");
  });

  it("counts hours once a meeting passes its first", () => {
    const late = [
      bare(BOB, "still here", 3_599_999, 3_600_900),
      bare(ALICE, "an hour in", 3_723_004, 3_724_000),
      bare(BOB, "ten hours in", 36_000_000, 36_001_000),
    ];
    expect(toPlainText(late)).toBe(
      "[59:59] Bob: still here\n[1:02:03] Alice: an hour in\n[10:00:00] Bob: ten hours in\n",
    );
    expect(toSrt(late)).toContain("00:59:59,999 --> 01:00:00,900\n");
    expect(toSrt(late)).toContain("01:02:03,004 --> 01:02:04,000\n");
    expect(toWebVtt(late)).toContain("10:00:00.000 --> 10:00:01.000\n");
  });

  it("escapes WebVTT's markup characters in names and text, and keeps each utterance on one line", () => {
    const tricky = [
      bare({ participantId: "p-x", name: "<b>Tom & Jerry</b>" }, "a -> b\n\nc < d && e-->", 0, 900),
    ];
    expect(toWebVtt(tricky)).toBe(
      "WEBVTT\n\n00:00:00.000 --> 00:00:00.900\n<v &lt;b&gt;Tom &amp; Jerry&lt;/b&gt;>a -&gt; b c &lt; d &amp;&amp; e--&gt;\n",
    );
    // SubRip has no escapes: its arrow is written as "->".
    expect(toSrt(tricky)).toBe("1\n00:00:00,000 --> 00:00:00,900\n<b>Tom & Jerry</b>: a -> b c < d && e->\n");
    expect(toPlainText(tricky)).toBe("[00:00] <b>Tom & Jerry</b>: a -> b c < d && e-->\n");
  });

  it("names nobody when the speaker is unknown, and leaves blank utterances out", () => {
    const anonymous = [
      bare(null, "who said that", 2000, 3000),
      bare({ participantId: "p-q", name: "  " }, "and this", 4000, 5000),
      bare(ALICE, "  \n ", 6000, 7000),
    ];
    expect(toPlainText(anonymous)).toBe(
      "[00:02] Unknown speaker: who said that\n[00:04] Unknown speaker: and this\n",
    );
    expect(toSrt(anonymous)).toBe(
      "1\n00:00:02,000 --> 00:00:03,000\nwho said that\n\n2\n00:00:04,000 --> 00:00:05,000\nand this\n",
    );
    expect(toWebVtt(anonymous)).toBe(
      "WEBVTT\n\n00:00:02.000 --> 00:00:03.000\nwho said that\n\n00:00:04.000 --> 00:00:05.000\nand this\n",
    );
  });

  it("splits a long utterance at word boundaries: by characters, then by time", () => {
    // 20 words of 6 characters: 11 of them are 76 characters, a 12th would make 83.
    const wordy = said(ALICE, evenly(20, 10_000, 500, 300));
    expect(subtitleCues([wordy])).toEqual([
      {
        startMs: 10_000,
        endMs: 15_300,
        speaker: "Alice",
        text: evenly(11, 0, 0, 0)
          .map(([t]) => t)
          .join(" "),
      },
      {
        startMs: 15_500,
        endMs: 19_800,
        speaker: "Alice",
        text: evenly(20, 0, 0, 0)
          .slice(11)
          .map(([t]) => t)
          .join(" "),
      },
    ]);
    // 10 one-letter words a second apart: the 8th would end 7.3 s after the first began.
    const slow = said(BOB, evenly(10, 0, 1000, 300, "")); // texts "01".."10"
    expect(subtitleCues([slow]).map((cue) => [cue.startMs, cue.endMs, cue.text])).toEqual([
      [0, 6300, "01 02 03 04 05 06 07"],
      [7000, 9300, "08 09 10"],
    ]);
    expect(toSrt([slow])).toBe(
      "1\n00:00:00,000 --> 00:00:06,300\nBob: 01 02 03 04 05 06 07\n\n2\n00:00:07,000 --> 00:00:09,300\nBob: 08 09 10\n",
    );
  });

  it("fills a cue to exactly MAX_CUE_CHARS, counting the spaces between words", () => {
    const quick = (text: string, count: number) =>
      said(
        ALICE,
        Array.from({ length: count }, (_, i): [string, number, number] => [text, i * 100, i * 100 + 50]),
      );
    // "ab ab … ab": 27 words are 80 characters; 41 "a"s are 81.
    expect(subtitleCues([quick("ab", 28)]).map((cue) => cue.text.length)).toEqual([80, 2]);
    expect(subtitleCues([quick("a", 41)]).map((cue) => cue.text.length)).toEqual([79, 1]);
  });

  it("keeps an utterance without word times as one cue, however long", () => {
    const long = bare(ALICE, "x".repeat(200), 0, 30_000);
    expect(subtitleCues([long])).toEqual([
      { startMs: 0, endMs: 30_000, speaker: "Alice", text: "x".repeat(200) },
    ]);
  });

  it("gives short cues a minimum length, mends ends before starts, and never overlaps the next cue", () => {
    const cues = subtitleCues([
      bare(ALICE, "zero", 1000, 1000),
      bare(BOB, "backwards", 5000, 4000),
      bare(ALICE, "first", 8000, 9000),
      bare(BOB, "overlapping", 8500, 9500),
      bare(ALICE, "same start", 12_000, 13_000),
      bare(BOB, "same start too", 12_000, 12_800),
      bare(ALICE, "zero again", 20_000, 20_000),
      bare(BOB, "soon after", 20_200, 21_000),
      bare(ALICE, "out of order", 500, 900),
    ]);
    expect(cues.map((cue) => [cue.text, cue.startMs, cue.endMs])).toEqual([
      ["out of order", 500, 1000],
      ["zero", 1000, 1000 + MIN_CUE_MS],
      ["backwards", 5000, 5000 + MIN_CUE_MS],
      ["first", 8000, 8500],
      ["overlapping", 8500, 9500],
      ["same start", 12_000, 12_001],
      ["same start too", 12_001, 12_800],
      ["zero again", 20_000, 20_200],
      ["soon after", 20_200, 21_000],
    ]);
  });
});

describe("SRT and WebVTT round trip", () => {
  /** Forty turns of three speakers (one unknown, one whose name needs escaping), crossing the first hour. */
  function generatedMeeting(): Utterance[] {
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % below;
    };
    const vocabulary = [
      "we",
      "will",
      "ship",
      "the",
      "report",
      "tomorrow",
      "decided",
      "budget",
      "agenda",
      "okay",
    ];
    const speakers: Speaker[] = [ALICE, { participantId: "p-z", name: "Zoë O'Brien & <Co>" }, null];
    const utterances: Utterance[] = [];
    let t = 3_560_000;
    for (let turn = 0; turn < 40; turn++) {
      const words: Array<[string, number, number]> = [];
      for (let n = 1 + random(40); n > 0; n--) {
        const length = MIN_CUE_MS + random(400);
        words.push([vocabulary[random(vocabulary.length)]!, t, t + length]);
        t += length + 50 + random(350);
      }
      utterances.push(said(speakers[turn % 3]!, words));
      t += 300 + random(1700);
    }
    return utterances;
  }

  interface ParsedCue {
    startMs: number;
    endMs: number;
    speaker: string | null;
    text: string;
  }

  function parseTime(time: string, decimalMark: string): number {
    const match = new RegExp(`^(\\d{2,}):(\\d{2}):(\\d{2})\\${decimalMark}(\\d{3})$`).exec(time);
    if (!match) throw new Error(`bad cue time ${time}`);
    const [h, m, s, ms] = match.slice(1).map(Number) as [number, number, number, number];
    return ((h * 60 + m) * 60 + s) * 1000 + ms;
  }

  function parseTiming(line: string, decimalMark: string): [number, number] {
    const [start, end, ...rest] = line.split(" --> ");
    if (rest.length || !end) throw new Error(`bad timing line ${line}`);
    return [parseTime(start!, decimalMark), parseTime(end, decimalMark)];
  }

  function parseSrt(srt: string): ParsedCue[] {
    expect(srt.endsWith("\n")).toBe(true);
    return srt
      .slice(0, -1)
      .split("\n\n")
      .map((block, i) => {
        const [index, timing, line, ...rest] = block.split("\n");
        expect([index, rest]).toEqual([String(i + 1), []]);
        const [startMs, endMs] = parseTiming(timing!, ",");
        const named = /^(.+?): (.*)$/.exec(line!);
        return { startMs, endMs, speaker: named?.[1] ?? null, text: named?.[2] ?? line! };
      });
  }

  function parseVtt(vtt: string): ParsedCue[] {
    expect(vtt.startsWith("WEBVTT\n\n")).toBe(true);
    const unescape = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    return vtt
      .slice("WEBVTT\n\n".length, -1)
      .split("\n\n")
      .map((block) => {
        const [timing, line, ...rest] = block.split("\n");
        expect(rest).toEqual([]);
        expect(line).not.toMatch(/-->|&(?!amp;|lt;|gt;)/);
        const [startMs, endMs] = parseTiming(timing!, ".");
        const voiced = /^<v ([^>]+)>(.*)$/.exec(line!);
        return {
          startMs,
          endMs,
          speaker: voiced ? unescape(voiced[1]!) : null,
          text: unescape(voiced?.[2] ?? line!),
        };
      });
  }

  /** Walks the cues through the utterances' words: every word once, in order, at its own times. */
  function expectCuesMatchWords(cues: ParsedCue[], utterances: Utterance[]) {
    const words = utterances.flatMap((u) =>
      u.words.map((word) => ({ ...word, speaker: u.speaker?.name ?? null })),
    );
    let next = 0;
    for (const cue of cues) {
      const texts = cue.text.split(" ");
      const held = words.slice(next, next + texts.length);
      next += texts.length;
      expect(held.map((word) => word.text)).toEqual(texts);
      expect(new Set(held.map((word) => word.speaker))).toEqual(new Set([cue.speaker]));
      expect([cue.startMs, cue.endMs]).toEqual([held[0]!.startMs, held.at(-1)!.endMs]);
      expect(cue.endMs - cue.startMs).toBeLessThanOrEqual(MAX_CUE_MS);
      expect(cue.text.length).toBeLessThanOrEqual(MAX_CUE_CHARS);
    }
    expect(next).toBe(words.length);
    cues.slice(1).forEach((cue, i) => expect(cue.startMs).toBeGreaterThanOrEqual(cues[i]!.endMs));
  }

  it("gives back every word at its times from our SRT", () => {
    const utterances = generatedMeeting();
    const cues = parseSrt(toSrt(utterances));
    expect(cues.length).toBeGreaterThan(utterances.length); // some long turns were split
    expectCuesMatchWords(cues, utterances);
  });

  it("gives back every word at its times, and the escaped speaker, from our WebVTT", () => {
    const utterances = generatedMeeting();
    const cues = parseVtt(toWebVtt(utterances));
    expect(cues.length).toBeGreaterThan(utterances.length);
    expect(cues.some((cue) => cue.speaker === "Zoë O'Brien & <Co>")).toBe(true);
    expect(cues.some((cue) => cue.speaker === null)).toBe(true);
    expectCuesMatchWords(cues, utterances);
  });

  it("writes hostile names safely: no bidi override, line break, control or cue arrow gets through", () => {
    // A name ending in a right-to-left override (U+202E) would display the words after it, on the
    // same line, reversed; the others try to end the cue early or fake a timing line.
    const RLO = "\u202E";
    const hostile = [
      bare({ participantId: "p-m", name: `Mallory${RLO}` }, "I never agreed to this", 0, 900),
      bare(
        { participantId: "p-e", name: "Eve\u2066\u202B\r\n\n2\n00:00:05,000 --> 00:00:09,000\nAlice" },
        "yes",
        1000,
        1900,
      ),
      bare(
        { participantId: "p-n", name: "Null\u0000Bell\u0007\u0085Line\u2028Para\u2029End" },
        `done\u202D${RLO}!`,
        2000,
        2900,
      ),
      bare({ participantId: "p-a", name: "Arrow --> Man" }, "a ---> b", 3000, 3900),
      bare({ participantId: "p-x", name: `${RLO}\u202C` }, "whose?", 4000, 4900),
    ];
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    const bidiOrControl = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069\u2028\u2029]/;

    const srt = toSrt(hostile);
    expect(srt).not.toMatch(bidiOrControl);
    expect(srt).toBe(
      [
        "1\n00:00:00,000 --> 00:00:00,900\nMallory: I never agreed to this\n",
        "2\n00:00:01,000 --> 00:00:01,900\nEve 2 00:00:05,000 -> 00:00:09,000 Alice: yes\n",
        "3\n00:00:02,000 --> 00:00:02,900\nNullBell Line Para End: done!\n",
        "4\n00:00:03,000 --> 00:00:03,900\nArrow -> Man: a -> b\n",
        // A name of nothing but controls names nobody.
        "5\n00:00:04,000 --> 00:00:04,900\nwhose?\n",
      ].join("\n"),
    );
    expect(parseSrt(srt).map((cue) => cue.speaker)).toEqual([
      "Mallory",
      "Eve 2 00:00:05,000 -> 00:00:09,000 Alice",
      "NullBell Line Para End",
      "Arrow -> Man",
      null,
    ]);

    const vtt = toWebVtt(hostile);
    expect(vtt).not.toMatch(bidiOrControl);
    expect(parseVtt(vtt).map((cue) => [cue.speaker, cue.text])).toEqual([
      ["Mallory", "I never agreed to this"],
      ["Eve 2 00:00:05,000 --> 00:00:09,000 Alice", "yes"],
      ["NullBell Line Para End", "done!"],
      ["Arrow --> Man", "a ---> b"],
      [null, "whose?"],
    ]);

    expect(toPlainText(hostile)).not.toMatch(bidiOrControl);
    expect(toPlainText(hostile).split("\n")).toHaveLength(hostile.length + 1);
  });
});
