import { EventEmitter } from "node:events";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CaptionEntryReading } from "../../platforms/live.js";
import { recordingMsAt, speakerTimeline } from "../../src/core/index.js";
import { CaptionTracker } from "../../src/runner/live-meeting/caption-tracker.js";
import { RecordingClock } from "../../src/runner/recording-clock.js";
import { type AudioLevels, watchSilence } from "../../src/runner/silence.js";

/**
 * The recording's clock with pauses (core/recording-clock.ts, runner/recording-clock.ts) and what
 * reads it: the server's speaker timeline, the captions, the silence timeout.
 */

const quiet = pino({ level: "silent" });

describe("recordingMsAt", () => {
  const pauses = [
    { fromMs: 10_000, toMs: 13_000 },
    { fromMs: 20_000, toMs: null },
  ];
  it("takes every pause before an instant off it; inside a pause it is where the pause began", () => {
    expect(recordingMsAt(5_000, 1_000, pauses)).toBe(4_000);
    expect(recordingMsAt(11_000, 1_000, pauses)).toBe(9_000);
    expect(recordingMsAt(13_000, 1_000, pauses)).toBe(9_000);
    expect(recordingMsAt(15_000, 1_000, pauses)).toBe(11_000);
    // Still paused: frozen.
    expect(recordingMsAt(20_000, 1_000, pauses)).toBe(16_000);
    expect(recordingMsAt(99_000, 1_000, pauses)).toBe(16_000);
    expect(recordingMsAt(500, 1_000, pauses)).toBe(0);
  });

  it("puts the speaker timeline on the file's clock: a turn inside a pause is gone", () => {
    const at = (ms: number) => new Date(ms).toISOString();
    const change = (type: "speaker.started" | "speaker.stopped", id: string, ms: number) => ({
      type,
      participantId: id,
      participantName: id,
      eventTime: at(ms),
    });
    const segments = speakerTimeline(
      [
        change("speaker.started", "a", 2_000),
        change("speaker.stopped", "a", 15_000),
        change("speaker.started", "b", 11_000),
        change("speaker.stopped", "b", 12_000),
      ],
      { startedAt: at(1_000), durationMs: 30_000, pauses },
    );
    expect(segments).toEqual([{ participantId: "a", name: "a", startMs: 1_000, endMs: 11_000 }]);
  });
});

describe("RecordingClock", () => {
  it("stands still while paused, and counts all the time paused", () => {
    let wall = 1_000;
    const clock = new RecordingClock(new Date(1_000), () => wall);
    wall = 6_000;
    expect(clock.now()).toBe(5_000);
    expect(clock.pause()).toBe(6_000);
    expect(clock.paused).toBe(true);
    // A second pause changes nothing.
    wall = 7_000;
    clock.pause();
    wall = 9_000;
    expect(clock.now()).toBe(5_000);
    expect(clock.pausedMs).toBe(3_000);
    expect(clock.resume()).toBe(3_000);
    expect(clock.resume()).toBe(0);
    expect(clock.paused).toBe(false);
    wall = 10_000;
    expect(clock.now()).toBe(6_000);
    expect(clock.pausedAt(7_000)).toBe(true);
    expect(clock.pausedAt(9_000)).toBe(false);
  });
});

describe("what reads the clock", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0, toFake: ["setTimeout", "clearTimeout", "setImmediate", "Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the silence timeout does not count paused time (no level readings while paused)", () => {
    const clock = new RecordingClock(new Date(0));
    const levels: AudioLevels = new EventEmitter();
    const onSilent = vi.fn();
    watchSilence({ timeoutMs: 10_000, levels, log: quiet, onSilent, now: () => clock.now() });
    vi.advanceTimersByTime(4_000);
    clock.pause();
    // A minute paused: the recorder hears nothing, and that is not a silent call.
    vi.advanceTimersByTime(60_000);
    expect(onSilent).not.toHaveBeenCalled();
    clock.resume();
    vi.advanceTimersByTime(5_500);
    expect(onSilent).not.toHaveBeenCalled();
    // 4 s before the pause and 6 s after it: ten seconds of silence on the recording.
    vi.advanceTimersByTime(1_000);
    expect(onSilent).toHaveBeenCalledTimes(1);
  });

  it("captions said while paused never reach the transcript; an utterance under way ends at the pause", () => {
    const clock = new RecordingClock(new Date(0));
    const events: Array<{ type: string; text: string; startMs: number; endMs: number }> = [];
    const tracker = new CaptionTracker({
      clock: () => clock.now(),
      paused: () => clock.paused,
      resolve: () => ({ participantId: "p-1", name: "Alice" }),
      emit: (type, u) => events.push({ type, text: u.text, startMs: u.startMs, endMs: u.endMs }),
      language: "en-US",
    });
    const shown = (text: string): CaptionEntryReading[] => [
      { key: "k1", text, speaker: { name: "Alice", nth: 0 } },
    ];
    vi.advanceTimersByTime(1_000);
    tracker.update(shown("we start"));
    vi.advanceTimersByTime(500);
    clock.pause();
    tracker.update(shown("we start with the secret budget"));
    vi.advanceTimersByTime(3_000);
    tracker.update(shown("we start with the secret budget numbers"));
    clock.resume();
    vi.advanceTimersByTime(200);
    tracker.update(shown("we start with the secret budget numbers and now the agenda"));
    tracker.stop();
    const finals = events.filter((e) => e.type === "transcript.final");
    expect(finals).toEqual([
      { type: "transcript.final", text: "we start", startMs: 1_000, endMs: 1_000 },
      { type: "transcript.final", text: "and now the agenda", startMs: 1_700, endMs: 1_700 },
    ]);
    expect(events.some((e) => /secret|budget|numbers/.test(e.text))).toBe(false);
  });
});
