import { afterAll, beforeAll, describe, it } from "vitest";
import { UI_VARIANTS } from "../../fixtures/host/scenario.js";
import { startStack } from "../helpers/stack.js";

/**
 * The drift suite: each adapter against every drifted layout of its mock page
 * (fixtures/<platform>/ui-variants.ts), pages that use the real platforms' hooks but arrange them
 * differently from our default mocks. Each must reach DONE with the participants named, who spoke
 * when, and sound in the recording.
 *
 * The bots are audio-only: the drift is in the page's hooks, which video does not touch (the screen
 * is captured whatever the layout), and an audio-only bot also turns incoming video off through
 * the drifted menus.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const PARTICIPANTS = ["Alice Example", "Bob Example"];
/** Far above the -91 dB of a silent capture, far below the mock's tones (about -20 dB mean). */
const AUDIBLE_MEAN_DB = -50;

let serial = 0;
function newMeeting(platform: keyof typeof UI_VARIANTS) {
  serial += 1;
  const n = String(serial).padStart(4, "0");
  switch (platform) {
    case "google": {
      const letters = String.fromCharCode(97 + (Math.floor(serial / 26) % 26), 97 + (serial % 26));
      const id = `uid-rift-x${letters}`;
      return { id, meetingInfo: { platform, meetingUrl: `${stack.mock.url}/meet/${id}` } };
    }
    case "zoom":
      return { id: `8300000${n}`, meetingInfo: { platform, meetingId: `8300000${n}` } };
    case "teams": {
      const id = `driftmeeting${n}`;
      return {
        id,
        meetingInfo: { platform, meetingId: id, tenantId: "drift-tenant", organizerId: "drift-org" },
      };
    }
  }
}

const cells = (Object.keys(UI_VARIANTS) as Array<keyof typeof UI_VARIANTS>).flatMap((platform) =>
  UI_VARIANTS[platform].map((variant) => ({ platform, ...variant })),
);

describe.concurrent.each(cells)("$platform ui=$name", { timeout: 180_000 }, (cell) => {
  it("reaches DONE with the participants named, speakers and sound", async ({ expect }) => {
    const { id: meetingId, meetingInfo } = newMeeting(cell.platform);
    await stack.control.configure(cell.platform, meetingId, {
      admit: "auto",
      admitAfterMs: 1500,
      participants: PARTICIPANTS.length,
      // The test ends the call (below); this only ends one whose speakers the bot never sees.
      endAfterMs: 60_000,
      ...cell.scenario,
      ui: [cell.name],
    });
    const bot = await stack.api.createBot({
      meetingInfo,
      botDisplayName: "Drift Bot",
      recording: { video: false },
    });
    await stack.api.deploy(bot.id);
    await stack.endOnceEachSpoke(cell.platform, meetingId, bot.id, PARTICIPANTS.length);
    const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
    expect(final.deploymentError).toBeNull();
    expect(final.status).toBe("DONE");

    const events = await stack.api.botEvents(bot.id);
    expect(events.filter((e) => e.eventType === "BOT_LEFT").map((e) => e.data?.subCode)).toEqual([
      "MEETING_ENDED",
    ]);
    const joined = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName);
    expect([...joined].sort()).toEqual(PARTICIPANTS);

    const recording = await stack.api.recording(bot.id);
    const speakers = new Set(recording.speakerTimeline.map((turn) => turn.name));
    expect([...speakers].sort()).toEqual(PARTICIPANTS);
    const media = await stack.downloadRecording(bot.id);
    expect(media.streams.map((s) => `${s.type}:${s.codec}`)).toEqual(["audio:aac"]);
    expect(media.meanVolumeDb).toBeGreaterThan(AUDIBLE_MEAN_DB);
  });
});
