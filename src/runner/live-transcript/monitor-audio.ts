import type { ChildProcess } from "node:child_process";
import { spawnTied, terminate, waitForExit } from "../../media/processes.js";
import { SAMPLE_RATE } from "./speech-segmenter.js";

/**
 * Places a live audio stream's samples on the recording's clock. Chunks arrive some time after
 * their last sample was played; that delay is never negative, so the smallest
 * `arrival - samplesSoFar / rate` seen is the best estimate of when sample 0 was played. The
 * recorder's ffmpeg stamps its own audio the same way (wall clock at capture), so both land on one
 * clock; `toRecordingMs` maps that wall-clock instant onto the recording (through its pauses).
 */
export class StreamClock {
  /** Wall-clock ms at which sample 0 played (the smallest estimate so far). */
  private origin = Infinity;
  private samples = 0;

  constructor(private readonly toRecording: (wallMs: number) => number) {}

  /** A chunk of `samples` samples arrived at `arrivalMs` (wall clock). */
  arrived(samples: number, arrivalMs: number): void {
    this.samples += samples;
    this.origin = Math.min(this.origin, arrivalMs - (this.samples / SAMPLE_RATE) * 1000);
  }

  /** Sample `sample` of the stream, in ms on the recording's clock (0 before anything arrived). */
  toRecordingMs(sample: number): number {
    if (!Number.isFinite(this.origin)) return 0;
    return Math.max(0, this.toRecording(this.wallMs(sample)));
  }

  /** The wall-clock ms at which sample `sample` played (Infinity before anything arrived). */
  wallMs(sample: number): number {
    return this.origin + (sample / SAMPLE_RATE) * 1000;
  }

  /** How many samples have arrived: the next chunk's first sample. */
  get arrivedSamples(): number {
    return this.samples;
  }
}

/**
 * `pcm` (16-bit samples, the last ones to arrive on `stream`) with every sample that played while
 * `pausedAt` says the recording was paused made silent; the samples still count, so the stream
 * stays on the clock. Decided by when each sample played, not when it arrived: on a starved
 * machine the reader delivers seconds late, and the last words of a paused stretch, read after the
 * resume, were heard (2026-11-29).
 */
export function silencePaused(
  pcm: Buffer,
  stream: StreamClock,
  pausedAt: (wallMs: number) => boolean,
): Buffer {
  const count = pcm.length / 2;
  const first = stream.arrivedSamples - count;
  let out: Buffer | null = null;
  for (let i = 0; i < count; i++) {
    if (!pausedAt(stream.wallMs(first + i))) continue;
    out ??= Buffer.from(pcm);
    out.writeInt16LE(0, i * 2);
  }
  return out ?? pcm;
}

/**
 * The bot's own meeting sound for the recognizer (and, from the call sink, for an agent's audio
 * stream: agent-stream/audio.ts): a second reader of the sound card's monitor
 * (`parec`), beside the recorder's ffmpeg rather than a branch of it, so the recording cannot be
 * held up or restarted by the recognizer (a pipe nobody drains would stall ffmpeg), and the
 * recognizer outlives an ffmpeg restart. PulseAudio resamples to 16 kHz mono s16le, what the
 * acoustic model wants, for ~2 % of a core (measured, daemon and parec together). The monitor is
 * already running with small blocks (media-env's warm-up), so audio flows at once; 50 ms
 * fragments keep the end of speech noticed within that.
 */
export class MonitorAudio {
  private child: ChildProcess | null = null;
  private stopping = false;

  constructor(
    private readonly opts: {
      source: string;
      pulseEnv: Record<string, string>;
      /** Places the samples on the recording's clock (the live transcript's use). */
      clock?: StreamClock;
      /** Samples per second (default SAMPLE_RATE, the recognizer's 16 kHz). */
      rate?: number;
      /** parec's fragment in ms (default 50: the end of speech noticed within it). */
      latencyMs?: number;
      onAudio(pcm: Buffer): void;
      /** The reader stopped on its own (the sound server went away): nothing more will come. */
      onLost(why: string): void;
    },
  ) {}

  start(): void {
    const child = spawnTied(
      "parec",
      [
        ...["--raw", "--format=s16le", `--rate=${this.opts.rate ?? SAMPLE_RATE}`, "--channels=1"],
        ...[`--latency-msec=${this.opts.latencyMs ?? 50}`, "-d", this.opts.source],
      ],
      { env: this.opts.pulseEnv, stdio: ["ignore", "pipe", "pipe"], deathSignal: "KILL" },
    );
    this.child = child;
    // What it last said, for the log (not tailOutput: stdout is the audio).
    let said = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      said = (said + chunk.toString()).slice(-500);
    });
    let odd: Buffer | null = null;
    child.stdout?.on("data", (chunk: Buffer) => {
      // Whole samples only: a pipe may split one.
      const data = odd ? Buffer.concat([odd, chunk]) : chunk;
      const whole = data.length & ~1;
      odd = whole < data.length ? data.subarray(whole) : null;
      this.opts.clock?.arrived(whole / 2, Date.now());
      this.opts.onAudio(data.subarray(0, whole));
    });
    child.once("error", (error) => this.lost(`parec could not be started: ${error.message}`));
    void waitForExit(child).then((code) => this.lost(`parec exited with ${code}: ${said.trim()}`));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child) return;
    // What it already read is still delivered: the stream ends after its last data.
    const ended = new Promise<void>((resolve) => {
      if (!child.stdout || child.stdout.readableEnded) resolve();
      else child.stdout.once("close", resolve);
    });
    await terminate(child, 1_000);
    await ended;
  }

  private lost(why: string): void {
    if (this.stopping) return;
    this.stopping = true;
    this.opts.onLost(why);
  }
}
