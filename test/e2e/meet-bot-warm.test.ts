import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack({ warmRunners: 1 });
});
afterAll(async () => {
  await stack?.close();
});

describe("a bot deployed to a warm runner", () => {
  it("runs the whole call on the stage the runner prepared before it knew its bot", async () => {
    const { api, mock, launcher } = stack;
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/war-mrun-ner?admit=open` },
      botDisplayName: "Warm Bot",
    });
    await api.deploy(bot.id);
    await stack.endOnceSeen("google", "war-mrun-ner", bot.id, 2, 3500);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.deploymentError ?? null).toBeNull();
    expect(final.status).toBe("DONE");
    expect(final.recording?.durationSeconds).toBeGreaterThan(3);
    const names = (await api.botEvents(bot.id))
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName);
    expect(names).toHaveLength(2);
    // The bot's log starts with the runner getting ready while it had no bot yet.
    const log = await readFile(launcher.logFile(bot.id), "utf8");
    const warmAt = log.indexOf("warm: ready");
    expect(warmAt).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('"status":"JOINING_CALL"')).toBeGreaterThan(warmAt);
  });
});
