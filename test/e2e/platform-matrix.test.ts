import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * The outcomes every platform shares, on all three: the same scenario set up through the mock's
 * control API, the same expectations. Platform-specific outcomes (passcodes, launchers, lobbies)
 * are in meet-bot-*, zoom-bot and teams-bot.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

type PlatformName = "google" | "zoom" | "teams";
let serial = 0;

/** A fresh meeting id in the platform's own format, and the meetingInfo that joins it. */
function newMeeting(platform: PlatformName): { id: string; meetingInfo: Record<string, unknown> } {
  serial += 1;
  const letters = (n: number) => String.fromCharCode(97 + (Math.floor(n / 26) % 26), 97 + (n % 26));
  switch (platform) {
    case "google": {
      const id = `mtx-plat-f${letters(serial)}`;
      return { id, meetingInfo: { platform, meetingUrl: `${stack.mock.url}/meet/${id}` } };
    }
    case "zoom": {
      const id = `8200000${String(serial).padStart(4, "0")}`;
      return { id, meetingInfo: { platform, meetingId: id } };
    }
    case "teams": {
      const id = `matrixmeeting${String(serial).padStart(4, "0")}`;
      return {
        id,
        meetingInfo: { platform, meetingId: id, tenantId: "matrix-tenant", organizerId: "matrix-org" },
      };
    }
  }
}

async function botIn(
  platform: PlatformName,
  scenario: Record<string, unknown>,
  body: Record<string, unknown> = {},
) {
  const { id, meetingInfo } = newMeeting(platform);
  await stack.control.configure(platform, id, scenario);
  const bot = await stack.api.createBot({ meetingInfo, botDisplayName: "Matrix Bot", ...body });
  await stack.api.deploy(bot.id);
  return { botId: bot.id, meetingId: id };
}

const finalOf = (botId: number) => stack.api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 60_000 });
const leftWith = async (botId: number) =>
  (await stack.api.botEvents(botId)).find((e) => e.eventType === "BOT_LEFT")?.data?.subCode;

describe.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 90_000 }, (platform) => {
  it("leaves an empty meeting after noOneJoinedTimeout: DONE, CALL_ENDED NO_ONE_JOINED", async () => {
    const { botId } = await botIn(
      platform,
      { admit: "open", participants: 0 },
      { automaticLeave: { noOneJoinedTimeout: 2000 } },
    );
    const final = await finalOf(botId);
    expect(final.status).toBe("DONE");
    expect(await leftWith(botId)).toBe("NO_ONE_JOINED");
  });

  it("leaves once everyone else has left for everyoneLeftTimeout: DONE, CALL_ENDED EVERYONE_LEFT", async () => {
    const { botId } = await botIn(
      platform,
      { admit: "open", participants: 2, leaveAfterMs: 2000 },
      { automaticLeave: { everyoneLeftTimeout: 2000 } },
    );
    const final = await finalOf(botId);
    expect(final.status).toBe("DONE");
    expect(final.recording).not.toBeNull();
    const events = await stack.api.botEvents(botId);
    expect(events.filter((e) => e.eventType === "PARTICIPANT_JOINED")).toHaveLength(2);
    expect(events.filter((e) => e.eventType === "PARTICIPANT_LEFT")).toHaveLength(2);
    expect(await leftWith(botId)).toBe("EVERYONE_LEFT");
  });

  it("on SIGTERM mid-call leaves, uploads and ends DONE with CALL_ENDED LEFT_ON_REQUEST", async () => {
    const { botId } = await botIn(platform, { admit: "open", participants: 2 });
    await eventually(
      async () => (await stack.api.botEvents(botId)).find((e) => e.eventType === "RECORDING_STARTED"),
      "recording",
      60_000,
    );
    const exited = stack.launcher.waitForExit(botId);
    await stack.launcher.stop(botId);
    expect(await exited).toEqual({ code: 0, signal: null });
    const final = await finalOf(botId);
    expect(final.status).toBe("DONE");
    expect(final.recording).not.toBeNull();
    expect(await leftWith(botId)).toBe("LEFT_ON_REQUEST");
    // The platform saw the bot go.
    const meeting = (await stack.control.state(platform, (await botMeeting(botId)) as string)) as {
      attendees: Array<{ state: string }>;
    };
    expect(meeting.attendees.map((a) => a.state)).toEqual(["left"]);
  });

  it("is removed by the host mid-call: CALL_ENDED REMOVED, then DONE with the recording", async () => {
    const { botId, meetingId } = await botIn(platform, { admit: "open", participants: 2 });
    await eventually(
      async () => (await stack.api.botEvents(botId)).find((e) => e.eventType === "RECORDING_STARTED"),
      "recording",
      60_000,
    );
    await stack.control.remove(platform, meetingId);
    const final = await finalOf(botId);
    expect(final.status).toBe("DONE");
    expect(final.recording).not.toBeNull();
    expect(await leftWith(botId)).toBe("REMOVED");
  });

  it("meets the platform's bot wall: FATAL BLOCKED", async () => {
    const { botId } = await botIn(platform, { page: "blocked" });
    const final = await finalOf(botId);
    expect(final.status).toBe("FATAL");
    expect(final.deploymentError?.code).toBe("BLOCKED");
  });
});

/** The mock meeting id a bot was sent to (from its meetingInfo). */
async function botMeeting(botId: number): Promise<string | undefined> {
  const info = (await stack.api.bot(botId)).meetingInfo;
  if (typeof info.meetingId === "string") return info.meetingId;
  return typeof info.meetingUrl === "string" ? new URL(info.meetingUrl).pathname.split("/").pop() : undefined;
}
