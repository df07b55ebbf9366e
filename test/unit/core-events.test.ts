import { describe, expect, it } from "vitest";
import {
  CallbackEvent,
  PARTICIPANT_ID_MAX,
  PARTICIPANT_NAME_MAX,
  deriveEvents,
  speakerTimeline,
  webhookEventsFor,
} from "../../src/core/index.js";

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

describe("participant names and ids past the limits", () => {
  // Anyone in the call picks their name, so a long one must not cost them their place in the record.
  const longName = `Dr. ${"Very ".repeat(100)}Long Name`;
  type ParticipantEvent = CallbackEvent & { data: { participantId: string; participantName: string } };
  const participant = (type: string, seq: number, participantId: string, participantName: string) =>
    CallbackEvent.parse({
      seq,
      type,
      eventTime: at,
      data: { participantId, participantName },
    }) as ParticipantEvent;

  it("keeps an over-long name, cut to the limit and marked, in every event it travels in", () => {
    expect(longName.length).toBeGreaterThan(PARTICIPANT_NAME_MAX);
    const event = participant("participant.joined", 1, "p-1", longName);
    const cut = `${longName.slice(0, PARTICIPANT_NAME_MAX - 1)}…`;
    expect(event.data).toEqual({ participantId: "p-1", participantName: cut });
    expect(cut).toHaveLength(PARTICIPANT_NAME_MAX);
    expect(deriveEvents(event, context).botEvents).toEqual([
      { eventType: "PARTICIPANT_JOINED", data: { participantId: "p-1", participantName: cut } },
    ]);
    expect(webhookEventsFor(event, context)).toEqual([
      { event: "participant.joined", data: { participantId: "p-1", participantName: cut } },
    ]);
    // A name at the limit is left as it is.
    const atLimit = "x".repeat(PARTICIPANT_NAME_MAX);
    expect(participant("participant.left", 2, "p-1", atLimit).data.participantName).toBe(atLimit);
  });

  it("never cuts a character in half", () => {
    // 299 code units, then an emoji (a surrogate pair) across the cut.
    const name = `${"a".repeat(PARTICIPANT_NAME_MAX - 2)}\u{1F600}${"b".repeat(10)}`;
    const kept = participant("speaker.started", 3, "p-2", name).data.participantName;
    expect(kept).toBe(`${"a".repeat(PARTICIPANT_NAME_MAX - 2)}…`);
    // No lone half of a pair is left.
    expect(kept).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("keeps an event whose id is over-long (Zoom's ids are names), with a shorter id that stays one to one", () => {
    const idOf = (name: string) =>
      participant("participant.joined", 4, `name:${name}`, name).data.participantId;
    const first = idOf(`${"Ann ".repeat(60)}One`);
    const second = idOf(`${"Ann ".repeat(60)}Two`);
    expect(first.length).toBeLessThanOrEqual(PARTICIPANT_ID_MAX);
    expect(first.startsWith(`name:${"Ann ".repeat(40)}`)).toBe(true);
    expect(second).not.toBe(first);
    // The same id comes out the same every time: a speaker's start and stop still pair up.
    expect(idOf(`${"Ann ".repeat(60)}One`)).toBe(first);
    const changes = (["speaker.started", "speaker.stopped"] as const).map((type, i) => {
      const event = participant(type, 10 + i, `name:${longName}`, longName);
      return {
        type,
        participantId: event.data.participantId,
        participantName: event.data.participantName,
        eventTime: `2026-11-21T10:00:0${i + 1}.000Z`,
      };
    });
    expect(speakerTimeline(changes, { startedAt: at, durationMs: 5000 })).toEqual([
      {
        participantId: changes[0]!.participantId,
        name: changes[0]!.participantName,
        startMs: 1000,
        endMs: 2000,
      },
    ]);
    // Short ids are left alone, and an empty one is still refused.
    expect(idOf("Ann")).toBe("name:Ann");
    expect(
      CallbackEvent.safeParse({
        seq: 5,
        type: "participant.joined",
        eventTime: at,
        data: { participantId: "", participantName: "Ann" },
      }).success,
    ).toBe(false);
  });
});
