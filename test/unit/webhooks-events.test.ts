import { describe, expect, it } from "vitest";
import {
  CallbackEvent,
  recordingReadyWebhookEvent,
  WEBHOOK_EVENT_NAMES,
  webhookEventsFor,
} from "../../src/core/index.js";
import { CreateWebhookBody } from "../../src/server/schemas/index.js";
import { isSubscribed, SUBSCRIBABLE_NAMES } from "../../src/server/webhooks/events.js";

const context = { meetingTitle: "Weekly", platform: "google" };
const at = "2026-11-21T10:00:00.000Z";
const map = (type: string, data: unknown) =>
  webhookEventsFor(CallbackEvent.parse({ seq: 1, type, eventTime: at, data }), context);
const status = (data: Record<string, unknown>) => map("status", data);

describe("webhookEventsFor", () => {
  it("maps each status to its lifecycle event, with the spec's data", () => {
    expect(status({ status: "DEPLOYING" })).toEqual([{ event: "bot.deploying", data: context }]);
    expect(status({ status: "JOINING_CALL" })).toEqual([{ event: "bot.joining", data: context }]);
    expect(status({ status: "IN_WAITING_ROOM" })).toEqual([{ event: "bot.in_waiting_room", data: context }]);
    expect(status({ status: "IN_CALL" })).toEqual([
      { event: "bot.joined", data: { meetingTitle: "Weekly", platform: "google" } },
    ]);
    expect(status({ status: "CALL_ENDED", subCode: "EVERYONE_LEFT" })).toEqual([
      { event: "bot.left", data: { code: "EVERYONE_LEFT" } },
    ]);
    expect(status({ status: "DONE" })).toEqual([{ event: "bot.ended", data: { status: "DONE" } }]);
  });

  it("maps FATAL to bot.error {error, code} and then bot.ended", () => {
    expect(status({ status: "FATAL", subCode: "JOIN_FAILED", message: "no join button" })).toEqual([
      { event: "bot.error", data: { error: "no join button", code: "JOIN_FAILED" } },
      { event: "bot.ended", data: { status: "FATAL", code: "JOIN_FAILED" } },
    ]);
    expect(status({ status: "FATAL" })[0]).toEqual({
      event: "bot.error",
      data: { error: "INTERNAL_ERROR", code: "INTERNAL_ERROR" },
    });
  });

  it("maps participants and recordings; durationSeconds is an integer", () => {
    expect(map("participant.joined", { participantId: "p1", participantName: "Ada" })).toEqual([
      { event: "participant.joined", data: { participantId: "p1", participantName: "Ada" } },
    ]);
    expect(map("participant.left", { participantId: "p1", participantName: "Ada" })[0]?.event).toBe(
      "participant.left",
    );
    expect(map("recording.started", { width: 1280, height: 720, frameRate: 25 })).toEqual([
      { event: "recording.started", data: { width: 1280, height: 720, frameRate: 25 } },
    ]);
    expect(map("recording.stopped", { durationMs: 61_600, sizeBytes: 1234 })).toEqual([
      { event: "recording.stopped", data: { durationSeconds: 62, fileSizeBytes: 1234 } },
    ]);
    expect(recordingReadyWebhookEvent({ durationMs: 2_400, sizeBytes: 99 })).toEqual({
      event: "recording.ready",
      data: { durationSeconds: 2, fileSizeBytes: 99, format: "mp4" },
    });
  });

  it("sends nothing for logs, heartbeats and speaker changes", () => {
    expect(map("log", { level: "info", message: "x" })).toEqual([]);
    expect(map("heartbeat", {})).toEqual([]);
    expect(map("speaker.started", { participantId: "p1", participantName: "Ada" })).toEqual([]);
  });
});

describe("subscriptions", () => {
  it("match by name, by * and by the recording.available alias", () => {
    expect(isSubscribed(["*"], "participant.left")).toBe(true);
    expect(isSubscribed(["bot.joined"], "bot.joined")).toBe(true);
    expect(isSubscribed(["bot.joined"], "bot.left")).toBe(false);
    expect(isSubscribed(["recording.available"], "recording.ready")).toBe(true);
    expect(isSubscribed(["bot.ended"], "bot.ended")).toBe(true);
    expect(isSubscribed(["recording.ready"], "webhook.test")).toBe(false);
  });

  it("accept every event name sent, * and the alias, and refuse anything else with its index", () => {
    expect(SUBSCRIBABLE_NAMES).toEqual(["*", ...WEBHOOK_EVENT_NAMES, "recording.available"]);
    const body = (events: unknown) =>
      CreateWebhookBody.safeParse({ name: "n", url: "https://x.example/h", events });
    expect(body(["bot.ended", "recording.available", "bot.ended"]).data?.events).toEqual([
      "bot.ended",
      "recording.available",
    ]);
    const unknown = body(["bot.joined", "bot.exploded"]);
    expect(unknown.success).toBe(false);
    expect(unknown.error?.issues[0]?.path).toEqual(["events", 1]);
    expect(body([]).success).toBe(false);
    expect(body(["webhook.test"]).success).toBe(false);
  });
});
