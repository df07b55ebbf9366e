import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("a bot that cannot get into the call", () => {
  it("is denied by the host: FATAL ADMISSION_DENIED, with a screenshot of what it saw", async () => {
    const { api, mock } = stack;
    const bot = await api.createBot({
      meetingInfo: {
        platform: "google",
        meetingUrl: `${mock.url}/meet/den-iedb-ott?admit=deny&admitAfterMs=500`,
      },
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("FATAL");
    expect(final.deploymentError?.code).toBe("ADMISSION_DENIED");
    const screenshot = final.deploymentError?.artifacts?.find((a) => a.endsWith(".png"));
    expect(screenshot && existsSync(screenshot)).toBe(true);
    const types = (await api.botEvents(bot.id)).map((e) => e.eventType);
    expect(types).toContain("ERROR");
    expect(types).not.toContain("BOT_JOINED");
    expect(final.recording).toBeNull();
  });

  it("gives up after waitingRoomTimeout: leaves the lobby and ends FATAL WAITING_ROOM_TIMEOUT", async () => {
    const { api, mock, control } = stack;
    const code = "slo-whos-tzz";
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?admit=manual` },
      automaticLeave: { waitingRoomTimeout: 3000 },
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("FATAL");
    expect(final.deploymentError?.code).toBe("WAITING_ROOM_TIMEOUT");
    const aggregated = (await api.events({ bot_id: bot.id })).events.map((e) => e.eventType);
    expect(aggregated).toContain("IN_WAITING_ROOM");
    expect(aggregated).not.toContain("IN_CALL");
    // The bot really left: the host no longer sees it waiting.
    const meeting = (await control.state("google", code)) as { attendees: Array<{ state: string }> };
    expect(meeting.attendees.map((a) => a.state)).not.toContain("lobby");
  });

  it("reports a meeting code that does not exist as FATAL MEETING_NOT_FOUND", async () => {
    const { api, mock } = stack;
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/not-a-real-code` },
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.deploymentError?.code).toBe("MEETING_NOT_FOUND");
  });
});
