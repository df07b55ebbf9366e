import { describe, expect, it } from "vitest";
import {
  eventFrame,
  FrameCutter,
  frameBytes,
  parseAgentMessage,
  startFrame,
} from "../../src/runner/agent-stream/frames.js";

/** The audio stream's frame protocol (docs/api.md, "A live audio channel for agents"). */
describe("the audio stream's frames", () => {
  it("starts with the format of what follows", () => {
    expect(startFrame(7, 24000)).toEqual({
      type: "start",
      botId: 7,
      sampleRate: 24000,
      encoding: "pcm_s16le",
      channels: 1,
      frameMs: 20,
    });
    expect(frameBytes(16000)).toBe(640);
    expect(frameBytes(24000)).toBe(960);
  });

  it("cuts a pipe's chunks into whole frames, whatever their sizes", () => {
    const cutter = new FrameCutter(4);
    const bytes = Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(cutter.push(bytes.subarray(0, 3))).toEqual([]);
    expect(cutter.push(bytes.subarray(3, 9))).toEqual([Buffer.from([0, 1, 2, 3]), Buffer.from([4, 5, 6, 7])]);
    expect(cutter.push(bytes.subarray(9))).toEqual([]);
    expect(cutter.push(Buffer.from([10, 11, 12]))).toEqual([Buffer.from([8, 9, 10, 11])]);
  });

  it("tells the agent of speaker changes and participants, and of nothing else", () => {
    const alice = { participantId: "p-1", participantName: "Alice" };
    for (const type of [
      "speaker.started",
      "speaker.stopped",
      "participant.joined",
      "participant.left",
    ] as const) {
      expect(eventFrame({ type, data: alice })).toMatchObject({ type, ...alice, at: expect.any(String) });
    }
    expect(eventFrame({ type: "heartbeat", data: {} } as never)).toBeNull();
    expect(eventFrame({ type: "log", data: { level: "info", message: "x" } })).toBeNull();
  });

  it("acts on the agent's clear and ignores any other text", () => {
    expect(parseAgentMessage('{"type":"clear"}')).toEqual({ type: "clear" });
    expect(parseAgentMessage('{"type":"clear","extra":1}')).toEqual({ type: "clear" });
    for (const text of ["", "clear", "{}", '{"type":"mark"}', "[1]", "null"]) {
      expect(parseAgentMessage(text), text).toBeNull();
    }
  });
});
