/**
 * `make bench`: how fast a bot gets into a call, what it costs while recording, and how well its
 * recording keeps sound and picture together (bench/av-sync.ts).
 *
 * Runs bots one after another against the mock (instant admission) and prints p50/p95 of
 * deploy → IN_CALL and deploy → first recorded frame, the CPU and PSS of the runner's whole
 * process tree while recording, and the floor: a bare Playwright launch of the same Chromium
 * straight to the same mock page. Absolute times drift on a shared machine; the ratio to the
 * floor is the figure to watch. Prints figures only; asserts nothing.
 */
import { chromium } from "playwright";
import type { ApiClient } from "../src/client/api-client.js";
import { startMockHost } from "../fixtures/host/server.js";
import { DEFAULT_CHROMIUM_PATH } from "../src/core/index.js";
import { pollUntil } from "../test/helpers/poll.js";
import { describeOffsets, measureAvSync } from "./av-sync.js";
import { startBenchServer } from "./bench-server.js";
import { sampleTree } from "./process-tree.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SAMPLE_MS = 5_000;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};
const ms = (v: number) => `${Math.round(v)} ms`;

interface Figures {
  toInCall: number[];
  toFirstFrame: number[];
  cores: number[];
  pss: number[];
  processes: number;
  breakdown: string;
}

/** Runs RUNS bots one after another through a fresh server and launcher; returns their figures. */
/** The meetingInfo of run i's bot, in a fresh meeting that admits at once and ends after 9 s. */
type MeetingFor = (i: number) => Promise<Record<string, unknown>>;

const SCENARIO = { admit: "open", participants: 2, endAfterMs: 9000 };

function meetMeetings(mockUrl: string, prefix: string): MeetingFor {
  const query = new URLSearchParams(Object.entries(SCENARIO).map(([k, v]) => [k, String(v)]));
  return async (i) => ({ platform: "google", meetingUrl: `${meetingUrl(mockUrl, prefix, i)}?${query}` });
}

/** Zoom and Teams meetings are joined by id, so their scenario is set up through the mock's control API. */
function controlledMeetings(mockUrl: string, platform: "zoom" | "teams"): MeetingFor {
  return async (i) => {
    const meetingId = platform === "zoom" ? `8100000000${i}` : `benchteamsmeeting${i}`;
    const response = await fetch(`${mockUrl}/control/meetings/${platform}/${meetingId}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(SCENARIO),
    });
    if (!response.ok) throw new Error(`mock setup for ${platform} ${meetingId}: ${await response.text()}`);
    return platform === "zoom"
      ? { platform, meetingId }
      : { platform, meetingId, tenantId: "bench-tenant", organizerId: "bench-organizer" };
  };
}

async function measureBots(mockUrl: string, warmRunners: number, meetingFor: MeetingFor): Promise<Figures> {
  const { api, launcher, close } = await startBenchServer(mockUrl, warmRunners);
  const figures: Figures = {
    toInCall: [],
    toFirstFrame: [],
    cores: [],
    pss: [],
    processes: 0,
    breakdown: "",
  };
  for (let i = 0; i < RUNS; i++) {
    // With a pool, give it time to refill as it would between real deploys.
    if (warmRunners > 0) await new Promise((resolve) => setTimeout(resolve, 3_000));
    const bot = await api.createBot({ meetingInfo: await meetingFor(i), botDisplayName: "Bench Bot" });
    const deployedAt = Date.now();
    await api.deploy(bot.id);
    await api.waitForStatus(bot.id, ["IN_CALL", "FATAL", "DONE"], { timeoutMs: 60_000, intervalMs: 50 });
    const pid = launcher.pid(bot.id);
    // From the first recorded frame: `IN_CALL` comes before the recorder and the roster have
    // started, which on a slow machine added a quarter of a core to the figure.
    if (pid && (await recordingStarted(api, bot.id))) {
      const sample = await sampleTree(pid, SAMPLE_MS);
      figures.cores.push(sample.cores);
      figures.pss.push(sample.pssBytes);
      figures.processes = sample.processes;
      figures.breakdown = Object.entries(sample.pssByName)
        .sort((a, b) => b[1] - a[1])
        .map(([name, bytes]) => `${name} ${Math.round(bytes / 2 ** 20)}`)
        .join(", ");
    }
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    if (final.status !== "DONE") {
      throw new Error(`bench bot ${bot.id} ended ${final.status}: ${JSON.stringify(final.deploymentError)}`);
    }
    const events = await api.events({ bot_id: bot.id, page_size: 100 });
    const at = (type: string) => {
      const event = events.events.find((e) => e.eventType === type);
      return event?.eventTime ? Date.parse(event.eventTime) - deployedAt : Number.NaN;
    };
    figures.toInCall.push(at("IN_CALL"));
    figures.toFirstFrame.push(at("RECORDING"));
    process.stdout.write(
      `${warmRunners > 0 ? "warm" : "cold"} run ${i + 1}/${RUNS}: deploy→IN_CALL ${ms(at("IN_CALL"))}, first frame ${ms(at("RECORDING"))}\n`,
    );
  }
  await close();
  return figures;
}

/** Waits (up to 20 s) for the bot's `RECORDING` event; false if it never came. */
function recordingStarted(api: ApiClient, botId: number): Promise<boolean> {
  return pollUntil(
    async () => {
      const { events } = await api.events({ bot_id: botId, page_size: 100 });
      if (!events.some((e) => e.eventType === "RECORDING")) throw new Error("not recording yet");
    },
    { timeout: 20_000, interval: 50 },
  ).then(
    () => true,
    () => false,
  );
}

/** A fresh meeting per run, with a code in Meet's own format (xxx-xxxx-xxx). */
function meetingUrl(mockUrl: string, prefix: string, i: number): string {
  return `${mockUrl}/meet/${prefix}-benc-hm${String.fromCharCode(97 + (i % 26))}`;
}

async function measureFloor(mockUrl: string): Promise<number[]> {
  const floor: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const browser = await chromium.launch({
      executablePath: process.env.MEETBOT_CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
      ],
    });
    const page = await browser.newPage();
    await page.goto(`${meetingUrl(mockUrl, "flr", i)}?admit=open`, { waitUntil: "load" });
    floor.push(performance.now() - t0);
    await browser.close();
  }
  return floor;
}

/**
 * N bots recording at once, each in its own meeting, through one server: ffmpeg's dropped-frame
 * counter and the frames actually written against the time recorded, per bot.
 */
async function measureConcurrent(mockUrl: string, bots: number): Promise<string> {
  const { api, close } = await startBenchServer(mockUrl);
  const ids = await Promise.all(
    Array.from({ length: bots }, async (_, i) => {
      const bot = await api.createBot({
        meetingInfo: {
          platform: "google",
          // One meeting per bot: prefix by the round (cca, ccb, ...), last letter by the bot.
          meetingUrl: `${meetingUrl(mockUrl, `cc${String.fromCharCode(97 + bots)}`, i)}?admit=open&participants=2&endAfterMs=15000`,
        },
        botDisplayName: `Bench Bot ${i + 1}`,
      });
      await api.deploy(bot.id);
      return bot.id;
    }),
  );
  const rows: string[] = [];
  let worstDrop = 0;
  let worstFps = Number.POSITIVE_INFINITY;
  for (const id of ids) {
    const final = await api.waitForStatus(id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
    const stopped = (await api.botEvents(id)).find((e) => e.eventType === "RECORDING_STOPPED")?.data ?? {};
    const frames = Number(stopped.frames ?? 0);
    const dropped = Number(stopped.droppedFrames ?? 0);
    const seconds = Number(stopped.durationMs ?? 0) / 1000;
    const dropPct = (100 * dropped) / Math.max(1, frames + dropped);
    const fps = frames / Math.max(0.001, seconds);
    worstDrop = Math.max(worstDrop, dropPct);
    worstFps = Math.min(worstFps, fps);
    rows.push(
      `${final.status} ${frames} frames in ${seconds.toFixed(1)} s (${fps.toFixed(1)} fps), ${dropped} dropped`,
    );
  }
  await close();
  return `  ${bots} bot${bots > 1 ? "s" : " "} at once: worst dropped ${worstDrop.toFixed(2)} % (goal < 1 %), worst ${worstFps.toFixed(1)} fps of 25   [${rows.join("; ")}]`;
}

async function main() {
  const mock = await startMockHost({ port: 0 });
  const floor = await measureFloor(mock.url);
  const cold = await measureBots(mock.url, 0, meetMeetings(mock.url, "cld"));
  const warm = process.env.BENCH_COLD_ONLY
    ? cold
    : await measureBots(mock.url, 1, meetMeetings(mock.url, "wrm"));
  const zoom = await measureBots(mock.url, 0, controlledMeetings(mock.url, "zoom"));
  const teams = await measureBots(mock.url, 0, controlledMeetings(mock.url, "teams"));
  const concurrency: string[] = [];
  for (let n = 1; n <= Number(process.env.BENCH_MAX_CONCURRENT ?? 4); n++) {
    concurrency.push(await measureConcurrent(mock.url, n));
    process.stdout.write(`${concurrency.at(-1)}\n`);
  }
  const avSync = describeOffsets(await measureAvSync(mock.url));
  await mock.close();

  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);
  const p = (v: number[]) => `p50 ${ms(percentile(v, 50))}  p95 ${ms(percentile(v, 95))}`;
  const ratio = (v: number[]) => `${(percentile(v, 50) / percentile(floor, 50)).toFixed(2)}x`;
  const lines = [
    "",
    `meetbot bench (${RUNS} runs each, 1280x720@25, ${new Date().toISOString()})`,
    `  floor: bare Chromium launch → mock page loaded        ${p(floor)}`,
    `  Meet, cold runner: deploy → IN_CALL                         ${p(cold.toInCall)}   ratio to floor ${ratio(cold.toInCall)}`,
    `  Meet, cold runner: deploy → first recorded frame            ${p(cold.toFirstFrame)}`,
    `  Meet, warm runner (MEETBOT_WARM_RUNNERS=1): deploy → IN_CALL ${p(warm.toInCall)}   ratio to floor ${ratio(warm.toInCall)}   (goal ≤ 2x)`,
    `  Meet, warm runner: deploy → first recorded frame            ${p(warm.toFirstFrame)}`,
    `  Zoom, cold runner: deploy → IN_CALL                   ${p(zoom.toInCall)}   ratio to floor ${ratio(zoom.toInCall)}`,
    `  Teams, cold runner: deploy → IN_CALL                  ${p(teams.toInCall)}   ratio to floor ${ratio(teams.toInCall)}`,
    // PSS from cold runs only: a warm pool's idle runner shares the binaries' pages, which would
    // halve their share in the measured tree and flatter the figure.
    ...(
      [
        ["Meet", cold],
        ["Zoom", zoom],
        ["Teams", teams],
      ] as const
    ).map(
      ([name, f]) =>
        `  ${name} while recording, whole tree (${f.processes} processes): CPU ${mean(f.cores).toFixed(2)} cores (goal ≤ 0.5), PSS ${Math.round(mean(f.pss) / 2 ** 20)} MB (goal ≤ 500)`,
    ),
    `  PSS by process (MB, last cold Meet run): ${cold.breakdown}`,
    ...concurrency,
    avSync,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench failed: ${(error as Error).stack}\n`);
    process.exit(1);
  },
);
