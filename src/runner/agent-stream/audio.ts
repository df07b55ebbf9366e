import type { ChildProcess } from "node:child_process";
import { spawnTied, terminate } from "../../media/processes.js";
import { MonitorAudio } from "../live-transcript/monitor-audio.js";
import { ownLatencyEnv } from "../media-env.js";
import { FRAME_MS, FrameCutter, frameBytes } from "./frames.js";

/**
 * parec's fragment: how long a piece of sound waits in PulseAudio before parec gets it. 10 ms
 * keeps the meeting → agent path short (a 20 ms frame is complete at most ~10 ms after its last
 * sample played). Both the reader and the player keep their own latency (ownLatencyEnv), not the
 * 100 ms every other client of the bot's sound is held to.
 */
const LISTEN_LATENCY_MS = 10;

/**
 * pacat's buffer for the agent's sound. paplay's clips use 100 ms because a starved stream on a
 * busy machine leaves holes; an agent's stream is played as it arrives (it cannot be buffered
 * ahead), so a smaller buffer is the latency an agent waits for: 40 ms, measured in bench/agent-stream.ts.
 */
const PLAY_LATENCY_MS = 40;

/**
 * The meeting's sound for the agent: a parec reader (MonitorAudio, as the live transcript's) on the
 * call sink's monitor (Chromium's output alone, not the bot's voice: media-env.ts), resampled by
 * PulseAudio to the stream's rate, 16-bit mono, cut into FRAME_MS frames. Runs until stopped.
 */
export function listenToMeeting(opts: {
  source: string;
  pulseEnv: Record<string, string>;
  sampleRate: number;
  onFrame(frame: Buffer): void;
  onLost(why: string): void;
}): { stop(): Promise<void> } {
  const cutter = new FrameCutter(frameBytes(opts.sampleRate, FRAME_MS));
  const monitor = new MonitorAudio({
    source: opts.source,
    pulseEnv: ownLatencyEnv(opts.pulseEnv),
    rate: opts.sampleRate,
    latencyMs: LISTEN_LATENCY_MS,
    onAudio: (pcm) => {
      for (const frame of cutter.push(pcm)) opts.onFrame(frame);
    },
    onLost: opts.onLost,
  });
  monitor.start();
  return monitor;
}

/**
 * Plays the agent's sound into the bot's microphone (the voice sink) with one long-running pacat
 * fed through its stdin: no process start per phrase. Between phrases pacat runs dry and PulseAudio
 * plays silence. `clear()` drops what is queued: the pacat holding it is killed (its pipe and
 * PulseAudio buffer go with it) and a fresh one takes the next frame.
 */
export class AgentPlayer {
  private child: ChildProcess | null = null;
  private closed = false;

  constructor(
    private readonly opts: { sink: string; pulseEnv: Record<string, string>; sampleRate: number },
  ) {}

  write(pcm: Buffer): void {
    if (this.closed) return;
    const child = this.child ?? this.spawn();
    child.stdin?.write(pcm);
  }

  /** Drops everything queued; the next write starts a fresh player. */
  clear(): void {
    const child = this.child;
    this.child = null;
    if (child) void terminate(child, 500);
  }

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = null;
    if (child) await terminate(child, 500);
  }

  private spawn(): ChildProcess {
    const { sink, pulseEnv, sampleRate } = this.opts;
    const child = spawnTied(
      "pacat",
      [
        ...["--playback", "--raw", "--format=s16le", `--rate=${sampleRate}`, "--channels=1"],
        ...[`--latency-msec=${PLAY_LATENCY_MS}`, "-d", sink],
      ],
      { env: ownLatencyEnv(pulseEnv), stdio: ["pipe", "ignore", "ignore"], deathSignal: "KILL" },
    );
    // A player killed by clear() breaks its pipe: that is expected, not an error.
    child.stdin?.on("error", () => {});
    child.once("exit", () => {
      if (this.child === child) this.child = null;
    });
    this.child = child;
    return child;
  }
}
