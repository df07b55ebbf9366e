/**
 * A/V sync of a recording: a bot records a mock Meet call whose one participant beeps and turns
 * its tile white at the same instant once a second (the mock's media=sync), then ffmpeg reads the
 * recording back: the middle of each white stretch in the video against the middle of the
 * matching beep in the audio. Positive offsets mean the picture comes after the sound.
 *
 * Middles, not edges: at 25 fps a flash's first frame lags its start by 0–40 ms, but the frames
 * inside a 200 ms flash are centred on it, and the beeps' 1.013 s period walks the flashes across
 * every phase of the frame clock, so the mean carries no quantization bias.
 *
 * Runs on its own (`node --import tsx bench/av-sync.ts`) or as part of `make bench`.
 * BENCH_AV_SYNC_LIVE=1 gives the bot a live transcript from pocketsphinx (a second reader of its
 * sound card and a decoder beside the recorder), which must not move the sync.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { startMockHost } from "../fixtures/host/server.js";
import { startBenchServer } from "./bench-server.js";

const run = promisify(execFile);
const CALL_MS = 25_000;

interface Stretch {
  start: number;
  end: number;
}
const middle = (s: Stretch) => (s.start + s.end) / 2;

/** Records one sync call and returns its offsets, one per beep seen in both streams (seconds). */
export async function measureAvSync(
  mockUrl: string,
  opts: { liveTranscript?: boolean } = {},
): Promise<number[]> {
  const { api, dataDir, launcher, close } = await startBenchServer(mockUrl);
  if (opts.liveTranscript) {
    // The server does not hand liveTranscript to runners yet: the bench plays that part.
    const launch = launcher.launch.bind(launcher);
    launcher.launch = (config) =>
      launch({ ...config, liveTranscript: { source: "pocketsphinx", fallback: false } });
  }
  try {
    const query = `admit=open&participants=1&media=sync&endAfterMs=${CALL_MS}`;
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mockUrl}/meet/syn-cbea-con?${query}` },
      botDisplayName: "Sync Bench Bot",
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: CALL_MS + 60_000 });
    if (final.status !== "DONE") throw new Error(`sync bot ended ${final.status}`);
    const file = join(dataDir, "sync.mp4");
    const response = await fetch((await api.recordingDownload(bot.id)).url);
    await writeFile(file, Buffer.from(await response.arrayBuffer()));
    return offsets(await flashes(file), await beeps(file));
  } finally {
    await close();
  }
}

/** For each flash, the offset to the beep whose middle is nearest (within half a period). */
export function offsets(flashList: Stretch[], beepList: Stretch[]): number[] {
  const result: number[] = [];
  for (const flash of flashList) {
    const nearest = beepList.reduce<Stretch | undefined>(
      (best, beep) =>
        !best || Math.abs(middle(beep) - middle(flash)) < Math.abs(middle(best) - middle(flash))
          ? beep
          : best,
      undefined,
    );
    if (nearest && Math.abs(middle(nearest) - middle(flash)) < 0.5)
      result.push(middle(flash) - middle(nearest));
  }
  return result;
}

/**
 * Stretches of a signal above the midpoint of its range. Each sample stands for `step` seconds
 * from its timestamp, so a stretch ends where its last sample's span ends.
 */
export function stretchesAbove(samples: Array<[number, number]>, step: number): Stretch[] {
  const values = samples.map(([, v]) => v);
  const threshold = (Math.min(...values) + Math.max(...values)) / 2;
  const found: Stretch[] = [];
  let open: Stretch | undefined;
  for (const [t, v] of samples) {
    if (v > threshold) {
      if (open) open.end = t + step;
      else open = { start: t, end: t + step };
    } else if (open) {
      found.push(open);
      open = undefined;
    }
  }
  if (open) found.push(open);
  return found;
}

/** The white stretches: mean luma of each frame, from its presentation time. */
async function flashes(file: string): Promise<Stretch[]> {
  const rows = await lavfiFrames(`movie=${file},signalstats`, "lavfi.signalstats.YAVG");
  // A frame shows what was on screen at its timestamp: a point, so it spans no time of its own.
  return stretchesAbove(rows, 0).map((s) => ({ start: s.start, end: s.end }));
}

/** The beeps: RMS level of each 1 ms of audio, from its presentation time. */
async function beeps(file: string): Promise<Stretch[]> {
  const rows = await lavfiFrames(
    `amovie=${file},asetnsamples=n=48:p=0,astats=metadata=1:reset=1`,
    "lavfi.astats.Overall.RMS_level",
  );
  const usable = rows.map(([t, db]): [number, number] => [t, Number.isFinite(db) ? db : -200]);
  return stretchesAbove(usable, 0.001);
}

/** [pts_time, tag value] for every frame a lavfi graph puts out, read with ffprobe. */
async function lavfiFrames(graph: string, tag: string): Promise<Array<[number, number]>> {
  const { stdout } = await run(
    "ffprobe",
    [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      graph,
      "-show_entries",
      `frame=pts_time:frame_tags=${tag}`,
      "-of",
      "csv=p=0",
    ],
    { maxBuffer: 256 * 2 ** 20 },
  );
  return stdout
    .trim()
    .split("\n")
    .map((line) => line.split(",").map(Number) as [number, number])
    .filter(([t]) => Number.isFinite(t));
}

/** One line for the bench's report. */
export function describeOffsets(values: number[]): string {
  if (values.length === 0) return "  A/V sync: no beep/flash pairs found in the recording";
  const ms = values.map((v) => v * 1000);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  const sorted = [...ms].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  const spread = Math.sqrt(ms.reduce((a, b) => a + (b - mean) ** 2, 0) / ms.length);
  return (
    `  A/V sync (${ms.length} beep/flash pairs, + = video late): mean ${mean.toFixed(1)} ms, ` +
    `median ${median.toFixed(1)} ms, sd ${spread.toFixed(1)} ms, range ${sorted[0]?.toFixed(0)}..${sorted.at(-1)?.toFixed(0)} ms (goal |mean| ≤ 25)`
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const mock = await startMockHost({ port: 0 });
  try {
    const liveTranscript = process.env.BENCH_AV_SYNC_LIVE === "1";
    if (liveTranscript) process.stdout.write("  (the bot has a live transcript from pocketsphinx)\n");
    process.stdout.write(`${describeOffsets(await measureAvSync(mock.url, { liveTranscript }))}\n`);
  } finally {
    await mock.close();
  }
}
