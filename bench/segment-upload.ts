/**
 * `make bench`: what uploading the recording in segments during the call costs, and what it
 * saves at the end. Bots one after another record a 20-second Meet mock call with segments every
 * 5 s (the default) and with segments off (`MEETBOT_RECORDING_SEGMENT_INTERVAL_MS=0`: one upload
 * at the end, as before), and the bench prints:
 *
 * - the runner's own CPU (its node process: reading the file and the PUTs; ffmpeg and Chromium do
 *   the same work either way) and the bytes it wrote (files and sockets: /proc/<pid>/io wchar)
 *   during 10 s of the call;
 * - the time from the end of the call (its CALL_ENDED event) to the stored recording
 *   (recording.ready is queued in the same transaction that stores it).
 *
 * Prints figures only; asserts nothing.
 */
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { startMockHost } from "../fixtures/host/server.js";
import { startBenchServer } from "./bench-server.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SAMPLE_MS = 10_000;
const CLOCK_TICKS = 100; // USER_HZ on Linux
const SCENARIO = "admit=open&participants=2&endAfterMs=20000";

interface Run {
  cores: number;
  writtenBytes: number;
  sizeBytes: number;
  endToReadyMs: number;
}

/** The node process's CPU ticks (user + system) and bytes written through write(2). */
function ownUsage(pid: number): { ticks: number; written: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const io = readFileSync(`/proc/${pid}/io`, "utf8");
  return {
    ticks: Number(fields[11]) + Number(fields[12]),
    written: Number(/^wchar:\s+(\d+)/m.exec(io)?.[1] ?? 0),
  };
}

async function measure(mockUrl: string, label: string, intervalMs: number): Promise<Run[]> {
  const { api, launcher, close } = await startBenchServer(mockUrl, 0, {
    MEETBOT_RECORDING_SEGMENT_INTERVAL_MS: String(intervalMs),
  });
  const runs: Run[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const code = `seg-${label.slice(0, 4)}-bn${String.fromCharCode(97 + i)}`;
      const bot = await api.createBot({
        meetingInfo: { platform: "google", meetingUrl: `${mockUrl}/meet/${code}?${SCENARIO}` },
        botDisplayName: "Bench Bot",
      });
      await api.deploy(bot.id);
      await api.waitForStatus(bot.id, ["IN_CALL", "FATAL", "DONE"], { timeoutMs: 60_000, intervalMs: 50 });
      const pid = launcher.pid(bot.id);
      if (!pid) throw new Error(`bench bot ${bot.id} has no runner`);
      // Past the start (ffmpeg's first second, the roster), into the steady call.
      await sleep(2_000);
      const before = ownUsage(pid);
      await sleep(SAMPLE_MS);
      const after = ownUsage(pid);
      const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
      if (final.status !== "DONE" || !final.recording) {
        throw new Error(
          `bench bot ${bot.id} ended ${final.status}: ${JSON.stringify(final.deploymentError)}`,
        );
      }
      // The stored row's createdAt: recording.ready is queued in the transaction that writes it.
      const stored = (await (await api.fetchRaw(`/v1/recordings/${bot.id}`)).json()) as {
        sizeBytes: number;
        createdAt: string;
      };
      const events = await api.botEvents(bot.id);
      const callEnded = events.find((e) => e.eventType === "BOT_LEFT");
      if (!callEnded)
        throw new Error(`bench bot ${bot.id}: no end of call in ${events.map((e) => e.eventType)}`);
      const run: Run = {
        cores: (after.ticks - before.ticks) / CLOCK_TICKS / (SAMPLE_MS / 1000),
        writtenBytes: after.written - before.written,
        sizeBytes: stored.sizeBytes,
        endToReadyMs: Date.parse(stored.createdAt) - Date.parse(callEnded.eventTime),
      };
      runs.push(run);
      process.stdout.write(
        `${label} run ${i + 1}/${RUNS}: runner node ${(run.cores * 100).toFixed(1)} % of a core, ` +
          `${kib(run.writtenBytes)} written in ${SAMPLE_MS / 1000} s, recording ${kib(run.sizeBytes)}, ` +
          `end of call → stored ${run.endToReadyMs} ms\n`,
      );
    }
  } finally {
    await close();
  }
  return runs;
}

const kib = (bytes: number) => `${Math.round(bytes / 1024)} KiB`;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const mock = await startMockHost({ port: 0 });
try {
  const segments = await measure(mock.url, "segments", 5_000);
  const whole = await measure(mock.url, "whole", 0);
  const row = (label: string, runs: Run[]) =>
    `| ${label} | ${(median(runs.map((r) => r.cores)) * 100).toFixed(1)} % | ` +
    `${kib(median(runs.map((r) => r.writtenBytes)))} | ${kib(median(runs.map((r) => r.sizeBytes)))} | ` +
    `${median(runs.map((r) => r.endToReadyMs))} ms |`;
  process.stdout.write(
    [
      "",
      `Segment upload (medians of ${RUNS} bots each; 20-s Meet mock calls, 1280x720@25):`,
      `| upload | runner node CPU in the call | written in ${SAMPLE_MS / 1000} s of the call | recording | end of call → recording.ready |`,
      "| --- | --- | --- | --- | --- |",
      row("segments every 5 s", segments),
      row("whole file at the end", whole),
      "",
    ].join("\n"),
  );
} finally {
  await mock.close();
}
