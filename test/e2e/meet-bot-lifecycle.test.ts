import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const byId = <T extends { id: number }>(list: T[]) => [...list].sort((a, b) => a.id - b.id);

// Side by side (each test has its own meeting): a bot spends its call waiting, not computing.
describe.concurrent("a bot in a mock Google Meet, end to end", () => {
  it("joins through the lobby, records the call, reports everyone, and delivers a playable recording", async () => {
    const { api, mock, control } = stack;
    const code = "abc-defg-hij";
    const meeting = (await control.configure("google", code, {
      participants: 2,
      admit: "manual",
    })) as { participants: Array<{ name: string }> };
    const expectedNames = meeting.participants.map((p) => p.name).sort();
    expect(expectedNames.length).toBe(2);
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
      botDisplayName: "E2E Bot",
      meetingTitle: "Standup",
    });
    await api.deploy(bot.id);
    await stack.sawLobby(bot.id);
    await control.admit("google", code);
    // The host ends the call once the recording holds 5 s and each participant spoke two whole
    // turns in it (a call ended on a timer left a starved bot's recording too short to check).
    await stack.sawJoin(bot.id, 2);
    await stack.recordedOnDisk(bot.id, 5000);
    await stack.endOnceEachSpoke("google", code, bot.id, 2, 2);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 });
    expect(final.deploymentError ?? null, JSON.stringify(final.deploymentError)).toBeNull();
    expect(final.status).toBe("DONE");

    // Statuses in order, as the aggregated event list shows them.
    const aggregated = byId((await api.events({ bot_id: bot.id, page_size: 100 })).events);
    expect(aggregated.map((e) => e.eventType)).toEqual([
      "JOINING_CALL",
      "IN_WAITING_ROOM",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);
    expect(aggregated.find((e) => e.eventType === "CALL_ENDED")?.data.subCode).toBe("MEETING_ENDED");

    // Everyone in the call, by name, as the mock seated them.
    const events = await api.botEvents(bot.id);
    const joinedNames = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName)
      .sort();
    expect(joinedNames).toEqual(expectedNames);
    const types = events.map((e) => e.eventType);
    for (const type of ["BOT_JOINED", "RECORDING_STARTED", "RECORDING_STOPPED", "BOT_LEFT"]) {
      expect(types).toContain(type);
    }
    expect(types.indexOf("BOT_JOINED")).toBeLessThan(types.indexOf("BOT_LEFT"));
    // ffmpeg's own counters come with RECORDING_STOPPED: ~25 frames a second were written.
    const stopped = events.find((e) => e.eventType === "RECORDING_STOPPED")?.data ?? {};
    expect(stopped.frames as number).toBeGreaterThan(100);
    expect(stopped.droppedFrames).toEqual(expect.any(Number));

    // The recording, fetched through the signed download link like a client would.
    expect(final.recording).not.toBeNull();
    const media = await stack.downloadRecording(bot.id, { motion: true });
    expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(["audio:aac", "video:h264"]);
    expect(media.streams.find((s) => s.type === "video")).toMatchObject({ width: 1280, height: 720 });
    // The participants' tones are clearly above silence (-91 dB) and the picture moves.
    expect(media.meanVolumeDb).not.toBeNull();
    expect(media.meanVolumeDb as number).toBeGreaterThan(-40);
    expect(media.changedFrames).toBeGreaterThan(20);
    // As long as the bot was in the call, give or take a second.
    const at = (type: string) => Date.parse(aggregated.find((e) => e.eventType === type)?.eventTime ?? "");
    const inCallSeconds = (at("CALL_ENDED") - at("IN_CALL")) / 1000;
    expect(Math.abs(media.durationSeconds - inCallSeconds)).toBeLessThan(1);

    // Who spoke when: both participants' tones show on Meet's speaking indicator, in bursts.
    const { speakerTimeline, durationSeconds } = await api.recording(bot.id);
    expect(new Set(speakerTimeline.map((s) => s.name))).toEqual(new Set(expectedNames));
    expect(speakerTimeline.length).toBeGreaterThan(2);
    for (const segment of speakerTimeline) {
      expect(segment.startMs).toBeGreaterThanOrEqual(0);
      expect(segment.endMs).toBeGreaterThan(segment.startMs);
      expect(segment.endMs).toBeLessThanOrEqual(durationSeconds * 1000);
    }
  });

  it("waits in the lobby until the host admits it, then leaves when the host ends the meeting", async () => {
    const { api, mock, control } = stack;
    const code = "lob-byad-mit";
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?admit=manual&participants=1` },
      botDisplayName: "Lobby Bot",
    });
    await api.deploy(bot.id);
    await api.waitForStatus(bot.id, ["IN_WAITING_ROOM", "FATAL"], { timeoutMs: 60_000 });
    const waiting = (await control.state("google", code)) as {
      attendees: Array<{ name: string; state: string }>;
    };
    expect(waiting.attendees).toEqual([expect.objectContaining({ name: "Lobby Bot", state: "lobby" })]);
    // What the bot sees while it waits: its whole page, at least the recorded 1280x720 (a PNG's
    // IHDR holds width and height).
    const { png } = await api.screenshot(bot.id);
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(png.readUInt32BE(16)).toBeGreaterThanOrEqual(1280);
    expect(png.readUInt32BE(20)).toBeGreaterThanOrEqual(720);

    await control.admit("google", code);
    await api.waitForStatus(bot.id, ["IN_CALL", "FATAL"], { timeoutMs: 30_000 });
    // Let the recording get going before the host ends the meeting.
    await eventually(
      async () => (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
      "RECORDING_STARTED",
    );
    await control.end("google", code);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("DONE");
    const left = (await api.botEvents(bot.id)).find((e) => e.eventType === "BOT_LEFT");
    expect(left?.data).toMatchObject({ subCode: "MEETING_ENDED" });
  });

  it("leaves a call that runs past maxDuration: CALL_ENDED MAX_DURATION, recording delivered", async () => {
    const { api, mock } = stack;
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/lon-gmee-tng?admit=open` },
      automaticLeave: { maxDuration: 3000 },
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("DONE");
    expect(final.recording).not.toBeNull();
    const events = await api.botEvents(bot.id);
    expect(events.find((e) => e.eventType === "BOT_LEFT")?.data).toMatchObject({ subCode: "MAX_DURATION" });
  });

  it("leaves on request (POST /leave): the command is done, LEFT_ON_REQUEST, the whole recording delivered", async () => {
    const { api, mock, control } = stack;
    const code = "lea-veon-req";
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?admit=open&participants=1` },
      botDisplayName: "Leaving Bot",
    });
    await api.deploy(bot.id);
    await eventually(
      async () => (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
      "RECORDING_STARTED",
    );
    const asked = await api.leave(bot.id);
    expect(asked).toMatchObject({ botId: bot.id, kind: "leave", status: "queued" });
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.deploymentError ?? null, JSON.stringify(final.deploymentError)).toBeNull();
    expect(final.status).toBe("DONE");
    expect(await api.command(bot.id, asked.commandId)).toMatchObject({ status: "done", error: null });
    const events = await api.botEvents(bot.id);
    expect(events.find((e) => e.eventType === "BOT_LEFT")?.data).toMatchObject({
      subCode: "LEFT_ON_REQUEST",
    });
    // The mock saw the bot leave the call (not dropped by a killed browser).
    const state = (await control.state("google", code)) as {
      attendees: Array<{ name: string; state: string; leftBy: string | null }>;
    };
    const attendees = state.attendees.map(({ name, state: seen, leftBy }) => ({ name, state: seen, leftBy }));
    expect(attendees, await stack.describeBot(bot.id, 12)).toEqual([
      { name: "Leaving Bot", state: "left", leftBy: "leave" },
    ]);
    const media = await stack.downloadRecording(bot.id);
    expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(["audio:aac", "video:h264"]);
    // The whole time in the call, as the first test checks it: nothing cut off by the leave.
    const aggregated = (await api.events({ bot_id: bot.id, page_size: 100 })).events;
    const at = (type: string) => Date.parse(aggregated.find((e) => e.eventType === type)?.eventTime ?? "");
    expect(Math.abs(media.durationSeconds - (at("CALL_ENDED") - at("IN_CALL")) / 1000)).toBeLessThan(1);
  });
});
