import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, it } from "vitest";
import { SILENCE_LEVEL_DBFS } from "../../src/core/index.js";
import { inspectRecording } from "../../src/runner/probe.js";
import { eventually, startStack } from "../helpers/stack.js";
import { type MockMeeting, mockMeeting, type PlatformName } from "../helpers/mock-meetings.js";

/**
 * Every way a meeting goes, on all three platforms: each cell sets the meeting up
 * through the mock's control API, runs a real runner against it and asserts the exact status
 * sequence, the subCode, the events and the recording. Platform-specific outcomes (passcodes,
 * launchers, a host who has not started) are in meet-bot-*, zoom-bot and teams-bot; the control
 * plane going away is in platform-outage.
 *
 * Cells run side by side (vitest's maxConcurrency, 6 in `make test`): a bot spends most of its life
 * waiting on timeouts, not on the CPU, and most cells' bots are audio-only.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  // A fast watchdog: the SIGKILL cell ends when the server notices the silence.
  stack = await startStack({ watchdog: { intervalMs: 500 } });
});
afterAll(async () => {
  await stack?.close();
});

type Stack = typeof stack;

interface Cell {
  name: string;
  scenario: Record<string, unknown>;
  /** Extra fields of the create-bot body. */
  body?: Record<string, unknown>;
  /** Done once the bot reports it waits in the lobby; for a cell whose host admits it. */
  inLobby?: (ctx: { stack: Stack; platform: PlatformName; meetingId: string }) => Promise<unknown>;
  /** Done to the running bot once it records; for a cell that ends the call from outside. */
  whileRecording?: (ctx: {
    stack: Stack;
    platform: PlatformName;
    meetingId: string;
    botId: number;
  }) => Promise<void>;
  /** The aggregated status events, in order. */
  statuses: string[];
  /**
   * CALL_ENDED's subCode for DONE cells, deploymentError.code for FATAL ones; per platform where
   * the platforms differ (each one's `page=blocked` is its own kind of block).
   */
  subCode: string | Record<PlatformName, string>;
  /** Whether a playable recording is due. */
  recording: boolean;
  /**
   * Whether the bot records video. Most cells are about how a call goes, not the picture, so
   * their bots are audio-only and cost a fraction of a core; the SIGKILL cell, which checks what
   * a killed recorder left on disk, keeps video. The picture of a whole call is checked on each
   * platform by meet-bot-lifecycle, zoom-bot and teams-bot.
   */
  video?: boolean;
  /** What the recording's sound must be, when it matters. */
  sound?: "audible" | "silent";
  /**
   * How the host sees the bot at the end, when it matters: its state, and for one that left, how
   * ("left (leave)": it clicked Leave; "left (page-gone)": its page just went away).
   */
  attendeesAtEnd?: string[];
  /** PARTICIPANT_JOINED events due, when `whileRecording` adds someone; else the scenario's participants. */
  participantsJoined?: number;
}

const RECORDED = ["JOINING_CALL", "IN_CALL", "RECORDING", "CALL_ENDED", "DONE"];
const RECORDED_AFTER_LOBBY = [
  "JOINING_CALL",
  "IN_WAITING_ROOM",
  "IN_CALL",
  "RECORDING",
  "CALL_ENDED",
  "DONE",
];
const REFUSED_IN_LOBBY = ["JOINING_CALL", "IN_WAITING_ROOM", "FATAL"];
const DEAD_END = ["JOINING_CALL", "FATAL"];

const CELLS: Cell[] = [
  {
    name: "open meeting, host ends it",
    // Someone always talking, and a silence timeout well inside the call: a detector that took
    // the call's sound for silence would leave with SILENCE before the host ends it.
    scenario: { admit: "open", participants: 2 },
    body: { automaticLeave: { silenceTimeout: 10_000 } },
    // The host ends it once the bot has seen both people and its silence clock has run for longer
    // than the timeout. 10 s: on two starved cores the first loud reading came 3.9 s after the
    // clock started (the page's players still starting) and a CI bot at 5 s left with SILENCE.
    whileRecording: async ({ stack, platform, meetingId, botId }) => {
      await stack.sawJoin(botId, 2);
      await stack.runnerLogged(botId, /silence clock started/);
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      await stack.control.end(platform, meetingId);
    },
    statuses: RECORDED,
    subCode: "MEETING_ENDED",
    recording: true,
    sound: "audible",
    attendeesAtEnd: ["ended"],
  },
  {
    name: "lobby, then admitted",
    // In CI a timed admission once came before the starved bot had seen the lobby (no IN_WAITING_ROOM).
    scenario: { admit: "manual", participants: 1 },
    inLobby: ({ stack, platform, meetingId }) => stack.control.admit(platform, meetingId),
    whileRecording: async ({ stack, platform, meetingId, botId }) => {
      // Ended at once, a bot that saw the roster quickly had recorded under a second.
      await stack.endOnceSeen(platform, meetingId, botId, 1);
    },
    statuses: RECORDED_AFTER_LOBBY,
    subCode: "MEETING_ENDED",
    recording: true,
  },
  {
    name: "denied from the lobby",
    scenario: { admit: "manual" },
    inLobby: ({ stack, platform, meetingId }) => stack.control.deny(platform, meetingId),
    statuses: REFUSED_IN_LOBBY,
    subCode: "ADMISSION_DENIED",
    recording: false,
  },
  {
    name: "lobby timeout",
    scenario: { admit: "manual" },
    body: { automaticLeave: { waitingRoomTimeout: 3000 } },
    statuses: REFUSED_IN_LOBBY,
    subCode: "WAITING_ROOM_TIMEOUT",
    recording: false,
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "no one joined",
    scenario: { admit: "open", participants: 0 },
    body: { automaticLeave: { noOneJoinedTimeout: 2000 } },
    statuses: RECORDED,
    subCode: "NO_ONE_JOINED",
    recording: true,
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "everyone left",
    scenario: { admit: "open", participants: 2 },
    body: { automaticLeave: { everyoneLeftTimeout: 2000 } },
    // They leave once the bot has seen them (not after a set time, which a loaded machine can
    // outlast before the roster opens).
    whileRecording: async ({ stack, platform, meetingId, botId }) => {
      await stack.sawJoin(botId, 2);
      const people = (await stack.control.state(platform, meetingId)).participants as { id: string }[];
      for (const person of people) await stack.control.removeParticipant(platform, meetingId, person.id);
    },
    statuses: RECORDED,
    subCode: "EVERYONE_LEFT",
    recording: true,
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "silent meeting",
    // Everyone there, nobody heard: the bot stays with them until the silence timeout.
    scenario: { admit: "open", participants: 2, media: "silent" },
    body: { automaticLeave: { silenceTimeout: 3000 } },
    statuses: RECORDED,
    subCode: "SILENCE",
    recording: true,
    sound: "silent",
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "removed by the host",
    scenario: { admit: "open", participants: 2 },
    whileRecording: async ({ stack, platform, meetingId, botId }) => {
      await stack.sawJoin(botId, 2);
      await stack.recordedOnDisk(botId, 2000);
      await stack.control.remove(platform, meetingId);
    },
    statuses: RECORDED,
    subCode: "REMOVED",
    recording: true,
  },
  {
    name: "only a notetaker left",
    scenario: { admit: "open", participants: 1 },
    body: { automaticLeave: { onlyBotsTimeout: 2000, everyoneLeftTimeout: 600_000 } },
    whileRecording: async ({ stack, platform, meetingId, botId }) => {
      await stack.recordedOnDisk(botId, 1000);
      // The person must have been seen first: a bot that only ever saw the notetaker has had no one
      // join, and waits noOneJoinedTimeout (the roster opens seconds after the recording starts).
      await stack.sawJoin(botId, 1);
      const before = (await stack.control.state(platform, meetingId)).participants as { id: string }[];
      await stack.control.addParticipant(platform, meetingId, "Otter.ai Notetaker");
      for (const person of before) await stack.control.removeParticipant(platform, meetingId, person.id);
    },
    statuses: RECORDED,
    subCode: "ONLY_BOTS_LEFT",
    recording: true,
    participantsJoined: 2,
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "meeting not found",
    scenario: { page: "not_found" },
    statuses: DEAD_END,
    subCode: "MEETING_NOT_FOUND",
    recording: false,
  },
  {
    name: "blocked by the platform",
    // Meet: "There is a problem connecting to this video call"; Zoom's and Teams' bot walls.
    scenario: { page: "blocked" },
    statuses: DEAD_END,
    subCode: { google: "BLOCKED", zoom: "BOT_BLOCKED", teams: "BOT_BLOCKED" },
    recording: false,
  },
  {
    name: "sign-in wall",
    scenario: { page: "sign_in" },
    statuses: DEAD_END,
    subCode: "SIGN_IN_REQUIRED",
    recording: false,
  },
  {
    name: "SIGTERM mid-call",
    scenario: { admit: "open", participants: 2 },
    // Once the bot has seen both people (a signal before its roster opened left it none to report).
    whileRecording: async ({ stack, botId }) => {
      await stack.sawJoin(botId, 2);
      await stack.recordedOnDisk(botId, 2000);
      const exited = stack.launcher.waitForExit(botId);
      await stack.launcher.stop(botId);
      const exit = await exited;
      if (exit?.code !== 0) throw new Error(`runner exited ${JSON.stringify(exit)} on SIGTERM`);
    },
    statuses: RECORDED,
    subCode: "LEFT_ON_REQUEST",
    recording: true,
    attendeesAtEnd: ["left (leave)"],
  },
  {
    name: "SIGKILL mid-call",
    scenario: { admit: "open", participants: 2 },
    // The server notices the silence after 6 heartbeats.
    body: { heartbeatInterval: 1000 },
    whileRecording: async ({ stack, botId }) => {
      await stack.sawJoin(botId, 2);
      const file = await stack.recordedOnDisk(botId, 3000);
      const started = (await stack.api.botEvents(botId)).find((e) => e.eventType === "RECORDING_STARTED");
      const exited = stack.launcher.waitForExit(botId);
      const killedAt = Date.now();
      process.kill(stack.launcher.pid(botId) as number, "SIGKILL");
      if ((await exited)?.signal !== "SIGKILL") throw new Error("the runner did not die of SIGKILL");
      // No ffmpeg keeps writing after its runner is gone, and what it wrote plays up to the kill.
      // 30 s: on a loaded machine a Teams runner's ffmpeg once took over 15 s to finalize and exit.
      await eventually(async () => (processWriting(file) ? undefined : true), "ffmpeg to exit", 30_000);
      const media = await inspectRecording(file);
      const recordedBeforeKill = (killedAt - Date.parse(started?.eventTime ?? "")) / 1000;
      if (media.streams.length !== 2 || Math.abs(media.durationSeconds - recordedBeforeKill) > 3) {
        throw new Error(
          `after SIGKILL: ${media.streams.length} streams, ${media.durationSeconds} s on disk, ` +
            `${recordedBeforeKill} s recorded before the kill`,
        );
      }
    },
    statuses: ["JOINING_CALL", "IN_CALL", "RECORDING", "FATAL"],
    subCode: "HEARTBEAT_TIMEOUT",
    recording: false,
    video: true,
  },
];

let serial = 0;

/** A fresh meeting in the platform's own format, and the meetingInfo that joins it. */
function newMeeting(platform: PlatformName): MockMeeting {
  serial += 1;
  return mockMeeting(stack.mock.url, platform, "mtx", serial);
}

describe.each(["google", "zoom", "teams"] as const)("on %s", (platform) => {
  describe.concurrent.each(CELLS)("$name", { timeout: 240_000 }, (cell) => {
    const subCode = typeof cell.subCode === "string" ? cell.subCode : cell.subCode[platform];
    it(`ends ${cell.statuses.at(-1)} ${subCode}`, async ({ expect }) => {
      const { id: meetingId, meetingInfo } = newMeeting(platform);
      await stack.control.configure(platform, meetingId, cell.scenario);
      const bot = await stack.api.createBot({
        meetingInfo,
        botDisplayName: "Matrix Bot",
        recording: { video: cell.video ?? false },
        ...cell.body,
      });
      await stack.api.deploy(bot.id);
      if (cell.inLobby) {
        await stack.sawLobby(bot.id);
        await cell.inLobby({ stack, platform, meetingId });
      }
      if (cell.whileRecording) {
        await eventually(
          async () => (await stack.api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
          `bot ${bot.id} recording`,
          150_000,
        ).catch(async (error: Error) => {
          throw new Error(`${error.message}: ${await stack.describeBot(bot.id)}`);
        });
        await cell.whileRecording({ stack, platform, meetingId, botId: bot.id });
      }
      const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });

      const aggregated = (await stack.api.events({ bot_id: bot.id, page_size: 100 })).events;
      const statuses = [...aggregated].sort((a, b) => a.id - b.id).map((e) => e.eventType);
      expect(statuses, await stack.describeBot(bot.id)).toEqual(cell.statuses);
      const events = await stack.api.botEvents(bot.id);
      if (final.status === "DONE") {
        expect(final.deploymentError).toBeNull();
        const left = events.filter((e) => e.eventType === "BOT_LEFT");
        expect(
          left.map((e) => e.data?.subCode),
          await stack.describeBot(bot.id),
        ).toEqual([subCode]);
      } else {
        expect(final.deploymentError?.code).toBe(subCode);
        expect(events.map((e) => e.eventType)).not.toContain("BOT_LEFT");
      }
      const joinedCall = cell.statuses.includes("IN_CALL");
      expect(events.filter((e) => e.eventType === "BOT_JOINED")).toHaveLength(joinedCall ? 1 : 0);
      const participants = cell.participantsJoined ?? Number(cell.scenario.participants ?? 0);
      if (joinedCall) {
        const joined = events.filter((e) => e.eventType === "PARTICIPANT_JOINED");
        expect(joined).toHaveLength(participants);
      }
      // A bot that failed to join leaves what it saw for its owner.
      if (final.status === "FATAL" && !joinedCall) {
        expect(final.deploymentError?.artifacts).toEqual([
          `/v1/bots/${bot.id}/artifacts/failure.png`,
          `/v1/bots/${bot.id}/artifacts/failure.html`,
          `/v1/bots/${bot.id}/artifacts/trace.zip`,
        ]);
      }

      if (cell.recording) {
        expect(final.recording).not.toBeNull();
        const media = await stack.downloadRecording(bot.id);
        const streams = cell.video ? ["audio:aac", "video:h264"] : ["audio:aac"];
        expect(media.streams.map((s) => `${s.type}:${s.codec}`).sort()).toEqual(streams);
        expect(media.durationSeconds).toBeGreaterThan(1);
        if (cell.sound === "audible") expect(media.meanVolumeDb).toBeGreaterThan(-40);
        // Not a sample above the level the silence timeout listens for.
        if (cell.sound === "silent") expect(media.maxVolumeDb).toBeLessThan(SILENCE_LEVEL_DBFS);
      } else {
        expect(final.recording).toBeNull();
      }
      if (cell.attendeesAtEnd) {
        const meeting = (await stack.control.state(platform, meetingId)) as {
          attendees: Array<{ state: string; leftBy: string | null }>;
        };
        const seen = meeting.attendees.map((a) => (a.leftBy ? `${a.state} (${a.leftBy})` : a.state));
        expect(seen).toEqual(cell.attendeesAtEnd);
      }
    });
  });
});

function processWriting(file: string): boolean {
  try {
    return execFileSync("pgrep", ["-f", `ffmpeg.*${file}`], { encoding: "utf8" }).trim().length > 0;
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}
