import { describe, expect, it } from "vitest";
import { applyLiveEvent, type BotLive } from "../../src/dashboard/live-state.js";
import type { LiveEvent } from "../../src/server/schemas/live.js";

/** What the dashboard's bot page makes of its live stream: here, whether the recording is paused. */
describe("the bot page's live state", () => {
  const event = (id: number, type: LiveEvent["type"], data: Record<string, unknown> = {}): LiveEvent => ({
    id,
    botId: 1,
    type,
    eventTime: "2026-11-26T10:00:00.000Z",
    data,
  });
  const start: BotLive = { utterances: [], chat: [], sourceNote: null, recordingPaused: false };

  it("shows the recording paused from recording.paused until recording.resumed", () => {
    const paused = applyLiveEvent(start, event(1, "recording.paused", { recordingMs: 5000 }));
    expect(paused.recordingPaused).toBe(true);
    // Other events leave it paused.
    const still = applyLiveEvent(
      paused,
      event(2, "speaker.started", { participantId: "p", participantName: "A" }),
    );
    expect(still.recordingPaused).toBe(true);
    expect(applyLiveEvent(still, event(3, "recording.resumed", { pausedMs: 1000 })).recordingPaused).toBe(
      false,
    );
  });
});
