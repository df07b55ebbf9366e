import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { serializerCompiler } from "../../src/server/http/serializer.js";
import { BotDetail, BotEvent, BotList } from "../../src/server/schemas/index.js";

/**
 * The response serializer must write exactly what zod's parse-then-stringify wrote: the documented
 * fields, nothing the service had on top (a password hash, a token), nested objects included.
 */
function serialize(schema: z.ZodType, value: unknown): string {
  const write = serializerCompiler({ schema, method: "GET", url: "/", httpStatus: "200" }) as (
    v: unknown,
  ) => string;
  return write(value);
}

const zoomBot = {
  id: 7,
  botDisplayName: 'Notetaker "quoted" \u2028 é',
  meetingTitle: "",
  status: "IN_CALL",
  meetingInfo: { platform: "zoom", meetingId: "123 456", meetingPassword: "pw" },
  createdAt: "2026-11-22T04:00:00.000Z",
  recording: {
    botId: 7,
    format: "mp4",
    mimeType: "video/mp4",
    sizeBytes: 1234567,
    durationSeconds: 12.5,
    createdAt: "2026-11-22T04:01:00.000Z",
  },
  deploymentError: {
    code: "ADMISSION_DENIED",
    message: "denied",
    artifacts: ["/v1/bots/7/artifacts/page.png"],
  },
  lastHeartbeat: null,
  transcription: { engine: "deepgram", language: "en-US" },
  summary: { engine: "extractive" },
  login: { mode: "always", accountId: null, group: "default", assignedAccountId: 3 },
  liveTranscript: { source: "captions", language: "en-US", fallback: true },
  chat: { onJoin: "This meeting is recorded" },
  output: { keepMicOn: true },
  joinAt: "2026-11-22T03:59:00.000Z",
  retention: { hours: 0.5 },
  dataDeletedAt: "2026-11-22T05:00:00.000Z",
  audioStream: { url: "wss://agent.example.com/meet", sampleRate: 24000, hasToken: true },
  recordingOptions: { video: true },
};

const meetBot = {
  ...zoomBot,
  id: 8,
  meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
  recording: null,
  deploymentError: null,
  lastHeartbeat: "2026-11-22T04:02:00.000Z",
  transcription: null,
  summary: null,
  login: null,
  liveTranscript: null,
  chat: {},
  output: {},
  joinAt: null,
  retention: null,
  dataDeletedAt: null,
  audioStream: null,
  recordingOptions: { video: false },
};

describe("response serializer", () => {
  it.each([
    ["a Zoom bot with a recording and a deployment error", BotDetail, zoomBot],
    ["a Meet bot with nulls", BotDetail, meetBot],
    ["a list of bots", BotList, { bots: [zoomBot, meetBot], total: 2, page: 1, page_size: 50 }],
    [
      "an event with free-form data",
      BotEvent,
      { id: 1, eventType: "x", eventTime: zoomBot.createdAt, data: { a: [1, { b: null }], "c d": "é" } },
    ],
    ["an event without data", BotEvent, { id: 2, eventType: "x", eventTime: zoomBot.createdAt, data: null }],
  ])("writes %s as zod did", (_name, schema, value) => {
    const written = serialize(schema, value);
    expect(written).toBe(JSON.stringify(schema.parse(value)));
  });

  it("leaves out fields the schema does not list, at every depth", () => {
    const leaky = {
      ...zoomBot,
      password_hash: "$argon2id$secret",
      callback_token_hash: "abc",
      recording: { ...zoomBot.recording, path: "/data/recordings/7.mp4" },
      deploymentError: { ...zoomBot.deploymentError, stack: "at secret.ts:1" },
      audioStream: { ...zoomBot.audioStream, token: "agent-token-secret" },
    };
    const written = JSON.parse(serialize(BotDetail, leaky)) as Record<string, unknown>;
    expect(written).toEqual(JSON.parse(JSON.stringify(BotDetail.parse(zoomBot))));
    expect(JSON.stringify(written)).not.toMatch(
      /argon2id|callback_token_hash|recordings\/7|secret\.ts|agent-token-secret/,
    );
  });

  it("refuses to write an answer missing a required field rather than send it incomplete", () => {
    const { status: _, ...withoutStatus } = meetBot;
    expect(() => serialize(BotDetail, withoutStatus)).toThrow(/status/);
  });
});
