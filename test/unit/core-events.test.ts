import { describe, expect, it } from "vitest";
import { CallbackEvent, deriveEvents } from "../../src/core/index.js";

const context = { meetingTitle: "Weekly", platform: "google" };
const at = "2026-11-21T10:00:00.000Z";

describe("callback events", () => {
  it("parses a status envelope and rejects an unknown subCode", () => {
    const ok = CallbackEvent.safeParse({
      seq: 1,
      type: "status",
      eventTime: at,
      data: { status: "FATAL", subCode: "ADMISSION_DENIED" },
    });
    expect(ok.success).toBe(true);
    const bad = CallbackEvent.safeParse({
      seq: 1,
      type: "status",
      eventTime: at,
      data: { status: "FATAL", subCode: "NOPE" },
    });
    expect(bad.success).toBe(false);
  });

  it("requires a positive seq and a known type", () => {
    expect(CallbackEvent.safeParse({ seq: 0, type: "heartbeat", eventTime: at, data: {} }).success).toBe(
      false,
    );
    expect(CallbackEvent.safeParse({ seq: 1, type: "dance", eventTime: at, data: {} }).success).toBe(false);
  });
});

describe("deriveEvents", () => {
  const derive = (event: unknown) => deriveEvents(CallbackEvent.parse(event), context);

  it("maps IN_CALL to BOT_JOINED and the IN_CALL aggregated event", () => {
    const out = derive({ seq: 3, type: "status", eventTime: at, data: { status: "IN_CALL" } });
    expect(out.botEvents).toEqual([{ eventType: "BOT_JOINED", data: context }]);
    expect(out.aggregatedEvents.map((e) => e.eventType)).toEqual(["IN_CALL"]);
    expect(out.aggregatedEvents[0]?.data).toMatchObject({ meetingTitle: "Weekly" });
  });

  it("maps CALL_ENDED to BOT_LEFT with its subCode", () => {
    const out = derive({
      seq: 4,
      type: "status",
      eventTime: at,
      data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" },
    });
    expect(out.botEvents).toEqual([{ eventType: "BOT_LEFT", data: { subCode: "MEETING_ENDED" } }]);
    expect(out.aggregatedEvents[0]).toMatchObject({
      eventType: "CALL_ENDED",
      data: { subCode: "MEETING_ENDED" },
    });
  });

  it("maps FATAL to ERROR with code and error", () => {
    const out = derive({
      seq: 5,
      type: "status",
      eventTime: at,
      data: { status: "FATAL", subCode: "ADMISSION_DENIED", message: "denied" },
    });
    expect(out.botEvents).toEqual([
      { eventType: "ERROR", data: { code: "ADMISSION_DENIED", error: "denied" } },
    ]);
    expect(out.aggregatedEvents[0]?.eventType).toBe("FATAL");
  });

  it("maps participants and recordings, and nothing for logs and heartbeats", () => {
    const joined = derive({
      seq: 6,
      type: "participant.joined",
      eventTime: at,
      data: { participantId: "p1", participantName: "Alice" },
    });
    expect(joined.botEvents).toEqual([
      { eventType: "PARTICIPANT_JOINED", data: { participantId: "p1", participantName: "Alice" } },
    ]);
    expect(joined.aggregatedEvents).toEqual([]);
    const rec = derive({
      seq: 7,
      type: "recording.started",
      eventTime: at,
      data: { width: 1280, height: 720, frameRate: 25 },
    });
    expect(rec.botEvents[0]?.eventType).toBe("RECORDING_STARTED");
    expect(rec.aggregatedEvents[0]?.eventType).toBe("RECORDING");
    expect(derive({ seq: 8, type: "heartbeat", eventTime: at, data: {} })).toEqual({
      botEvents: [],
      aggregatedEvents: [],
    });
    expect(
      derive({ seq: 9, type: "log", eventTime: at, data: { level: "warn", message: "x" } }).botEvents,
    ).toEqual([]);
  });
});
