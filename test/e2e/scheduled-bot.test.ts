import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

/**
 * A scheduled bot end to end: nobody deploys it; the server does, a lead before its joinAt, with
 * a real runner that joins the mock meeting. The lead is set close to the 30 s a joinAt must be
 * ahead, so that the test waits about a second, not half a minute.
 */
const LEAD_MS = 39_000;

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack({ env: { MEETBOT_SCHEDULE_LEAD_MS: String(LEAD_MS) } });
});
afterAll(async () => {
  await stack?.close();
});

describe("a bot scheduled 40 s ahead", () => {
  it("deploys itself and is in the meeting before its joinAt", async () => {
    const { api, mock } = stack;
    const joinAt = new Date(Date.now() + 40_000).toISOString();
    const bot = await api.createBot({
      meetingInfo: {
        platform: "google",
        meetingUrl: `${mock.url}/meet/sch-edul-edb?admit=open&endAfterMs=3000`,
      },
      botDisplayName: "Scheduled Bot",
      joinAt,
      // Audio-only: when it joins is under test, not what it records.
      recording: { video: false },
    });
    expect(bot.status).toBe("READY_TO_DEPLOY");
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.deploymentError ?? null).toBeNull();
    expect(final.status).toBe("DONE");
    const joined = (await api.botEvents(bot.id)).find((event) => event.eventType === "BOT_JOINED");
    expect(joined).toBeDefined();
    // Joined within the lead: the meeting did not wait for the bot.
    expect(Date.parse(joined!.eventTime)).toBeLessThan(Date.parse(joinAt));
  });
});
