import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CallbackEventBody } from "../../src/core/index.js";
import type { Decoder } from "../../src/runner/live-transcript/pocketsphinx-decoder.js";
import { LiveRecognizer } from "../../src/runner/live-transcript/recognizer.js";
import { SpeakerTimeline } from "../../src/runner/live-transcript/speakers.js";
import type { SegmentEvent } from "../../src/runner/live-transcript/speech-segmenter.js";
import { UtteranceReports } from "../../src/runner/live-transcript/utterances.js";

/**
 * How the recognizer schedules decodes and turns their answers into partials and finals, with a
 * decoder the test answers by hand and the segmenter's events played by the test. Positions are
 * samples (16 per ms); the stream's sample 0 is 2 s into the recording.
 */

const ms = (milliseconds: number) => milliseconds * 16;
const ORIGIN_MS = 2_000;

/** A decoder whose answers the test gives, one request at a time. */
class FakeDecoder implements Decoder {
  readonly requests: string[] = [];
  private answer: { resolve(text: string): void; reject(error: Error): void } | null = null;

  decode(name: string, fromFrame: number, toFrame: number): Promise<string> {
    if (this.answer) throw new Error("two decodes at once");
    this.requests.push(`${name} ${fromFrame}-${toFrame}`);
    return new Promise((resolve, reject) => {
      this.answer = { resolve, reject };
    });
  }

  get busy(): boolean {
    return this.answer !== null;
  }

  /** Answers the request under way, and lets the recognizer act on it. */
  async says(text: string | Error): Promise<void> {
    const answer = this.answer;
    if (!answer) throw new Error("nothing was asked");
    this.answer = null;
    if (text instanceof Error) answer.reject(text);
    else answer.resolve(text);
    await new Promise((resolve) => setImmediate(resolve));
  }

  async close(): Promise<void> {}
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "meetbot-live-test-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setUp() {
  let now = 0;
  const decoder = new FakeDecoder();
  const reported: CallbackEventBody[] = [];
  const gaveUp: string[] = [];
  const recognizer = new LiveRecognizer({
    decoder,
    dir,
    toRecordingMs: (sample) => ORIGIN_MS + sample / 16,
    reports: new UtteranceReports({
      source: "pocketsphinx",
      idPrefix: "ps",
      language: "en-US",
      speakers: new SpeakerTimeline(() => 0),
      report: (body) => reported.push(body),
    }),
    log: pino({ level: "silent" }),
    onGiveUp: (why) => gaveUp.push(why),
    now: () => now,
  });
  const warm = recognizer.warmUp();
  await decoder.says("");
  await warm;
  decoder.requests.length = 0;
  let written = 0;
  const play = (event: SegmentEvent) => recognizer.onSegment(event);
  return {
    decoder,
    recognizer,
    reported,
    gaveUp,
    play,
    /** The clock the partials' budget runs on. */
    at: (t: number) => {
      now = t;
    },
    /** `ms` more of utterance `utterance`'s audio. */
    hear: (utterance: number, milliseconds: number) => {
      written += ms(milliseconds);
      play({ type: "audio", utterance, pcm: Buffer.alloc(ms(milliseconds) * 2, 1) });
    },
    written: () => written,
    events: () =>
      reported.map((e) =>
        e.type === "transcript.partial" || e.type === "transcript.final"
          ? `${e.type.slice(11)} ${e.data.utteranceId} ${e.data.startMs}-${e.data.endMs} "${e.data.text}"`
          : e.type,
      ),
  };
}

describe("LiveRecognizer", () => {
  it("decodes the growing utterance for partials (first after 0.7 s of speech, then each 1.5 s) and settles it for its final", async () => {
    const t = await setUp();
    // Audio from 1 s, speech from 1.3 s.
    t.play({ type: "start", utterance: 1, fromSample: ms(1000), speechFromSample: ms(1300) });
    t.hear(1, 900);
    expect(t.decoder.busy).toBe(false);
    t.hear(1, 100); // 0.7 s of speech
    expect(t.decoder.requests).toEqual(["u1 0-100"]);
    t.at(200);
    await t.decoder.says("thanks");
    t.at(1_000);
    t.hear(1, 1400);
    expect(t.decoder.busy).toBe(false);
    t.hear(1, 100);
    expect(t.decoder.requests.at(-1)).toEqual("u1 0-250");
    t.at(1_400);
    await t.decoder.says("thanks everyone");
    t.hear(1, 700);
    // Speech ended at 4 s; the segmenter ends the audio 200 ms past it (having noticed the end).
    t.play({ type: "end", utterance: 1, toSample: ms(4200), speechToSample: ms(4000) });
    expect(t.decoder.requests.at(-1)).toEqual("u1 0-320");
    await t.decoder.says("thanks everyone for joining");
    expect(t.events()).toEqual([
      'partial ps-1 3300-4000 "thanks"',
      'partial ps-1 3300-5500 "thanks everyone"',
      'final ps-1 3300-6000 "thanks everyone for joining"',
    ]);
    // Its file is gone; nothing waits.
    expect(readdirSync(dir)).toEqual([]);
    await t.recognizer.settled();
  });

  it("keeps partials within their share of the decoder's time", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 700);
    t.at(1_000);
    await t.decoder.says("one"); // took 1 s: the next partial waits 1 s × (1/0.2 − 1) = 4 s
    t.hear(1, 1500);
    t.at(4_900);
    t.hear(1, 100);
    expect(t.decoder.busy).toBe(false);
    t.at(5_000);
    t.hear(1, 100);
    expect(t.decoder.requests).toEqual(["u1 0-70", "u1 0-240"]);
  });

  it("settles each closed piece once, first, and builds partials and the final from the pieces", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 700);
    await t.decoder.says("we decided");
    t.hear(1, 2_800);
    // A pause from 3.2 s, the speech going on at 3.4: the first piece is closed in between.
    t.play({
      type: "cut",
      utterance: 1,
      atSample: ms(3_300),
      speechToSample: ms(3_200),
      nextSpeechFromSample: ms(3_400),
    });
    t.hear(1, 1_500);
    // The partial that was due when the cut came waits for the piece to settle.
    expect(t.decoder.requests).toEqual(["u1 0-70", "u1 0-350"]);
    await t.decoder.says("we decided to ship the");
    expect(t.decoder.requests).toEqual(["u1 0-70", "u1 0-350", "u1 0-330"]);
    await t.decoder.says("we decided to ship");
    // Now only the open piece is decoded again.
    expect(t.decoder.requests.at(-1)).toEqual("u1 330-500");
    await t.decoder.says("the new version");
    t.hear(1, 700);
    t.play({ type: "end", utterance: 1, toSample: ms(5_700), speechToSample: ms(5_500) });
    expect(t.decoder.requests.at(-1)).toEqual("u1 330-570");
    await t.decoder.says("the new version on friday");
    expect(t.events()).toEqual([
      'partial ps-1 2000-2700 "we decided"',
      'partial ps-1 2000-5500 "we decided to ship the"',
      'partial ps-1 2000-7000 "we decided to ship the new version"',
      'final ps-1 2000-7500 "we decided to ship the new version on friday"',
    ]);
  });

  it("finishes an utterance that ended while its partial was decoded with the final only", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 700);
    // Its speech ended 100 ms before the partial's audio did: not enough to be sure of the last word.
    t.play({ type: "end", utterance: 1, toSample: ms(700), speechToSample: ms(650) });
    t.play({ type: "start", utterance: 2, fromSample: ms(1_400), speechFromSample: ms(1_500) });
    t.hear(2, 900);
    await t.decoder.says("hello there"); // the partial of utterance 1: it has ended, so no partial
    // Utterance 2's first partial goes before settling utterance 1.
    expect(t.decoder.requests).toEqual(["u1 0-70", "u2 0-90"]);
    await t.decoder.says("good");
    expect(t.decoder.requests.at(-1)).toEqual("u1 0-70");
    await t.decoder.says("hello there");
    expect(t.events()).toEqual(['partial ps-1 3500-4300 "good"', 'final ps-2 2000-2650 "hello there"']);
  });

  it("takes the final from the last partial when that one already heard all the speech", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: ms(200) });
    t.hear(1, 900);
    // The partial under way reaches 900 ms; the speech ends at 600: the same words, no decode.
    t.play({ type: "end", utterance: 1, toSample: ms(800), speechToSample: ms(600) });
    await t.decoder.says("see you friday");
    expect(t.decoder.requests).toEqual(["u1 0-90"]);
    expect(t.events()).toEqual(['final ps-1 2200-2600 "see you friday"']);

    // A partial from before the end, heard well past the speech too.
    t.play({ type: "start", utterance: 2, fromSample: ms(2_000), speechFromSample: ms(2_000) });
    t.hear(2, 1_000);
    await t.decoder.says("bye");
    t.play({ type: "end", utterance: 2, toSample: ms(3_000), speechToSample: ms(2_800) });
    expect(t.decoder.requests).toEqual(["u1 0-90", "u2 0-100"]);
    expect(t.events().slice(1)).toEqual(['partial ps-2 4000-5000 "bye"', 'final ps-2 4000-4800 "bye"']);
    await t.recognizer.settled();
  });

  it("says nothing of noise: an utterance with no words has no events", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 800);
    await t.decoder.says("");
    t.hear(1, 400);
    t.play({ type: "end", utterance: 1, toSample: ms(1_200), speechToSample: ms(1_000) });
    await t.decoder.says("");
    expect(t.decoder.requests).toEqual(["u1 0-80", "u1 0-120"]);
    expect(t.reported).toEqual([]);
    await t.recognizer.settled();
  });

  it("a piece too short to hold a word settles empty without a decode", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 3_000);
    await t.decoder.says("the budget review");
    t.play({
      type: "cut",
      utterance: 1,
      atSample: ms(2_960),
      speechToSample: ms(2_900),
      nextSpeechFromSample: ms(2_980),
    });
    t.play({ type: "end", utterance: 1, toSample: ms(3_000), speechToSample: ms(2_990) });
    await t.decoder.says("the budget review is finished");
    expect(t.decoder.requests).toEqual(["u1 0-300", "u1 0-296"]);
    expect(t.events().at(-1)).toEqual('final ps-1 2000-4990 "the budget review is finished"');
  });

  it("decodes at once when the speech pauses: that partial settles what it heard, if the pause turns out an end or a cut", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 2_500);
    await t.decoder.says("the budget review is finished");
    t.hear(1, 400);
    // Speech paused at 2.7 s: decoded at once, however little came since the last partial.
    t.play({ type: "pause", utterance: 1, atSample: ms(2_900) });
    expect(t.decoder.requests).toEqual(["u1 0-250", "u1 0-290"]);
    await t.decoder.says("the budget review is finished and");
    // The speech goes on at 3.0 s: the piece up to the pause has its words already.
    t.play({
      type: "cut",
      utterance: 1,
      atSample: ms(2_850),
      speechToSample: ms(2_700),
      nextSpeechFromSample: ms(3_000),
    });
    t.hear(1, 1_200);
    t.play({ type: "pause", utterance: 1, atSample: ms(4_100) });
    expect(t.decoder.requests.slice(2)).toEqual(["u1 285-410"]);
    await t.decoder.says("the numbers look good");
    t.hear(1, 400);
    t.play({ type: "end", utterance: 1, toSample: ms(4_300), speechToSample: ms(3_900) });
    // No decode settled anything: the partials at the pauses had heard it all.
    expect(t.decoder.requests).toHaveLength(3);
    expect(t.events()).toEqual([
      'partial ps-1 2000-4500 "the budget review is finished"',
      'partial ps-1 2000-4900 "the budget review is finished and"',
      'partial ps-1 2000-6100 "the budget review is finished and the numbers look good"',
      'final ps-1 2000-5900 "the budget review is finished and the numbers look good"',
    ]);
  });

  it("a partial whose piece was cut while it was decoded settles that piece and says its words once", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 1_200);
    t.play({ type: "pause", utterance: 1, atSample: ms(1_200) });
    // The speech goes on while the pause's decode runs.
    t.play({
      type: "cut",
      utterance: 1,
      atSample: ms(1_100),
      speechToSample: ms(1_000),
      nextSpeechFromSample: ms(1_200),
    });
    t.hear(1, 1_500);
    expect(t.decoder.requests).toEqual(["u1 0-120"]);
    await t.decoder.says("good morning");
    // The cut piece needed no decode of its own: the next one is the open piece's partial.
    expect(t.decoder.requests.at(-1)).toEqual("u1 110-270");
    await t.decoder.says("everyone");
    expect(t.events()).toEqual([
      'partial ps-1 2000-3200 "good morning"',
      'partial ps-1 2000-4700 "good morning everyone"',
    ]);
  });

  it("gives up after three failed decodes in a row: every utterance with partials still gets its final", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 700);
    await t.decoder.says("i will send");
    t.hear(1, 1_500);
    await t.decoder.says(new Error("pocketsphinx_batch exited with 1"));
    t.hear(1, 1_500);
    await t.decoder.says(new Error("pocketsphinx_batch exited with 1"));
    t.hear(1, 1_500);
    expect(t.gaveUp).toEqual([]);
    await t.decoder.says(new Error("pocketsphinx_batch exited with 1"));
    expect(t.gaveUp).toEqual(["pocketsphinx failed 3 times in a row: pocketsphinx_batch exited with 1"]);
    expect(t.events()).toEqual([
      'partial ps-1 2000-2700 "i will send"',
      'final ps-1 2000-7200 "i will send"',
    ]);
    // Nothing more is asked or reported, and nothing waits.
    t.hear(1, 2_000);
    expect(t.decoder.busy).toBe(false);
    await t.recognizer.settled();
    expect(existsSync(join(dir, "u1.raw"))).toBe(false);
  });

  it("abandoning on stop settles what is open from what is known", async () => {
    const t = await setUp();
    t.play({ type: "start", utterance: 1, fromSample: 0, speechFromSample: 0 });
    t.hear(1, 700);
    await t.decoder.says("good morning");
    t.play({ type: "end", utterance: 1, toSample: ms(900), speechToSample: ms(700) });
    const settled = t.recognizer.settled();
    t.recognizer.abandon("not settled in time");
    await settled;
    expect(t.events()).toEqual([
      'partial ps-1 2000-2700 "good morning"',
      'final ps-1 2000-2700 "good morning"',
    ]);
  });
});
