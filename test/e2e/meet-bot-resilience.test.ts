import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inspectRecording, probeDuration } from "../../src/runner/probe.js";
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

const recordingOnDisk = (botId: number) =>
  join(stack.dataDir, "bots", String(botId), "work", "recording.mp4");

describe("a bot that is stopped or loses its control plane", () => {
  it("on SIGTERM in the call: leaves, finalizes and uploads the recording, reports DONE, exits 0", async () => {
    const { api, launcher } = stack;
    const { botId } = await botRecording("sig-term-bot");
    await eventually(
      async () => ((await probeDuration(recordingOnDisk(botId))) >= 3000 ? true : undefined),
      "3 s",
    );
    const exited = launcher.waitForExit(botId);
    await launcher.stop(botId);
    expect(await exited).toEqual({ code: 0, signal: null });

    const final = await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 30_000 });
    expect(final.status).toBe("DONE");
    const left = (await api.botEvents(botId)).find((e) => e.eventType === "BOT_LEFT");
    expect(left?.data).toMatchObject({ subCode: "LEFT_ON_REQUEST" });
    const media = await stack.downloadRecording(botId);
    expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
    expect(media.durationSeconds).toBeGreaterThanOrEqual(3);
  });

  it("on SIGKILL in the call: the file on disk stays playable up to about the kill, and ffmpeg does not linger", async () => {
    const { launcher } = stack;
    const { botId, recordingStartedAt } = await botRecording("sig-kill-bot");
    const file = recordingOnDisk(botId);
    await eventually(async () => ((await probeDuration(file)) >= 4000 ? true : undefined), "4 s on disk");
    const pid = launcher.pid(botId) as number;
    const exited = launcher.waitForExit(botId);
    const killedAt = Date.now();
    process.kill(pid, "SIGKILL");
    expect((await exited)?.signal).toBe("SIGKILL");

    // No ffmpeg keeps recording into the file after its runner is gone.
    await eventually(async () => (ffmpegWritingTo(file) ? undefined : true), "ffmpeg to exit", 15_000);
    const media = await inspectRecording(file);
    expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
    const recordedBeforeKill = (killedAt - recordingStartedAt) / 1000;
    expect(media.durationSeconds).toBeGreaterThan(recordedBeforeKill - 1.5);
    expect(media.durationSeconds).toBeLessThan(recordedBeforeKill + 3);
  });

  it("loses no event and applies none twice when the control plane is down for 10 s mid-call", async () => {
    const { api, control } = stack;
    const code = "out-agea-bot";
    const { botId } = await botRecording(code);
    await eventually(async () => {
      const joined = (await api.botEvents(botId)).filter((e) => e.eventType === "PARTICIPANT_JOINED");
      return joined.length === 2 ? true : undefined;
    }, "both participants reported");

    const restart = await stack.stopServer();
    // While the server is away: someone joins and then the host ends the meeting.
    await control.addParticipant("google", code, "Dana Outage");
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await control.end("google", code);
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    await restart();

    const final = await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 90_000 });
    expect(final.status).toBe("DONE");
    expect(final.recording).not.toBeNull();
    const events = await api.botEvents(botId);
    const names = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data?.participantName);
    expect(names).toHaveLength(3);
    expect(names).toContain("Dana Outage");
    const counts = new Map<string, number>();
    for (const e of events) counts.set(e.eventType, (counts.get(e.eventType) ?? 0) + 1);
    for (const once of ["BOT_JOINED", "RECORDING_STARTED", "RECORDING_STOPPED", "BOT_LEFT"]) {
      expect(counts.get(once), once).toBe(1);
    }
    const aggregated = (await api.events({ bot_id: botId, page_size: 100 })).events;
    expect([...aggregated].sort((a, b) => a.id - b.id).map((e) => e.eventType)).toEqual([
      "JOINING_CALL",
      "IN_CALL",
      "RECORDING",
      "CALL_ENDED",
      "DONE",
    ]);
  });
  it("when Chromium dies mid-call: FATAL BROWSER_CRASHED, with the recording finalized and uploaded", async () => {
    const { api, launcher } = stack;
    const { botId } = await botRecording("bro-kenb-rwz");
    await eventually(
      async () => ((await probeDuration(recordingOnDisk(botId))) >= 3000 ? true : undefined),
      "3 s",
    );
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
    const file = recordingOnDisk(botId);
    await eventually(async () => ((await probeDuration(file)) >= 3000 ? true : undefined), "3 s");
    const ffmpegPid = Number(execFileSync("pgrep", ["-f", `ffmpeg.*${file}`], { encoding: "utf8" }).trim());
    process.kill(ffmpegPid, "SIGKILL");
    await eventually(
      async () =>
        (await api.botLogs(botId)).some((l) => l.message.includes("new segment")) ? true : undefined,
      "the restart to be reported",
    );
    await eventually(
      async () =>
        ffmpegWritingTo(join(stack.dataDir, "bots", String(botId), "work", "recording-part2.mp4"))
          ? true
          : undefined,
      "the second segment",
    );
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // let the second segment record a while
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

function ffmpegWritingTo(file: string): boolean {
  try {
    return execFileSync("pgrep", ["-f", `ffmpeg.*${file}`], { encoding: "utf8" }).trim().length > 0;
  } catch {
    return false; // pgrep exits 1 when nothing matches
  }
}
