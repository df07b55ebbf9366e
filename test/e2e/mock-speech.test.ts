import { afterAll, beforeAll, describe, it } from "vitest";
import type { SpokenLine } from "../../fixtures/host/script.js";
import { eventually, startStack } from "../helpers/stack.js";
import { type MockMeeting, mockMeeting, type PlatformName } from "../helpers/mock-meetings.js";

/**
 * Scripted mock meetings in real Chromium, on all three platforms: Alice and Bob
 * each read a line, a real bot records the call, and the recording has their speech in it with
 * the platform's speaking indicator (the speaker timeline) on each reader while the line played.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const SCRIPT = [
  { participant: "Alice Example", text: "I will send the report to the team tomorrow" },
  { participant: "Bob Example", text: "We decided to ship the new version on Friday" },
];

function newMeeting(platform: PlatformName): MockMeeting {
  return mockMeeting(stack.mock.url, platform, "spk", 1);
}

describe.concurrent.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 180_000 }, (platform) => {
  it("records the script with each line attributed to its reader", async ({ expect }) => {
    const { id: meetingId, meetingInfo } = newMeeting(platform);
    await stack.control.configure(platform, meetingId, {
      admit: "open",
      participants: 2,
      script: SCRIPT,
      // The bot opens the roster and starts watching the indicators just after admission.
      scriptStartAfterMs: 3000,
      endAfterScript: true,
    });
    const bot = await stack.api.createBot({
      meetingInfo,
      botDisplayName: "Script Bot",
      recording: { video: false },
    });
    await stack.api.deploy(bot.id);
    const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
    expect(final.status).toBe("DONE");

    const meeting = (await stack.control.state(platform, meetingId)) as { spoken: SpokenLine[] };
    expect(meeting.spoken.map((line) => [line.participant, line.text])).toEqual(
      SCRIPT.map((line) => [line.participant, line.text]),
    );

    const media = await stack.downloadRecording(bot.id);
    expect(media.meanVolumeDb).not.toBeNull();
    expect(media.meanVolumeDb as number).toBeGreaterThan(-50);

    // The host's times on the recording's clock, as the speaker timeline's are (RECORDING_STARTED's startedAt).
    const started = await eventually(
      async () => (await stack.api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
      "RECORDING_STARTED",
    );
    const origin = Date.parse(String(started.data?.startedAt));
    const spoken = meeting.spoken.map((line) => ({
      name: line.participant,
      startMs: Date.parse(line.startedAt) - origin,
      endMs: Date.parse(line.endedAt ?? "") - origin,
    }));
    const { speakerTimeline } = await stack.api.recording(bot.id);
    const overlaps = (a: { startMs: number; endMs: number }, b: { startMs: number; endMs: number }) =>
      a.startMs < b.endMs && b.startMs < a.endMs;
    for (const line of spoken) {
      const turns = speakerTimeline.filter((turn) => turn.name === line.name && overlaps(turn, line));
      expect({ line, turns }).toEqual({ line, turns: [expect.anything()] });
    }
    // Nobody else sounds: every turn is its reader's own line (no tones in a scripted meeting).
    for (const turn of speakerTimeline) {
      const own = spoken.filter((line) => line.name === turn.name && overlaps(turn, line));
      expect({ turn, own: own.length }).toEqual({ turn, own: 1 });
    }
  });
});
