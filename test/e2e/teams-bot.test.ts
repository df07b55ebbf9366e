import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Teams bots end to end: created through the API with meetingId + tenantId + organizerId (or a
 * pasted join link), run by real runner processes in real Chromium against the mock Teams web
 * client, which the stack's runners reach through MEETBOT_TEAMS_WEB_BASE_URL.
 */

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const ORGANIZER = "1a2b3c4d-0000-4000-8000-123456789abc";
/** Generous: the machine has 2 cores and other suites may be running. */
const FINISHED = { timeoutMs: 90_000 };

const byId = <T extends { id: number }>(list: T[]) => [...list].sort((a, b) => a.id - b.id);

type MeetingView = {
  participants: Array<{ name: string }>;
  attendees: Array<{ name: string; state: string }>;
};

/** A bot for a scheduled meeting, as a client would create it from a calendar event. */
async function teamsBot(meetingId: string, extra: Record<string, unknown> = {}) {
  const bot = await stack.api.createBot({
    meetingInfo: { platform: "teams", meetingId, tenantId: TENANT, organizerId: ORGANIZER },
    ...extra,
  });
  await stack.api.deploy(bot.id);
  return bot;
}

/** The aggregated statuses (JOINING_CALL ... DONE) in the order they happened. */
async function statusSequence(botId: number): Promise<string[]> {
  const { events } = await stack.api.events({ bot_id: botId, page_size: 100 });
  return byId(events).map((e) => e.eventType);
}

/**
 * The runner's log lines (pino JSON) with message `msg`, each reduced to the named fields: e.g.
 * the join's notes as [hook, variant], the phases as [phase, evidence].
 */
async function runnerLog(botId: number, msg: string, ...fields: string[]) {
  const lines = (await readFile(stack.launcher.logFile(botId), "utf8")).split("\n").filter(Boolean);
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return entries.filter((entry) => entry.msg === msg).map((entry) => fields.map((field) => entry[field]));
}

const waitForRecording = (botId: number) =>
  eventually(
    async () => (await stack.api.botEvents(botId)).find((e) => e.eventType === "RECORDING_STARTED"),
    "RECORDING_STARTED",
    60_000,
  );

// Side by side (each test has its own meeting): a bot spends its call waiting, not computing.
describe.concurrent("a bot in a mock Microsoft Teams meeting, end to end", () => {
  it("joins from meetingId + tenantId + organizerId, records, reports everyone and leaves when the host ends", async () => {
    const { api, control } = stack;
    const meetingId = "TeamsE2eOpenCall01";
    const meeting = (await control.configure("teams", meetingId, {
      participants: 2,
      admit: "open",
    })) as MeetingView;
    const expectedNames = meeting.participants.map((p) => p.name).sort();
    expect(expectedNames).toHaveLength(2);

    const bot = await teamsBot(meetingId, { botDisplayName: "Teams E2E Bot" });
    await stack.endOnceEachSpoke("teams", meetingId, bot.id, 2);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], FINISHED);
    expect(final.deploymentError ?? null, JSON.stringify(final.deploymentError)).toBeNull();
    expect(final.status).toBe("DONE");

    // No lobby (admission open), and the recording banner in the call did not end it early:
    // the call ended because the host ended it.
    expect(await statusSequence(bot.id)).toEqual([
      "JOINING_CALL",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);
    const events = await api.botEvents(bot.id);
    expect(events.find((e) => e.eventType === "BOT_LEFT")?.data).toMatchObject({ subCode: "MEETING_ENDED" });
    const joined = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName);
    expect(joined.sort()).toEqual(expectedNames);
    // The host saw the bot by its display name, in the call until the end.
    const after = (await control.state("teams", meetingId)) as MeetingView;
    expect(after.attendees).toEqual([expect.objectContaining({ name: "Teams E2E Bot", state: "ended" })]);

    // The runner's log names the variant of each join hook that matched, and what decided each phase.
    expect(await runnerLog(bot.id, "join hook matched", "hook", "variant")).toEqual([
      ["launcher", 'button[data-tid="joinOnWeb"]'],
      ["camera", 'switched off: [data-tid="toggle-video"] (on by aria-checked)'],
      ["microphone", 'switched off: [data-tid="toggle-mute"] (on by aria-checked)'],
      ["audioOption", 'checked "Computer audio"'],
      ["noAudioVideoConfirm", 'clicked "Continue without audio or video"'],
      // After admission: the roster was in the page already, so the People panel stayed as it was.
      ["roster", "rendered"],
    ]);
    expect(await runnerLog(bot.id, "page phase", "phase", "evidence")).toEqual(
      expect.arrayContaining([
        ["prejoin", "launcher.joinOnWeb"],
        ["prejoin", "prejoin.nameInput"],
        ["in_call", 'call.hangup + callOnly "#roster-button"'],
        ["ended", 'texts.ended "The meeting has ended"'],
      ]),
    );

    // The recording: both streams, the participants' sound (Computer audio, microphone muted),
    // a moving picture, and who spoke when from Teams' speaking ring.
    const media = await stack.downloadRecording(bot.id, { motion: true });
    expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(["audio:aac", "video:h264"]);
    expect(media.meanVolumeDb).not.toBeNull();
    expect(media.meanVolumeDb as number).toBeGreaterThan(-40);
    expect(media.changedFrames).toBeGreaterThan(3); // a still picture has 0
    const { speakerTimeline } = await api.recording(bot.id);
    expect(new Set(speakerTimeline.map((s) => s.name))).toEqual(new Set(expectedNames));
  });

  it("waits in the lobby of a pasted meetup-join link until admitted, then leaves when the host ends", async () => {
    const { api, mock, control } = stack;
    const meetingId = "TeamsE2eLobbyAdmit01";
    const context = encodeURIComponent(JSON.stringify({ Tid: TENANT, Oid: ORGANIZER }));
    const meetingUrl = `${mock.url}/l/meetup-join/19%3ameeting_${meetingId}%40thread.v2/0?context=${context}&admit=manual&participants=1`;
    const bot = await api.createBot({
      meetingInfo: { platform: "teams", meetingUrl },
      botDisplayName: "Lobby Bot",
    });
    await api.deploy(bot.id);

    await api.waitForStatus(bot.id, ["IN_WAITING_ROOM", "FATAL"], { timeoutMs: 60_000 });
    const waiting = (await control.state("teams", meetingId)) as MeetingView;
    expect(waiting.attendees).toEqual([expect.objectContaining({ name: "Lobby Bot", state: "lobby" })]);

    await control.admit("teams", meetingId);
    await waitForRecording(bot.id);
    await control.end("teams", meetingId);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], FINISHED);
    expect(final.status).toBe("DONE");
    expect(await statusSequence(bot.id)).toEqual([
      "JOINING_CALL",
      "IN_WAITING_ROOM",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);
    const events = await api.botEvents(bot.id);
    expect(events.find((e) => e.eventType === "BOT_LEFT")?.data).toMatchObject({ subCode: "MEETING_ENDED" });
    expect(
      events.filter((e) => e.eventType === "PARTICIPANT_JOINED").map((e) => e.data?.participantName),
    ).toEqual(["Alice Example"]);
  });
});

describe.concurrent("a Teams meeting whose organizer has not started it", () => {
  it("waits, and gets in once the organizer starts the meeting", async () => {
    const { api, control } = stack;
    const meetingId = "TeamsE2eHostLate01";
    await control.configure("teams", meetingId, { admit: "open", participants: 1, hostStarted: false });
    const bot = await teamsBot(meetingId);
    // The organizer starts it once the bot waits (not after a set time, which a slow start outlasts).
    await api.waitForStatus(bot.id, ["IN_WAITING_ROOM", "DONE", "FATAL"], FINISHED);
    await control.startMeeting("teams", meetingId);
    await api.waitForStatus(bot.id, ["IN_CALL", "DONE", "FATAL"], FINISHED);
    await control.end("teams", meetingId);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], FINISHED);
    expect(final.status).toBe("DONE");
    expect(await statusSequence(bot.id)).toEqual([
      "JOINING_CALL",
      "IN_WAITING_ROOM",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);
  });

  it("gives up after waitingRoomTimeout: FATAL HOST_NOT_STARTED, and leaves", async () => {
    const { api, control } = stack;
    const meetingId = "TeamsE2eHostNever01";
    await control.configure("teams", meetingId, { hostStarted: false });
    const bot = await teamsBot(meetingId, { automaticLeave: { waitingRoomTimeout: 3000 } });
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], FINISHED);
    expect(final.deploymentError?.code).toBe("HOST_NOT_STARTED");
    expect(await statusSequence(bot.id)).toEqual(["JOINING_CALL", "IN_WAITING_ROOM", "FATAL"]);
    const meeting = (await control.state("teams", meetingId)) as MeetingView;
    expect(meeting.attendees.map((a) => a.state)).toEqual(["left"]);
  });
});

describe.concurrent("a Teams bot that cannot get into the call", () => {
  it("reports a meeting id Teams does not know as FATAL MEETING_NOT_FOUND", async () => {
    const { api } = stack;
    // Too short for a Teams meeting id: the web client says the link is incorrect.
    const bot = await teamsBot("nope");
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], FINISHED);
    expect(final.deploymentError?.code).toBe("MEETING_NOT_FOUND");
  });
});
