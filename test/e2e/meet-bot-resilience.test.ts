import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

/** Creates and deploys a bot into an open meeting and waits until it is recording. */
async function botRecording(code: string, query = "admit=open&participants=2") {
  const { api, mock } = stack;
  const bot = await api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?${query}` },
    botDisplayName: "Sturdy Bot",
  });
  await api.deploy(bot.id);
  const started = await eventually(
    async () => (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
    `bot ${bot.id} recording`,
    60_000,
  );
  return { botId: bot.id, recordingStartedAt: Date.parse(started.eventTime) };
}

// Side by side (each test has its own meeting): a bot spends its call waiting, not computing.
describe.concurrent("a bot whose browser or recorder dies mid-call", () => {
  it("when Chromium dies mid-call: FATAL BROWSER_CRASHED, with the recording finalized and uploaded", async () => {
    const { api, launcher } = stack;
    const { botId } = await botRecording("bro-kenb-rwz");
    await stack.recordedOnDisk(botId, 3000);
    const runnerPid = launcher.pid(botId) as number;
    const browserPid = Number(
      execFileSync("pgrep", ["-P", String(runnerPid), "-f", "chromium"], { encoding: "utf8" })
        .trim()
        .split("\n")[0],
    );
    expect(browserPid).toBeGreaterThan(0);
    process.kill(browserPid, "SIGKILL");

    const final = await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 30_000 });
    expect(final.status).toBe("FATAL");
    expect(final.deploymentError?.code).toBe("BROWSER_CRASHED");
    expect(final.recording).not.toBeNull();
    const media = await stack.downloadRecording(botId);
    expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
    expect(media.durationSeconds).toBeGreaterThanOrEqual(3);
  });
  it("when ffmpeg dies mid-call: records on into a new segment and delivers one joined recording", async () => {
    const { api, control, launcher } = stack;
    const code = "ffm-pegd-ies";
    const { botId, recordingStartedAt } = await botRecording(code);
    const exited = launcher.waitForExit(botId);
    const file = await stack.recordedOnDisk(botId, 3000);
    const ffmpegPid = Number(execFileSync("pgrep", ["-f", `ffmpeg.*${file}`], { encoding: "utf8" }).trim());
    process.kill(ffmpegPid, "SIGKILL");
    await eventually(
      async () =>
        (await api.botLogs(botId)).some((l) => l.message.includes("new segment")) ? true : undefined,
      "the restart to be reported",
    );
    // The second segment holds a while of the call before the call ends.
    await stack.recordedOnDisk(botId, 2000, "recording-part2.mp4");
    await control.end("google", code);
    const final = await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 30_000 });
    expect(final.status).toBe("DONE");
    expect(await exited).toEqual({ code: 0, signal: null });

    const media = await stack.downloadRecording(botId);
    expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
    // Both segments are in it, in their place on the call's clock: as long as the call, about.
    const ended = (await api.events({ bot_id: botId, event_type: "CALL_ENDED" })).events[0];
    const callSeconds = (Date.parse(ended?.eventTime ?? "") - recordingStartedAt) / 1000;
    expect(media.durationSeconds).toBeGreaterThan(callSeconds - 1.5);
    expect(media.durationSeconds).toBeLessThan(callSeconds + 1.5);
  });
});
