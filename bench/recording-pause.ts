/**
 * `make bench`: pausing and resuming a recording. A real bot (runner, Chromium, ffmpeg, the
 * control plane) is in a silent mock Meet call; the bench pauses and resumes its recording
 * BENCH_PAUSES times, PAUSE_MS paused and RECORD_MS recording each time. Prints:
 *
 * - `POST …/pause-recording` → the command done (the runner's clock stopped, ffmpeg stopped with
 *   'q' and RECORDING_PAUSED reported), and `POST …/resume-recording` → done (ffmpeg started again
 *   and its first frame encoded): p50/p95/max. The bench polls the command every 50 ms, so each
 *   figure is late by up to that;
 * - the recording's duration against the time it recorded (its clock at the stop: the wall time
 *   from its start to recording.stopped, less the pauses), and how much longer it would be had
 *   it kept the pauses.
 *
 * Figures only; asserts nothing.
 */
import { startMockHost } from "../fixtures/host/server.js";
import type { ApiClient } from "../src/client/api-client.js";
import { botInSilentMeetCall, startBenchServer } from "./bench-server.js";
import { figures } from "./figures.js";

const PAUSES = Number(process.env.BENCH_PAUSES ?? 5);
const PAUSE_MS = 3_000;
const RECORD_MS = 3_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks, then polls the command until it is done; answers how long that took (ms). */
async function timed(api: ApiClient, botId: number, ask: () => Promise<{ commandId: number }>) {
  const asked = Date.now();
  const { commandId } = await ask();
  for (;;) {
    const command = await api.command(botId, commandId);
    if (command.status === "done") return Date.now() - asked;
    if (command.status === "failed")
      throw new Error(`command ${commandId} failed: ${JSON.stringify(command.error)}`);
    await sleep(50);
  }
}

async function main() {
  const mock = await startMockHost({ port: 0 });
  const { api, close } = await startBenchServer(mock.url);
  try {
    const botId = await botInSilentMeetCall(api, mock.url, "pau-bnch-abc", { botDisplayName: "Bench Pause" });
    const pauses: number[] = [];
    const resumes: number[] = [];
    for (let i = 0; i < PAUSES; i++) {
      await sleep(RECORD_MS);
      pauses.push(await timed(api, botId, () => api.pauseRecording(botId)));
      await sleep(PAUSE_MS);
      resumes.push(await timed(api, botId, () => api.resumeRecording(botId)));
    }
    await sleep(RECORD_MS);
    await api.leave(botId);
    await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    console.log(`pause-recording → done: ${figures(pauses)}`);
    console.log(`resume-recording → done (first frame again): ${figures(resumes)}`);

    const events = await api.botEvents(botId);
    const data = (type: string) => events.filter((e) => e.eventType === type).map((e) => e.data ?? {});
    const startedAt = Date.parse(String(data("RECORDING_STARTED")[0]?.startedAt));
    const pausedMs = data("RECORDING_RESUMED").reduce((sum, d) => sum + Number(d.pausedMs), 0);
    const stopped = events.find((e) => e.eventType === "RECORDING_STOPPED");
    const durationMs = Number(stopped?.data?.durationMs);
    // recording.stopped is reported after the join and the probe: its time is an upper bound.
    const recordedMs = Date.parse(String(stopped?.eventTime)) - startedAt - pausedMs;
    console.log(
      `recording: ${durationMs} ms for at most ${recordedMs} ms recorded (${PAUSES} pauses, ${pausedMs} ms paused ` +
        `left out; the file is ${recordedMs - durationMs} ms shorter than that bound)`,
    );
  } finally {
    await close();
    await mock.close();
  }
}

await main();
