import { describe, expect, it } from "vitest";
import { type SpeakerChange, speakerTimeline } from "../../src/core/index.js";

const start = "2026-11-21T10:00:00.000Z";
const at = (ms: number) => new Date(Date.parse(start) + ms).toISOString();
const change = (type: SpeakerChange["type"], id: string, ms: number): SpeakerChange => ({
  type,
  participantId: id,
  participantName: id === "a" ? "Alice" : "Bob",
  eventTime: at(ms),
});

describe("speakerTimeline", () => {
  it("pairs starts with stops per participant, relative to the recording's start", () => {
    const timeline = speakerTimeline(
      [
        change("speaker.started", "a", 1000),
        change("speaker.started", "b", 1500),
        change("speaker.stopped", "a", 2200),
        change("speaker.stopped", "b", 3000),
        change("speaker.started", "a", 4000),
        change("speaker.stopped", "a", 4500),
      ],
      { startedAt: start, durationMs: 10_000 },
    );
    expect(timeline).toEqual([
      { participantId: "a", name: "Alice", startMs: 1000, endMs: 2200 },
      { participantId: "b", name: "Bob", startMs: 1500, endMs: 3000 },
      { participantId: "a", name: "Alice", startMs: 4000, endMs: 4500 },
    ]);
  });

  it("closes a segment still open at the end, clips to the recording, ignores stray stops and repeats", () => {
    const timeline = speakerTimeline(
      [
        change("speaker.started", "b", -500),
        change("speaker.stopped", "a", 100),
        change("speaker.stopped", "b", 700),
        change("speaker.started", "a", 8000),
        change("speaker.started", "a", 8500),
      ],
      { startedAt: start, durationMs: 9000 },
    );
    expect(timeline).toEqual([
      { participantId: "b", name: "Bob", startMs: 0, endMs: 700 },
      { participantId: "a", name: "Alice", startMs: 8000, endMs: 9000 },
    ]);
  });

  it("is empty without speaker changes", () => {
    expect(speakerTimeline([], { startedAt: start, durationMs: 5000 })).toEqual([]);
  });
});
