import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Zoom bots end to end: created through the API with a meeting id and passcode, run by the real
 * runner against the mock web client (the stack points MEETBOT_ZOOM_WEB_BASE_URL at it).
 */

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const FINAL = ["DONE", "FATAL"] as const;
const BOT_TIMEOUT = { timeoutMs: 90_000 };
const byId = <T extends { id: number }>(list: T[]) => [...list].sort((a, b) => a.id - b.id);

type MeetingView = {
  participants: Array<{ name: string }>;
  attendees: Array<{ name: string; state: string }>;
};

/** Control calls the shared helper lacks (remove, start). */
async function hostDoes(id: string, action: "remove" | "start" | "deny") {
  const response = await fetch(`${stack.mock.url}/control/meetings/zoom/${id}/${action}`, { method: "POST" });
  expect(response.status, `${action}: ${await response.clone().text()}`).toBe(200);
}

async function zoomBot(
  meetingId: string,
  opts: { passcode?: string; waitingRoomTimeout?: number; name?: string },
) {
  const bot = await stack.api.createBot({
    meetingInfo: {
      platform: "zoom",
      meetingId,
      ...(opts.passcode ? { meetingPassword: opts.passcode } : {}),
    },
    botDisplayName: opts.name ?? "Zoom Bot",
    ...(opts.waitingRoomTimeout ? { automaticLeave: { waitingRoomTimeout: opts.waitingRoomTimeout } } : {}),
  });
  await stack.api.deploy(bot.id);
  return bot.id;
}

const statuses = async (botId: number) =>
  byId((await stack.api.events({ bot_id: botId, page_size: 100 })).events).map((e) => e.eventType);

const botEvent = async (botId: number, type: string) =>
  (await stack.api.botEvents(botId)).find((e) => e.eventType === type);

const recordingStarted = (botId: number) =>
  eventually(() => botEvent(botId, "RECORDING_STARTED"), `bot ${botId} recording`, 60_000);

/**
 * The runner's log lines (pino JSON) with message `msg`, each reduced to the named fields: e.g.
 * the join's notes as [hook, variant], the phases as [phase, evidence].
 */
async function runnerLog(botId: number, msg: string, ...fields: string[]) {
  const lines = (await readFile(stack.launcher.logFile(botId), "utf8")).split("\n").filter(Boolean);
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return entries.filter((entry) => entry.msg === msg).map((entry) => fields.map((field) => entry[field]));
}

/** Per test: a bot's whole life on a busy 2-core machine, with room to spare. */
const TEST_TIMEOUT = { timeout: 150_000 };

// Side by side (each test has its own meeting): a bot spends its call waiting, not computing.
describe.concurrent("a bot in a mock Zoom meeting", TEST_TIMEOUT, () => {
  it("joins with the passcode through the waiting room, reports everyone, and records until the host ends", async () => {
    const { api, control } = stack;
    const id = "81234567890";
    const meeting = (await control.configure("zoom", id, {
      participants: 2,
      admit: "manual",
      passcode: "246810",
    })) as MeetingView;
    const botId = await zoomBot(id, { passcode: "246810", name: "Zoom Notes" });
    await stack.sawLobby(botId);
    await control.admit("zoom", id);
    await stack.endOnceEachSpoke("zoom", id, botId, 2);
    const final = await api.waitForStatus(botId, FINAL, BOT_TIMEOUT);
    expect(final.deploymentError ?? null, JSON.stringify(final.deploymentError)).toBeNull();
    expect(final.status).toBe("DONE");
    expect(await statuses(botId)).toEqual([
      "JOINING_CALL",
      "IN_WAITING_ROOM",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);

    const events = await api.botEvents(botId);
    const joined = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName);
    expect(joined.sort()).toEqual(meeting.participants.map((p) => p.name).sort());
    expect(events.find((e) => e.eventType === "BOT_LEFT")?.data).toMatchObject({ subCode: "MEETING_ENDED" });

    // The runner's log names the variant of each join hook that matched (the link carried the
    // passcode, so no field), and what decided each phase.
    expect(await runnerLog(botId, "join hook matched", "hook", "variant")).toEqual(
      expect.arrayContaining([
        ["popup", 'permissions "Allow"'],
        ["passcodeInput", "none shown"],
        ["microphone", 'clicked #preview-audio-control-button "Mute"'],
        ["joinAudio", "button.join-audio-by-voip__join-btn"],
      ]),
    );
    expect(await runnerLog(botId, "page phase", "phase", "evidence")).toEqual(
      expect.arrayContaining([
        ["prejoin", "nameInput"],
        ["lobby", 'texts.waitingRoom "Please wait, the meeting host will let you in soon"'],
        ["in_call", "footer + participantsButton"],
        ["ended", "endedDialog"],
      ]),
    );

    // Both streams, and sound: the bot joined computer audio (the mock is silent otherwise).
    const media = await stack.downloadRecording(botId, { motion: true });
    expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(["audio:aac", "video:h264"]);
    expect(media.meanVolumeDb as number).toBeGreaterThan(-40);
    expect(media.changedFrames).toBeGreaterThan(3); // a still picture has 0

    // Who spoke when, from Zoom's active-speaker frame (three in the call, so the gallery shows it).
    const { speakerTimeline, durationSeconds } = await api.recording(botId);
    expect(new Set(speakerTimeline.map((s) => s.name))).toEqual(
      new Set(meeting.participants.map((p) => p.name)),
    );
    expect(speakerTimeline.map((s) => s.participantId)).toContain("name:Alice Example");
    for (const segment of speakerTimeline) {
      expect(segment.endMs).toBeGreaterThan(segment.startMs);
      expect(segment.endMs).toBeLessThanOrEqual(durationSeconds * 1000);
    }
  });

  it("waits in the waiting room until the host admits it", async () => {
    const { api, control } = stack;
    const id = "81234567891";
    await control.configure("zoom", id, { participants: 1, admit: "manual" });
    const botId = await zoomBot(id, { name: "Patient Bot" });
    await api.waitForStatus(botId, ["IN_WAITING_ROOM", ...FINAL], BOT_TIMEOUT);
    const waiting = (await control.state("zoom", id)) as MeetingView;
    expect(waiting.attendees).toEqual([expect.objectContaining({ name: "Patient Bot", state: "lobby" })]);

    await control.admit("zoom", id);
    await recordingStarted(botId);
    // The host ends the call once the bot read its roster: a starved bot reads it after the
    // recording started.
    await stack.sawJoin(botId, 1);
    await control.end("zoom", id);
    const final = await api.waitForStatus(botId, FINAL, BOT_TIMEOUT);
    expect(final.status).toBe("DONE");
    expect(await botEvent(botId, "PARTICIPANT_JOINED")).toMatchObject({
      data: { participantName: "Alice Example" },
    });
  });

  it("waits for a host who has not started, and gets in once the host starts the meeting", async () => {
    const { api, control } = stack;
    const id = "81234567892";
    await control.configure("zoom", id, { admit: "open", hostStarted: false, endAfterMs: 2000 });
    const botId = await zoomBot(id, {});
    await api.waitForStatus(botId, ["IN_WAITING_ROOM", ...FINAL], BOT_TIMEOUT);
    await eventually(
      async () =>
        ((await control.state("zoom", id)) as MeetingView).attendees[0]?.state === "waiting_for_host"
          ? true
          : undefined,
      "the bot waiting for the host",
    );
    await hostDoes(id, "start");
    const final = await api.waitForStatus(botId, FINAL, BOT_TIMEOUT);
    expect(final.status).toBe("DONE");
    expect(await statuses(botId)).toContain("IN_CALL");
  });
});

/** Deploys a bot into a freshly configured meeting and returns its final state. */
async function finalState(
  id: string,
  scenario: Record<string, unknown>,
  opts: Parameters<typeof zoomBot>[1] = {},
) {
  await stack.control.configure("zoom", id, scenario);
  const botId = await zoomBot(id, opts);
  return { botId, final: await stack.api.waitForStatus(botId, FINAL, BOT_TIMEOUT) };
}

const attendeeStates = async (id: string) =>
  ((await stack.control.state("zoom", id)) as MeetingView).attendees.map((a) => a.state);

// These bots never record, so they run side by side (three at a time) to keep the file short.
describe.concurrent("a Zoom bot that waits and is not let in", TEST_TIMEOUT, () => {
  it("gives up on a host who never starts after waitingRoomTimeout: FATAL HOST_NOT_STARTED", async ({
    expect,
  }) => {
    const id = "81234567896";
    const { final, botId } = await finalState(id, { hostStarted: false }, { waitingRoomTimeout: 3000 });
    expect(final.deploymentError?.code).toBe("HOST_NOT_STARTED");
    expect(await statuses(botId)).toContain("IN_WAITING_ROOM");
    expect(await attendeeStates(id)).toEqual(["left"]);
  });
});

describe.concurrent("a Zoom bot that meets a dead end", TEST_TIMEOUT, () => {
  it("is refused a wrong passcode: FATAL BAD_PASSCODE", async ({ expect }) => {
    const { final, botId } = await finalState(
      "81234567897",
      { passcode: "right-one" },
      { passcode: "wrong-one" },
    );
    expect(final.deploymentError?.code).toBe("BAD_PASSCODE");
    expect(await runnerLog(botId, "page phase", "phase", "evidence")).toContainEqual([
      "bad_passcode",
      'texts.badPasscode "Passcode wrong"',
    ]);
  });

  it("is asked for a passcode it was not given: FATAL BAD_PASSCODE", async ({ expect }) => {
    // Its own meeting: the bot-wall test below runs at the same time.
    const { final, botId } = await finalState("81234567900", { passcode: "right-one" }, {});
    expect(final.deploymentError?.code).toBe("BAD_PASSCODE");
    expect(await runnerLog(botId, "join hook matched", "hook", "variant")).toContainEqual([
      "passcodeInput",
      'input[placeholder*="passcode" i]',
    ]);
  });
});
