import type { ChildProcess } from "node:child_process";
import { stat } from "node:fs/promises";
import type { Logger } from "pino";
import type { RecordingOptions } from "../core/index.js";
import { spawnTied, tailOutput, waitForExit } from "./child-process.js";
import { BotFailure } from "./errors.js";
import { probeDuration } from "./probe.js";

export interface RecordingResult {
  path: string;
  sizeBytes: number;
  durationMs: number;
}

/**
 * Records the bot's display (x11grab) and its sound card's monitor (pulse) with ffmpeg, spawned
 * directly: we need stdin for a clean 'q', signals, and the progress stream, which is most of
 * what a wrapper like fluent-ffmpeg would hide (and it is no longer maintained).
 *
 * The choices below answer traps measured on this stack (shared/notes/media-stack-measured.md):
 * - `-copyts` + `setpts=PTS-T0/TB` on both streams, T0 = wall clock at spawn: both devices stamp
 *   packets with the wall clock, so one shared origin keeps audio and video in sync (the default
 *   per-input zeroing left audio ~0.77 s early).
 * - fragmented MP4 with `-frag_duration 1000000 -flush_packets 1`: a killed ffmpeg still leaves a
 *   playable file up to the last second; without the flush flags only 28 bytes reach the disk.
 * - no output `-t` (meaningless with -copyts); the caller's watchdog caps the duration instead.
 */
export class Recorder {
  private child: ChildProcess | null = null;
  private firstFrame: Promise<void> | null = null;
  private stopping = false;
  private output: () => string = () => "";
  /** The wall-clock instant that is 0 s in the recording (ffmpeg's shared timestamp origin). */
  startedAt: Date | null = null;

  constructor(
    private readonly opts: RecordingOptions & {
      display: string;
      audioSource: string;
      pulseEnv: Record<string, string>;
    },
    readonly path: string,
    private readonly log: Logger,
  ) {}

  /** Starts ffmpeg; resolves once the first video frame is encoded (so the recording truly runs). */
  async start(): Promise<void> {
    this.startedAt = new Date();
    const t0 = (this.startedAt.getTime() / 1000).toFixed(3);
    const { width, height, frameRate, display, audioSource } = this.opts;
    const args = [
      ...["-hide_banner", "-loglevel", "warning", "-nostats", "-y", "-copyts"],
      ...["-progress", "pipe:1", "-stats_period", "0.1"],
      ...["-thread_queue_size", "1024", "-f", "x11grab", "-draw_mouse", "0"],
      ...["-video_size", `${width}x${height}`, "-framerate", String(frameRate), "-i", display],
      ...["-thread_queue_size", "1024", "-f", "pulse", "-i", audioSource],
      ...["-vf", `setpts=PTS-${t0}/TB`, "-af", `asetpts=PTS-${t0}/TB`],
      ...["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency"],
      ...["-pix_fmt", "yuv420p", "-g", String(frameRate * 2)],
      ...["-c:a", "aac", "-b:a", "128k"],
      ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
      ...["-frag_duration", "1000000", "-flush_packets", "1"],
      this.path,
    ];
    const child = spawnTied("ffmpeg", args, {
      env: { ...process.env, ...this.opts.pulseEnv },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    this.output = tailOutput(child);
    child.stdin?.on("error", () => {}); // ffmpeg may exit before reading 'q'; that is not our error
    this.firstFrame = new Promise<void>((resolve, reject) => {
      const onProgress = (chunk: Buffer) => {
        const frames = /frame=(\d+)/.exec(chunk.toString());
        if (frames && Number(frames[1]) > 0) {
          child.stdout?.off("data", onProgress);
          resolve();
        }
      };
      child.stdout?.on("data", onProgress);
      child.once("error", (error) => reject(new BotFailure("RECORDING_FAILED", `ffmpeg: ${error.message}`)));
      void waitForExit(child).then((code) => {
        reject(
          new BotFailure("RECORDING_FAILED", `ffmpeg exited (${code}) before recording:\n${this.output()}`),
        );
      });
    });
    void waitForExit(child).then((code) => {
      if (!this.stopping) this.log.error({ code, ffmpeg: this.output() }, "ffmpeg exited unexpectedly");
    });
    await this.firstFrame;
    this.log.info({ path: this.path }, "recording");
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Stops ffmpeg cleanly ('q', then SIGTERM, which still finalizes) and measures the file. */
  async stop(): Promise<RecordingResult> {
    const child = this.child;
    if (!child) throw new BotFailure("RECORDING_FAILED", "recording was never started");
    this.stopping = true;
    if (this.running) {
      const exited = waitForExit(child);
      child.stdin?.end("q");
      const escalate = setTimeout(() => child.kill("SIGTERM"), 5_000);
      const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(escalate);
      clearTimeout(kill);
      // 255 is ffmpeg's answer to a signal; the file is still finalized then.
      if (code !== 0 && code !== 255)
        this.log.warn({ code, ffmpeg: this.output() }, "ffmpeg stopped uncleanly");
    }
    const { size } = await stat(this.path);
    const durationMs = await probeDuration(this.path);
    return { path: this.path, sizeBytes: size, durationMs };
  }
}
