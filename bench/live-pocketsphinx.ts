/**
 * Live transcripts from pocketsphinx with a real bot in a scripted Meet mock: Alice
 * and Bob read nine lines, one of them long enough to be cut into pieces. Reports, per line:
 * - speech → first partial: the first partial's report (the runner's clock, its eventTime) after
 *   the speech's onset in the bot's own sound (the utterance's startMs on the recording's clock);
 *   also after the host put the line on air (page playout included);
 * - speech end → final;
 * and the recognizer's CPU per bot: its whole tree (the `pocketsphinx_batch` decoder and the
 * 16 kHz `parec` reader, from /proc, model load included) over the call and over the speech, and
 * the runner's whole process tree with and without the live transcript (the same meeting once
 * each, one after another), so the runner's own share (segmenting, files) is in the difference.
 * Word accuracy of the finals against the script and the lines whose speaker was right, for
 * reading the figures by.
 *
 * Runs on its own (`node --import tsx bench/live-pocketsphinx.ts`); needs the compiled runner
 * (`make build`). BENCH_RUNS: meetings of each kind (default 1). Prints figures; asserts nothing.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { SpokenLine } from "../fixtures/host/script.js";
import type { CallbackEvent, Utterance } from "../src/core/index.js";
import { pocketsphinxTranscriber } from "../src/intelligence/pocketsphinx.js";
import { wordAccuracy } from "../src/intelligence/word-error-rate.js";
import { startStack } from "../test/helpers/stack.js";
import { processTree } from "./process-tree.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const CLOCK_TICKS = 100;
const SAMPLE_EVERY_MS = 200;

const alice = "Alice Example";
const bob = "Bob Example";
const SCRIPT = [
  { participant: alice, text: "Good morning everyone and thanks for joining the weekly planning meeting" },
  { participant: bob, text: "The budget review is finished and the numbers look good" },
  { participant: alice, text: "First we should look at the release schedule for the mobile application" },
  { participant: bob, text: "The testing team found three problems in the payment screen last week" },
  {
    participant: alice,
    text:
      "I will send the report to the whole team tomorrow and after that we need to update the documentation " +
      "before the release because the customer asked about the export feature again and the support team " +
      "wants to know when it will be ready for the next version",
  },
  { participant: bob, text: "Can you check the server logs before the end of the day" },
  { participant: alice, text: "We decided to ship the new version on Friday" },
  { participant: bob, text: "The design team will share the new mockups on Monday" },
  { participant: alice, text: "The support queue is shorter than last month" },
];

type Stack = Awaited<ReturnType<typeof startStack>>;

interface ProcessUsage {
  name: string;
  cmdline: string;
  ticks: number;
}

function usage(pid: number): ProcessUsage | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      cmdline: readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "),
      ticks: Number(fields[11]) + Number(fields[12]),
    };
  } catch {
    return null; // exited meanwhile
  }
}

/** The recognizer's processes: the decoder and the 16 kHz monitor reader (not media-env's warm-up reader). */
const isRecognizer = (p: ProcessUsage) =>
  p.cmdline.includes("pocketsphinx_batch") ||
  (p.cmdline.includes("parec") && p.cmdline.includes("--rate=16000"));

/**
 * Samples a runner's tree while it lives: the whole tree's ticks over time (a process that exited
 * keeps its last count), and the recognizer's processes' last counts.
 */
function watchTree(root: number) {
  const last = new Map<number, ProcessUsage>();
  const timeline: Array<{ at: number; ticks: number }> = [];
  const sample = () => {
    for (const pid of processTree(root)) {
      // setpriv execs the helper: the same pid, the helper's name once it runs.
      const seen = usage(pid);
      // A process that has exited but is not yet reaped (a zombie) has no command line left: it
      // keeps the one it was seen with.
      if (seen) last.set(pid, { ...seen, cmdline: seen.cmdline || (last.get(pid)?.cmdline ?? "") });
    }
    timeline.push({ at: Date.now(), ticks: [...last.values()].reduce((sum, p) => sum + p.ticks, 0) });
  };
  sample();
  const timer = setInterval(sample, SAMPLE_EVERY_MS);
  return {
    stop: () => clearInterval(timer),
    /** CPU seconds the whole tree used between two wall-clock instants. */
    cpuSecondsBetween(from: number, to: number): number {
      const at = (t: number) =>
        timeline.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best)).ticks;
      return (at(to) - at(from)) / CLOCK_TICKS;
    },
    recognizerCpuSeconds(): number {
      return [...last.values()].filter(isRecognizer).reduce((sum, p) => sum + p.ticks, 0) / CLOCK_TICKS;
    },
  };
}

interface LineFigures {
  text: string;
  onsetToPartialMs: number | null;
  onAirToPartialMs: number | null;
  endToFinalMs: number | null;
  accuracy: number;
  speakerRight: boolean;
}

interface MeetingFigures {
  live: boolean;
  callSeconds: number;
  speechSeconds: number;
  treeCores: number;
  recognizerCpuSeconds: number;
  lines: LineFigures[];
  utterances: number;
  decoded: {
    partial: number;
    settle: number;
    partials: number;
    settles: number;
    first: number;
    pause: number;
    grown: number;
  };
  /** Word accuracy over the whole script: the live finals, and the server's engine on the recording. */
  liveAccuracy: number;
  batchAccuracy: number;
}

/**
 * The server's batch engine (three passes, its own segmenting) on the bot's recording: what the
 * same audio allows, so that words the recording lost are not blamed on the live recognizer.
 */
async function batchText(stack: Stack, botId: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "meetbot-bench-live-"));
  try {
    const response = await fetch((await stack.api.recordingDownload(botId)).url);
    const file = join(dir, "recording.mp4");
    await writeFile(file, Buffer.from(await response.arrayBuffer()));
    return (await pocketsphinxTranscriber({ tmpDir: dir }).transcribe({ mediaPath: file })).text;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function meeting(stack: Stack, live: boolean, n: number): Promise<MeetingFigures> {
  // A Meet code: letters only (abc-defg-hij).
  const meetingId = `${live ? "blv" : "bpl"}-meet-${"abcdefghijklmnopqrstuvwxyz"[n % 26]}aa`;
  await stack.control.configure("google", meetingId, {
    admit: "open",
    participants: 2,
    script: SCRIPT,
    scriptStartAfterMs: 3000,
    endAfterScript: true,
  });
  const bot = await stack.api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${meetingId}` },
    botDisplayName: live ? "Live Bot" : "Plain Bot",
    // The bench flips liveTranscript on through the stack's config hook (below), by display name.
  });
  await stack.api.deploy(bot.id);
  let pid: number | undefined;
  for (let i = 0; i < 100 && !pid; i++) {
    pid = stack.launcher.pid(bot.id);
    if (!pid) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!pid) throw new Error(`bot ${bot.id} has no runner`);
  const tree = watchTree(pid);
  const ended = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 300_000 });
  tree.stop();

  if (ended.status !== "DONE") throw new Error(`bot ${bot.id} ended ${ended.status}`);

  const spool = await readFile(join(stack.dataDir, "bots", String(bot.id), "work", "events.jsonl"), "utf8");
  const events = spool
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as CallbackEvent);
  const started = events.find((e) => e.type === "recording.started");
  const callEnded = events.find((e) => e.type === "status" && e.data.status === "CALL_ENDED");
  if (started?.type !== "recording.started" || !callEnded) throw new Error(`bot ${bot.id}: no call`);
  const origin = Date.parse(String(started.data.startedAt));
  const endedAt = Date.parse(callEnded.eventTime);
  const state = (await stack.control.state("google", meetingId)) as { spoken: SpokenLine[] };
  const lines = state.spoken.map((line) => ({
    ...line,
    startMs: Date.parse(line.startedAt) - origin,
    endMs: Date.parse(line.endedAt ?? "") - origin,
  }));

  type Said = { utterance: Utterance; firstPartialAt: number | null; finalAt: number };
  const said = new Map<string, Said>();
  for (const e of events) {
    if (e.type !== "transcript.partial" && e.type !== "transcript.final") continue;
    const at = Date.parse(e.eventTime);
    const known = said.get(e.data.utteranceId);
    if (e.type === "transcript.partial") {
      if (!known) said.set(e.data.utteranceId, { utterance: e.data, firstPartialAt: at, finalAt: NaN });
    } else {
      said.set(e.data.utteranceId, {
        utterance: e.data,
        firstPartialAt: known?.firstPartialAt ?? null,
        finalAt: at,
      });
    }
  }
  // Each utterance goes to the line it overlaps most (the line taken to run 1 s past its end).
  const lineOf = (u: Utterance) => {
    const overlap = (l: (typeof lines)[number]) =>
      Math.min(u.endMs, l.endMs + 1000) - Math.max(u.startMs, l.startMs);
    const best = lines.reduce((a, b) => (overlap(b) > overlap(a) ? b : a));
    return overlap(best) > 0 ? best : null;
  };
  const figures = lines.map((line): LineFigures => {
    const own = [...said.values()].filter((s) => lineOf(s.utterance) === line);
    const first = own[0];
    const last = own.at(-1);
    return {
      text: line.text,
      onsetToPartialMs: first?.firstPartialAt
        ? first.firstPartialAt - (origin + first.utterance.startMs)
        : null,
      onAirToPartialMs: first?.firstPartialAt ? first.firstPartialAt - Date.parse(line.startedAt) : null,
      endToFinalMs: last ? last.finalAt - (origin + last.utterance.endMs) : null,
      accuracy: wordAccuracy(line.text, own.map((s) => s.utterance.text).join(" ")),
      speakerRight: own.length > 0 && own.every((s) => s.utterance.speaker?.name === line.participant),
    };
  });
  // The decoder's work, from the runner's debug log: audio decoded for partials and for finals.
  const decoded = { partial: 0, settle: 0, partials: 0, settles: 0, first: 0, pause: 0, grown: 0 };
  if (live) {
    for (const line of (await readFile(stack.launcher.logFile(bot.id), "utf8")).split("\n")) {
      if (!line.includes('"live transcript: decoded"')) continue;
      const entry = JSON.parse(line) as { decode: "first" | "pause" | "grown" | "settle"; audioMs: number };
      const kind = entry.decode === "settle" ? "settle" : "partial";
      decoded[kind] += entry.audioMs / 1000;
      decoded[`${kind}s`] += 1;
      if (entry.decode !== "settle") decoded[entry.decode] += 1;
    }
  }
  const callSeconds = (endedAt - origin) / 1000;
  return {
    live,
    callSeconds,
    speechSeconds: lines.reduce((sum, l) => sum + (l.endMs - l.startMs), 0) / 1000,
    treeCores: tree.cpuSecondsBetween(origin, endedAt) / callSeconds,
    recognizerCpuSeconds: tree.recognizerCpuSeconds(),
    lines: figures,
    utterances: said.size,
    decoded,
    liveAccuracy: wordAccuracy(
      SCRIPT.map((l) => l.text).join(" "),
      [...said.values()]
        .sort((a, b) => a.utterance.startMs - b.utterance.startMs)
        .map((s) => s.utterance.text)
        .join(" "),
    ),
    batchAccuracy: live
      ? wordAccuracy(SCRIPT.map((l) => l.text).join(" "), await batchText(stack, bot.id))
      : NaN,
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const stack = await startStack({
  editConfig: (config) =>
    config.botDisplayName === "Live Bot"
      ? { ...config, logLevel: "debug", liveTranscript: { source: "pocketsphinx", fallback: false } }
      : config,
});
const results: MeetingFigures[] = [];
const loadBefore = loadavg()[0] as number;
try {
  for (let i = 0; i < RUNS; i++) {
    results.push(await meeting(stack, true, i));
    results.push(await meeting(stack, false, i));
  }
} finally {
  await stack.close();
}

const withLive = results.filter((r) => r.live);
const plain = results.filter((r) => !r.live);
const lines = withLive.flatMap((r) => r.lines);
const ms = (values: Array<number | null>) => {
  const known = values.filter((v): v is number => v !== null);
  return `p50 ${percentile(known, 50).toFixed(0)} ms, p95 ${percentile(known, 95).toFixed(0)} ms (${known.length} of ${values.length} lines)`;
};
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
console.log(
  `live transcript from pocketsphinx: a real bot on the Meet mock, ${SCRIPT.length} lines, ${RUNS} run(s); ` +
    `load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] as number).toFixed(1)} after (2 cores)`,
);
console.log(`  speech onset -> first partial: ${ms(lines.map((l) => l.onsetToPartialMs))}`);
console.log(`  host puts the line on air -> first partial: ${ms(lines.map((l) => l.onAirToPartialMs))}`);
console.log(`  speech end -> final: ${ms(lines.map((l) => l.endToFinalMs))}`);
for (const r of withLive) {
  console.log(
    `  recognizer (pocketsphinx_batch + parec): ${r.recognizerCpuSeconds.toFixed(2)} CPU s for a ${r.callSeconds.toFixed(1)} s call ` +
      `with ${r.speechSeconds.toFixed(1)} s of speech: ${((r.recognizerCpuSeconds / r.callSeconds) * 100).toFixed(1)} % of a core over the call, ` +
      `${((r.recognizerCpuSeconds / r.speechSeconds) * 100).toFixed(1)} % over the speech; ${r.utterances} utterances`,
  );
  const d = r.decoded;
  console.log(
    `    decoded: ${d.partials} partials (${d.first} first, ${d.pause} at pauses, ${d.grown} grown; ${d.partial.toFixed(1)} s of audio), ` +
      `${d.settles} pieces settled (${d.settle.toFixed(1)} s); ` +
      `${(r.recognizerCpuSeconds / (d.partial + d.settle)).toFixed(3)} CPU s per second decoded`,
  );
}
console.log(
  `  whole runner tree during the call: ${(mean(withLive.map((r) => r.treeCores)) * 100).toFixed(1)} % of a core with the live transcript, ` +
    `${(mean(plain.map((r) => r.treeCores)) * 100).toFixed(1)} % without`,
);
console.log(
  `  finals: word accuracy ${mean(lines.map((l) => l.accuracy)).toFixed(3)} (mean over lines; whole script ` +
    `${withLive.map((r) => r.liveAccuracy.toFixed(3)).join(", ")}, the server's batch engine on the same recordings ` +
    `${withLive.map((r) => r.batchAccuracy.toFixed(3)).join(", ")}), ` +
    `speaker right on ${lines.filter((l) => l.speakerRight).length} of ${lines.length} lines`,
);
for (const l of lines) {
  console.log(
    `    ${String(l.onsetToPartialMs ?? "-").padStart(5)} ms ${String(l.endToFinalMs ?? "-").padStart(5)} ms ` +
      `${l.accuracy.toFixed(2)} ${l.speakerRight ? "ok " : "bad"} ${l.text.slice(0, 60)}`,
  );
}
