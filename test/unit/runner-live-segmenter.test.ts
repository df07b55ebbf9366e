import { describe, expect, it } from "vitest";
import { silencePaused, StreamClock } from "../../src/runner/live-transcript/monitor-audio.js";
import {
  levelDbfs,
  type SegmentEvent,
  SpeechSegmenter,
} from "../../src/runner/live-transcript/speech-segmenter.js";

/**
 * Utterances found by level in synthetic 16 kHz sound: tones stand for speech, zeros or a quiet
 * hiss for the silence between. Positions are samples (16 per ms).
 */

const RATE = 16_000;
const samples = (ms: number) => (ms * RATE) / 1000;

/** A 300 Hz tone whose RMS level is `dbfs`. */
function tone(ms: number, dbfs = -20): Buffer {
  const out = Buffer.alloc(samples(ms) * 2);
  const amplitude = 32767 * 10 ** (dbfs / 20) * Math.SQRT2;
  for (let i = 0; i < samples(ms); i++)
    out.writeInt16LE(Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / RATE)), i * 2);
  return out;
}

const silence = (ms: number) => Buffer.alloc(samples(ms) * 2);

/** Pushes `sound` in chunks of odd sizes (a pipe splits samples and frames anywhere). */
function segment(sound: Buffer[], opts: { flush?: boolean } = {}) {
  const events: SegmentEvent[] = [];
  const segmenter = new SpeechSegmenter((event) => events.push(event));
  const all = Buffer.concat(sound);
  for (let at = 0; at < all.length; at += 1001) segmenter.push(all.subarray(at, at + 1001));
  if (opts.flush) segmenter.flush();
  const bounds = events.filter((e) => e.type !== "audio" && e.type !== "pause");
  const pauses = events.flatMap((e) => (e.type === "pause" ? [e.atSample] : []));
  const audio = (utterance: number) =>
    events.reduce(
      (sum, e) => sum + (e.type === "audio" && e.utterance === utterance ? e.pcm.length / 2 : 0),
      0,
    );
  return { events, bounds, pauses, audio };
}

describe("SpeechSegmenter", () => {
  it("finds an utterance with a little sound before and after its speech", () => {
    const { bounds, audio } = segment([silence(1000), tone(2000), silence(1000)]);
    expect(bounds).toEqual([
      { type: "start", utterance: 1, fromSample: samples(1000 - 300), speechFromSample: samples(1000) },
      { type: "end", utterance: 1, toSample: samples(3000 + 200), speechToSample: samples(3000) },
    ]);
    // Its audio runs contiguously from its start to where the silence was noticed (600 ms).
    expect(audio(1)).toBe(samples(300 + 2000 + 600));
  });

  it("keeps a sentence with short pauses whole, and parts two sentences 800 ms apart", () => {
    const { bounds, pauses } = segment([
      silence(500),
      tone(1000),
      silence(300),
      tone(1000),
      silence(800),
      tone(1000),
      silence(1000),
    ]);
    // Each pause is told 200 ms into it (the speech may be over).
    expect(pauses).toEqual([samples(1700), samples(3000), samples(4800)]);
    const utterances = bounds.filter((e) => e.type !== "cut");
    expect(utterances.map((e) => [e.type, e.utterance])).toEqual([
      ["start", 1],
      ["end", 1],
      ["start", 2],
      ["end", 2],
    ]);
    expect(utterances[1]).toMatchObject({ speechToSample: samples(2800) });
    expect(utterances[2]).toMatchObject({ speechFromSample: samples(3600) });
  });

  it("does not take a click or a quiet hiss for speech", () => {
    const hiss = tone(3000, -70);
    const { events } = segment([silence(500), tone(40), silence(500), hiss, silence(500)]);
    expect(events).toEqual([]);
  });

  it("hears speech over steady noise once the floor has found the noise", () => {
    const { bounds } = segment([tone(4000, -45), Buffer.from(tone(1500, -20)), tone(2000, -45)]);
    expect(bounds.map((e) => e.type)).toEqual(["start", "end"]);
    expect(bounds[0]).toMatchObject({ speechFromSample: samples(4000) });
  });

  it("stops taking a hiss that starts after silence for speech within seconds", () => {
    const segmented = segment([silence(1000), tone(20_000, -40), tone(1000, -15), tone(2000, -40)]);
    const bounds = segmented.bounds.filter((e) => e.type !== "cut");
    // The hiss is speech only until the floor has risen to it: one long first utterance, which
    // ends well before the hiss does; then the loud second.
    expect(bounds.map((e) => e.type)).toEqual(["start", "end", "start", "end"]);
    expect((bounds[1] as { speechToSample: number }).speechToSample).toBeLessThan(samples(16_000));
    expect(bounds[2]).toMatchObject({ speechFromSample: samples(21_000) });
  });

  it("cuts an utterance into pieces where speech goes on after a pause, once the piece is 1 s long", () => {
    const { bounds } = segment([
      silence(500),
      tone(600),
      silence(240),
      tone(1500),
      silence(240),
      tone(1000),
      silence(1000),
    ]);
    // The first pause comes before 1 s of piece: no cut there; the second one is cut in its middle.
    expect(bounds).toEqual([
      expect.objectContaining({ type: "start" }),
      {
        type: "cut",
        utterance: 1,
        atSample: samples(2840 + 120),
        speechToSample: samples(2840),
        nextSpeechFromSample: samples(3080),
      },
      expect.objectContaining({ type: "end", speechToSample: samples(4080) }),
    ]);
  });

  it("cuts a piece with no pause at its quietest moment once it is 6 s long", () => {
    // Speech all along; one quieter 20 ms frame 5.6 s in (still speech, no pause).
    const { bounds } = segment([silence(500), tone(5600), tone(20, -32), tone(3000), silence(1000)]);
    const cut = bounds.find((e) => e.type === "cut");
    const at = samples(500 + 5600);
    expect(cut).toEqual({
      type: "cut",
      utterance: 1,
      atSample: at,
      speechToSample: at,
      nextSpeechFromSample: at,
    });
  });

  it("ends an utterance at a short pause once someone else has started speaking", () => {
    const events: SegmentEvent[] = [];
    const segmenter = new SpeechSegmenter((event) => events.push(event));
    const ends = () =>
      events.filter((e) => e.type === "end").map((e) => e.type === "end" && e.speechToSample);
    segmenter.push(Buffer.concat([silence(500), tone(500)]));
    // Under a second into its speech: most likely its own speaker's indicator, late.
    segmenter.speakerChanged();
    segmenter.push(Buffer.concat([tone(1000), silence(200), tone(1000)]));
    expect(ends()).toEqual([]);
    // Later: the next pause of 120 ms ends it, 400 ms being too short otherwise.
    segmenter.speakerChanged();
    segmenter.push(Buffer.concat([tone(500), silence(400), tone(1500)]));
    expect(ends()).toEqual([samples(3700)]);
    // A change in the middle of a pause ends the utterance then.
    segmenter.push(silence(300));
    segmenter.speakerChanged();
    expect(ends()).toEqual([samples(3700), samples(5600)]);
  });

  it("ends the utterance it is in when the sound stops", () => {
    const { bounds, audio } = segment([silence(500), tone(1500)], { flush: true });
    expect(bounds.at(-1)).toEqual({
      type: "end",
      utterance: 1,
      toSample: samples(2000),
      speechToSample: samples(2000),
    });
    expect(audio(1)).toBe(samples(1800));
  });

  it("measures levels in dBFS", () => {
    expect(levelDbfs(tone(100, -20))).toBeCloseTo(-20, 1);
    expect(levelDbfs(silence(20))).toBe(-Infinity);
  });
});

describe("StreamClock", () => {
  it("places samples where the least delayed chunk says sample 0 played, on the recording's clock", () => {
    const clock = new StreamClock((wallMs) => wallMs - 10_000);
    expect(clock.toRecordingMs(0)).toBe(0);
    // 50 ms chunks; the second arrives 30 ms late, the third 5 ms late.
    clock.arrived(samples(50), 12_050 + 10);
    clock.arrived(samples(50), 12_100 + 30);
    clock.arrived(samples(50), 12_150 + 5);
    expect(clock.toRecordingMs(0)).toBe(2_005);
    expect(clock.toRecordingMs(samples(1000))).toBe(3_005);
  });
});

describe("silencePaused", () => {
  // Paused from wall 12,100 to 12,200 ms; 50 ms chunks whose sample 0 played at 12,000.
  const pausedAt = (wallMs: number) => wallMs >= 12_100 && wallMs < 12_200;
  const levelOf = (pcm: Buffer, fromMs: number, toMs: number) =>
    levelDbfs(pcm.subarray(samples(fromMs) * 2, samples(toMs) * 2));

  it("silences what played during the pause, by when it played, however late it arrives", () => {
    const clock = new StreamClock((wallMs) => wallMs);
    const first = tone(50);
    clock.arrived(samples(50), 12_050);
    expect(silencePaused(first, clock, pausedAt)).toBe(first);
    // 12,050-12,250 ms, read in one piece 2 s late (after the resume): its middle 100 ms played paused.
    const late = tone(200);
    clock.arrived(samples(200), 14_250);
    const heard = silencePaused(late, clock, pausedAt);
    expect(levelOf(heard, 0, 50)).toBeCloseTo(-20, 0);
    expect(levelOf(heard, 50, 150)).toBe(-Infinity);
    expect(levelOf(heard, 150, 200)).toBeCloseTo(-20, 0);
    // The reader's own buffer is left as it was.
    expect(levelDbfs(late)).toBeCloseTo(-20, 0);
  });
});
