import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import {
  deployedBot,
  makeTestMp4,
  registerUser,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";

let server: TestServer;
let user: TestUser;
let mp4: Uint8Array;
let scratch: string;
test.beforeAll(async ({ server: fileServer }) => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-mp4-"));
  server = fileServer;
  mp4 = await makeTestMp4(scratch);
  user = await registerUser(server.api);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("the speaker timeline stored with a recording", () => {
  test("is built from the runner's speaker events, relative to the recording's start, each applied once", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const t0 = Date.parse("2026-11-21T10:00:00.000Z");
    const at = (ms: number) => new Date(t0 + ms).toISOString();
    let seq = 0;
    const send = (type: string, data: Record<string, unknown>, ms: number, again = false) =>
      runner.sendRaw({ seq: again ? seq : ++seq, type, eventTime: at(ms), data });

    for (const status of ["JOINING_CALL", "IN_CALL"])
      expect((await send("status", { status }, 0)).status).toBe(200);
    await send("recording.started", { width: 1280, height: 720, frameRate: 25, startedAt: at(0) }, 0);
    const alice = { participantId: "p-1", participantName: "Alice Example" };
    const bob = { participantId: "p-2", participantName: "Bob Example" };
    await send("speaker.started", alice, 500);
    expect((await send("speaker.started", alice, 500, true)).body).toMatchObject({ duplicate: true });
    await send("speaker.started", bob, 1200);
    await send("speaker.stopped", alice, 1500);
    await send("status", { status: "CALL_ENDED", subCode: "MEETING_ENDED" }, 1900);
    expect((await runner.upload(mp4, 2000)).status).toBe(201);
    await send("status", { status: "DONE" }, 2100);

    const info = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
    expect(info.status).toBe(200);
    expect(info.body.speakerTimeline).toEqual([
      { participantId: "p-1", name: "Alice Example", startMs: 500, endMs: 1500 },
      // Still speaking when the recording ended.
      { participantId: "p-2", name: "Bob Example", startMs: 1200, endMs: 2000 },
    ]);
  });

  test("leaves the recording's pauses out: times after a pause move back by it, speaking inside one is gone", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const t0 = Date.parse("2026-11-26T10:00:00.000Z");
    const at = (ms: number) => new Date(t0 + ms).toISOString();
    let seq = 0;
    const send = (type: string, data: Record<string, unknown>, ms: number) =>
      runner.sendRaw({ seq: ++seq, type, eventTime: at(ms), data });

    for (const status of ["JOINING_CALL", "IN_CALL"]) await send("status", { status }, 0);
    await send("recording.started", { width: 1280, height: 720, frameRate: 25, startedAt: at(0) }, 0);
    const alice = { participantId: "p-1", participantName: "Alice Example" };
    const bob = { participantId: "p-2", participantName: "Bob Example" };
    await send("speaker.started", alice, 500);
    // Reported once ffmpeg stopped (later than the pause itself): the data's instant counts.
    await send("recording.paused", { recordingMs: 1000, pausedAt: at(1000) }, 1300);
    await send("speaker.started", bob, 1500);
    await send("speaker.stopped", bob, 2500);
    await send("recording.resumed", { recordingMs: 1000, resumedAt: at(4000), pausedMs: 3000 }, 4600);
    await send("speaker.started", bob, 4200);
    await send("speaker.stopped", alice, 4500);
    await send("status", { status: "CALL_ENDED", subCode: "MEETING_ENDED" }, 5000);
    expect((await runner.upload(mp4, 2000)).status).toBe(201);

    const info = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
    expect(info.body.speakerTimeline).toEqual([
      // Alice spoke across the pause: 500 ms to 4500 ms of wall time, 3000 ms of it paused.
      { participantId: "p-1", name: "Alice Example", startMs: 500, endMs: 1500 },
      // Bob's first turn was all inside the pause; his second starts 200 ms after the resume.
      { participantId: "p-2", name: "Bob Example", startMs: 1200, endMs: 2000 },
    ]);
  });

  test("is empty for a recording without speaker events", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    expect((await runner.upload(mp4, 2000)).status).toBe(201);
    const info = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
    expect(info.body.speakerTimeline).toEqual([]);
  });
});
