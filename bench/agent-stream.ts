/**
 * `make bench`: the bot's audio stream to an agent, both ways, with a real bot
 * (runner, Chromium, the control plane) in a mock Meet call and the test agent
 * (test/helpers/agent-server.ts), which answers each sound it hears with a 300 ms tone. Prints
 * p50/p95/max of:
 *
 * - meeting sound → agent: a 200 ms tone burst is played into the bot's call sink (`meetbot_call`,
 *   where Chromium plays the meeting, found through the runner's PulseAudio socket) with pacat,
 *   every 1.5 s; from the wall-clock instant its first sample is written to the agent's arrival
 *   of the first loud frame (so pacat's 10 ms buffer, the sink, parec, the 20 ms framing and the
 *   WebSocket all count; the browser's own output buffer does not: it is the platform's, before
 *   the bot's sound card);
 * - agent frame → heard in the meeting: from the agent's send of the answer to the first sample of
 *   it in what the mock meeting heard of the bot (heard.wav: 16 kHz on the wall clock from the
 *   bot's admission, stamped by the page's audio thread): pacat's buffer, the microphone, Chromium's
 *   capture and the page.
 *
 * Goals: ≤ 150 ms and ≤ 200 ms. One machine, one clock. Figures only; asserts nothing.
 */
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { startMockHost } from "../fixtures/host/server.js";
import { spawnTied } from "../src/media/processes.js";
import { FRAME_MS } from "../src/runner/agent-stream/frames.js";
import { type ToneReply, tone } from "../test/helpers/agent-server.js";
import { botInSilentMeetCall, startBenchServer } from "./bench-server.js";
import { processTree } from "./process-tree.js";

const BURSTS = Number(process.env.BENCH_AGENT_BURSTS ?? 20);
const PERIOD_MS = 1_500;
const BURST_MS = 200;
const RATE = 16_000;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
const figures = (values: number[], goal: number) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const p95 = percentile(sorted, 95);
  return `n=${sorted.length} p50 ${Math.round(percentile(sorted, 50))} ms, p95 ${Math.round(p95)} ms, max ${Math.round(sorted.at(-1) ?? Number.NaN)} ms (goal ≤ ${goal} ms: ${p95 <= goal ? "met" : "missed"} at p95)`;
};

interface Attendee {
  id: string;
  mic: { changes: Array<{ at: string }> };
}

/** The runner's PulseAudio socket: its daemon is the one descendant started with `socket=`. */
function pulseSocketOf(runnerPid: number): string {
  for (const pid of processTree(runnerPid)) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const socket = /socket=(\S+?native)/.exec(cmdline)?.[1];
    if (cmdline.includes("pulseaudio") && socket) return socket;
  }
  throw new Error(`no PulseAudio under runner ${runnerPid}`);
}

/**
 * pacat into the call sink: each burst is written whole when it is due, and nothing between
 * bursts (the stream runs dry and PulseAudio plays silence). Not silence fed on a clock: a stall of
 * this busy process (it also runs the mock host and the control plane) would then be caught up
 * with silence queued ahead of the next burst, a delay that stays (measured: 200-500 ms).
 */
function meetingSound(socket: string) {
  // Started as the runner starts its helpers: the allowlisted environment, tied to this process.
  const player: ChildProcess = spawnTied(
    "pacat",
    [
      ...["--playback", "--raw", "--format=s16le", `--rate=${RATE}`, "--channels=1"],
      ...["--latency-msec=10", "-d", "meetbot_call"],
    ],
    { env: { PULSE_SERVER: `unix:${socket}` }, stdio: ["pipe", "ignore", "inherit"] },
  );
  player.stdin?.on("error", () => {});
  player.once("exit", (code) => {
    if (code !== null && code !== 0) console.error(`pacat exited with ${code}`);
  });
  const burst = tone(1000, BURST_MS, RATE);
  const starts: number[] = [];
  const timer = setInterval(() => {
    if (starts.length >= BURSTS) return;
    starts.push(Date.now());
    player.stdin?.write(burst);
  }, PERIOD_MS);
  return {
    starts,
    done: () => starts.length >= BURSTS,
    stop: () => {
      clearInterval(timer);
      player.kill();
    },
  };
}

/** The first sample at or after `fromMs` (wall clock) louder than 0.02 of full scale, as wall-clock ms. */
function onsetAfter(wav: Buffer, admittedAt: number, fromMs: number): number {
  const data = wav.subarray(44);
  const first = Math.max(0, Math.floor(((fromMs - admittedAt) * RATE) / 1000));
  for (let i = first; i * 2 + 1 < data.length; i++) {
    if (Math.abs(data.readInt16LE(i * 2)) > 0.02 * 32768) return admittedAt + (i * 1000) / RATE;
  }
  return Number.NaN;
}

/** The agent in its own process (bench/agent-process.ts). */
async function startAgent() {
  const child = fork(new URL("./agent-process.ts", import.meta.url), { execArgv: ["--import", "tsx"] });
  const next = <T>() =>
    new Promise<T>((resolve) => child.once("message", (message) => resolve(message as T)));
  const { url } = await next<{ url: string }>();
  return {
    url,
    answer: () => child.send("answer"),
    report: async () => {
      const answer = next<{ connections: number; replies: ToneReply[] }>();
      child.send("report");
      return answer;
    },
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.send("close");
      await exited;
    },
  };
}

async function main() {
  const mock = await startMockHost({ port: 0 });
  const { api, launcher, close } = await startBenchServer(mock.url, 0, {
    MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
  });
  const agent = await startAgent();
  const code = "agt-benc-hmk";
  const control = (suffix: string, init?: RequestInit) =>
    fetch(`${mock.url}/control/meetings/google/${code}${suffix}`, init);
  let sound: ReturnType<typeof meetingSound> | null = null;
  try {
    // The participant is silent: the only meeting sound is the bench's bursts.
    const botId = await botInSilentMeetCall(api, mock.url, code, {
      botDisplayName: "Bench Agent",
      audioStream: { url: agent.url },
    });
    while ((await agent.report()).connections === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    const pid = launcher.pid(botId);
    if (!pid) throw new Error("no runner process");
    agent.answer();
    sound = meetingSound(pulseSocketOf(pid));
    while (!sound.done()) await new Promise((resolve) => setTimeout(resolve, 100));
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // the last answer is heard
    sound.stop();

    const { replies } = await agent.report();
    const toAgent: number[] = [];
    for (const reply of replies) {
      const burst = sound.starts.filter((start) => start <= reply.heardAt).at(-1);
      if (burst !== undefined && reply.heardAt - burst < PERIOD_MS) toAgent.push(reply.heardAt - burst);
    }
    const state = (await (await control("")).json()) as { attendees: Attendee[] };
    const attendee = state.attendees[0] as Attendee;
    const admittedAt = Date.parse(attendee.mic.changes[0]?.at ?? "");
    const wav = Buffer.from(await (await control(`/attendees/${attendee.id}/heard.wav`)).arrayBuffer());
    const toMeeting = replies.map((reply) => onsetAfter(wav, admittedAt, reply.sentAt) - reply.sentAt);
    console.log(`audio stream, ${BURSTS} bursts, ${FRAME_MS} ms frames:`);
    console.log(`  meeting sound → agent:         ${figures(toAgent, 150)}`);
    console.log(`  agent frame → heard in meeting: ${figures(toMeeting, 200)}`);
    await control("/end", { method: "POST" });
    await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 90_000 });
  } finally {
    sound?.stop();
    await agent.close();
    await close();
    await mock.close();
  }
}

await main();
