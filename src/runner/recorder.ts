import type { ChildProcess } from "node:child_process";
import { rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { RecordingOptions } from "../core/index.js";
import { runToEnd, spawnTied, tailOutput, waitForExit } from "../media/processes.js";
import { probeDurationMs } from "../media/untrusted-input.js";
import { BotFailure } from "./errors.js";

export interface RecordingResult {
  path: string;
  sizeBytes: number;
  durationMs: number;
  /** From ffmpeg's progress counters, summed over segments. */
  frames: number;
  droppedFrames: number;
  duplicatedFrames: number;
  /**
   * How many segments of this file the control plane already holds, covering all of it
   * (segment-upload.ts); absent when it must be uploaded whole.
   */
  uploadedSegments?: number;
}

interface FrameCounters {
  frames: number;
  droppedFrames: number;
  duplicatedFrames: number;
}

/** How often ffmpeg may die mid-call and be restarted before the recording counts as failed. */
const MAX_RESTARTS = 3;

/**
 * The sound level is read in windows of this many samples: half a second at the 48 kHz ffmpeg's
 * pulse input delivers by default. Two readings a second are plenty for a timeout of seconds
 * to hours, and each costs one short line on a pipe.
 */
const LEVEL_WINDOW_SAMPLES = 24_000;
/** ffmpeg writes the level readings to this file descriptor (stdout carries -progress). */
const LEVEL_FD = 3;

/**
 * Records the bot's display (x11grab) and its sound card's monitor (pulse) with ffmpeg, spawned
 * directly: we need stdin for a clean 'q', signals, and the progress stream, which is most of
 * what a wrapper like fluent-ffmpeg would hide (and it is no longer maintained).
 *
 * The choices below answer traps measured on this stack (docs/notes/media-stack-measured.md):
 * - `-copyts` + `setpts=PTS-T0/TB` on both streams, T0 = wall clock at the start: both devices
 *   stamp packets with the wall clock, so one shared origin keeps audio and video in sync (the
 *   default per-input zeroing left audio ~0.77 s early).
 * - fragmented MP4 with `-frag_duration 1000000 -flush_packets 1`: a killed ffmpeg still leaves a
 *   playable file up to the last second; without the flush flags only 28 bytes reach the disk.
 * - no output `-t` (meaningless with -copyts); the caller's watchdog caps the duration instead.
 *
 * - the sound level is measured on the very audio that is encoded: the pulse stream is split
 *   after its timestamps are set, one branch to the AAC encoder untouched, the other through
 *   `astats` (RMS per half second) into `ametadata=print` on a pipe, ending in `anullsink`. The
 *   recording's own chain and timestamps are as before, and the meter costs next to no CPU.
 *
 * If ffmpeg dies mid-call it is restarted into a new segment with the same T0, and the segments
 * are joined at the end with their gaps kept, so times in the recording stay times on the
 * recording's clock. After MAX_RESTARTS the recording fails (what was recorded is still kept).
 *
 * A pause stops ffmpeg cleanly ('q'); the resume starts a new segment whose T0 is shifted by all
 * the time paused so far, so its frames land right where the recording paused: the join cuts the
 * paused segment at the pause and the paused time is not in the file (no gap of black). The
 * recording's clock (recording-clock.ts) is the same wall clock minus the pauses.
 */
export class Recorder {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restarts = 0;
  private output: () => string = () => "";
  /** The segment files, in order, with when each began (ms on the recording's clock); the first is `path`. */
  private readonly segments: string[] = [];
  private readonly segmentStarts: number[] = [];
  /** Where each segment that was paused ends (ms on the recording's clock): its content after that is cut. */
  private readonly segmentEnds = new Map<number, number>();
  /** All the time paused before the current segment: its T0 is startedAt plus this. */
  private pausedMs = 0;
  /** Set from a pause until the resume's segment runs: ffmpeg's exit meanwhile is no crash. */
  private paused = false;
  /** The latest progress counters of each segment's ffmpeg (they count from 0 per process). */
  private readonly counters: FrameCounters[] = [];
  /** The wall-clock instant that is 0 s in the recording (ffmpeg's shared timestamp origin). */
  startedAt: Date | null = null;

  constructor(
    private readonly opts: RecordingOptions & {
      display: string;
      audioSource: string;
      pulseEnv: Record<string, string>;
      /** Called when ffmpeg cannot be kept running; the recording so far is kept. */
      onFailure: (failure: BotFailure) => void;
      /** Called twice a second with the RMS level of the recorded sound, in dBFS (-Infinity: digital silence). */
      onLevel?: (dbfs: number) => void;
    },
    readonly path: string,
    private readonly log: Logger,
  ) {}

  /** Starts ffmpeg; resolves once the first video frame is encoded (so the recording truly runs). */
  async start(): Promise<void> {
    this.startedAt = new Date();
    await this.startSegment(this.path);
    this.log.info({ path: this.path }, "recording");
  }

  /** How many ffmpeg processes wrote the recording: more than one after a restart (then joined). */
  get parts(): number {
    return this.segments.length;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Pauses: ffmpeg stops cleanly and the current segment ends at `atMs` (the recording's clock at
   * the pause; what ffmpeg wrote after it while stopping is cut at the join).
   */
  async pause(atMs: number): Promise<void> {
    if (this.paused || this.stopping) return;
    this.paused = true;
    // (A segment still starting after an ffmpeg restart has nothing to cut: it is dropped below.)
    if (this.segmentStarts.length === this.segments.length)
      this.segmentEnds.set(this.segments.length - 1, atMs);
    await this.stopChild();
  }

  /**
   * Resumes into a new segment, its T0 shifted by `pausedMs` (all the time paused so far): its
   * first frame is then at the recording's clock, right after where the recording paused.
   */
  async resume(pausedMs: number): Promise<void> {
    if (!this.paused || this.stopping) return;
    this.pausedMs = pausedMs;
    try {
      await this.startSegment(join(dirname(this.path), `recording-part${this.segments.length + 1}.mp4`));
    } catch (error) {
      // Stopped (the call ended) while it started: no failure, and nothing recorded to keep.
      if (this.stopping && (await this.dropUnstarted())) return;
      throw error;
    }
    this.paused = false;
  }

  /** Stops ffmpeg cleanly ('q', then SIGTERM, which still finalizes), joins segments, measures. */
  async stop(): Promise<RecordingResult> {
    const child = this.child;
    if (!child) throw new BotFailure("RECORDING_FAILED", "recording was never started");
    this.stopping = true;
    await this.stopChild();
    if (this.segments.length > 1) await this.joinSegments();
    const { size } = await stat(this.path);
    // 0 when ffprobe cannot read it: the file is still delivered, and the server probes it again.
    const durationMs = await probeDurationMs(this.path).catch(() => 0);
    const sum = (key: keyof FrameCounters) => this.counters.reduce((total, c) => total + c[key], 0);
    return {
      path: this.path,
      sizeBytes: size,
      durationMs,
      frames: sum("frames"),
      droppedFrames: sum("droppedFrames"),
      duplicatedFrames: sum("duplicatedFrames"),
    };
  }

  /** Stops the running ffmpeg, if any, with 'q' (then SIGTERM, which still finalizes). */
  private async stopChild(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
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

  private async startSegment(path: string): Promise<void> {
    this.segments.push(path);
    const t0 = (((this.startedAt as Date).getTime() + this.pausedMs) / 1000).toFixed(3);
    const { width, height, frameRate, display, audioSource } = this.opts;
    const args = [
      ...["-hide_banner", "-loglevel", "warning", "-nostats", "-y", "-copyts"],
      ...["-progress", "pipe:1", "-stats_period", "0.1"],
      ...["-thread_queue_size", "1024", "-f", "x11grab", "-draw_mouse", "0"],
      ...["-video_size", `${width}x${height}`, "-framerate", String(frameRate), "-i", display],
      ...["-thread_queue_size", "1024", "-f", "pulse", "-i", audioSource],
      ...["-filter_complex", `[1:a]asetpts=PTS-${t0}/TB,asplit=2[audio][meter];[meter]${LEVEL_METER}`],
      ...["-map", "0:v", "-vf", `setpts=PTS-${t0}/TB`, "-map", "[audio]"],
      ...["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency"],
      ...["-pix_fmt", "yuv420p", "-g", String(frameRate * 2)],
      ...["-c:a", "aac", "-b:a", "128k"],
      ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
      ...["-frag_duration", "1000000", "-flush_packets", "1"],
      path,
    ];
    const child = spawnTied("ffmpeg", args, {
      env: this.opts.pulseEnv,
      stdio: ["pipe", "pipe", "pipe", "pipe"],
    });
    this.child = child;
    this.output = tailOutput(child);
    const { onLevel } = this.opts;
    if (onLevel) readLevels(child.stdio[LEVEL_FD] as Readable, onLevel);
    child.stdin?.on("error", () => {}); // ffmpeg may exit before reading 'q'; that is not our error
    const counters: FrameCounters = { frames: 0, droppedFrames: 0, duplicatedFrames: 0 };
    this.counters.push(counters);
    child.stdout?.on("data", (chunk: Buffer) => readProgress(chunk.toString(), counters));
    const firstFrame = new Promise<void>((resolve, reject) => {
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
    await firstFrame;
    // The MP4 muxer rebases each file to start at 0, so a segment's place on the recording's
    // clock is kept here: when its first frame was reported (within the 0.1 s progress period).
    this.segmentStarts.push(Date.now() - (this.startedAt as Date).getTime() - this.pausedMs);
    void waitForExit(child).then((code) => {
      if (!this.stopping && !this.paused && this.child === child) void this.restart(code);
    });
  }

  /** Forgets the last segment if it never got its first frame (it holds nothing); answers whether it did. */
  private async dropUnstarted(): Promise<boolean> {
    if (this.segmentStarts.length >= this.segments.length) return false;
    const segment = this.segments.pop() as string;
    this.counters.pop();
    if (segment !== this.path) await rm(segment, { force: true });
    return true;
  }

  private async restart(code: number | string): Promise<void> {
    const ffmpeg = this.output();
    if (this.restarts >= MAX_RESTARTS) {
      this.log.error({ code, ffmpeg }, "ffmpeg keeps dying; giving up on the recording");
      this.opts.onFailure(
        new BotFailure("RECORDING_FAILED", `ffmpeg exited ${MAX_RESTARTS + 1} times (last: ${code})`),
      );
      return;
    }
    this.restarts += 1;
    const next = join(dirname(this.path), `recording-part${this.segments.length + 1}.mp4`);
    this.log.warn(
      { code, ffmpeg, segment: next },
      "ffmpeg exited unexpectedly; recording into a new segment",
    );
    try {
      await this.startSegment(next);
    } catch (error) {
      // Paused or stopped while it started: no failure; a resume starts a segment of its own.
      if ((this.stopping || this.paused) && (await this.dropUnstarted())) return;
      this.opts.onFailure(
        error instanceof BotFailure ? error : new BotFailure("RECORDING_FAILED", String(error)),
      );
    }
  }

  /**
   * Joins the segments into `path` without re-encoding. Each segment's span is set to reach the
   * next one's start, so a gap while ffmpeg restarted stays a gap rather than shifting what follows;
   * a paused segment is cut where it paused (ffmpeg records a moment more while it stops).
   */
  private async joinSegments(): Promise<void> {
    // The first segment's own start is 0 s of the recording.
    const starts = this.segmentStarts.map((ms, i) => (i === 0 ? 0 : ms / 1000));
    const list = this.segments
      .map((segment, i) => {
        const next = starts[i + 1];
        const span = next === undefined ? "" : `\nduration ${(next - (starts[i] ?? 0)).toFixed(3)}`;
        const end = this.segmentEnds.get(i);
        const cut =
          end === undefined ? "" : `\noutpoint ${Math.max(0, end / 1000 - (starts[i] ?? 0)).toFixed(3)}`;
        return `file '${segment.replace(/'/g, "'\\''")}'${span}${cut}`;
      })
      .join("\n");
    const listFile = join(dirname(this.path), "segments.txt");
    const joined = join(dirname(this.path), "recording-joined.mp4");
    await writeFile(listFile, `${list}\n`);
    try {
      await runToEnd("ffmpeg", [
        ...["-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0", "-i", listFile],
        ...["-c", "copy", "-movflags", "+faststart", joined],
      ]);
    } catch (error) {
      // The segments stay on disk; deliver the first rather than nothing.
      this.log.error({ err: (error as Error).message, segments: this.segments }, "could not join segments");
      return;
    }
    await rename(joined, this.path);
    await Promise.all(this.segments.slice(1).map((segment) => rm(segment, { force: true })));
    await rm(listFile, { force: true });
    this.log.info({ segments: this.segments.length, starts }, "joined recording segments");
  }
}

/**
 * The meter branch of ffmpeg's filter graph: half-second windows, their overall RMS level as frame
 * metadata, printed unbuffered (`direct`) to LEVEL_FD, then discarded.
 */
const LEVEL_METER = [
  `asetnsamples=n=${LEVEL_WINDOW_SAMPLES}:p=0`,
  "astats=metadata=1:reset=1:measure_perchannel=none:measure_overall=RMS_level",
  // The colon is escaped for both levels of filter graph parsing: the graph, then the options.
  `ametadata=mode=print:key=lavfi.astats.Overall.RMS_level:file=pipe\\\\:${LEVEL_FD}:direct=1`,
  "anullsink",
].join(",");

/** Calls `onLevel` with each reading ametadata prints (`lavfi.astats.Overall.RMS_level=-41.07`). */
function readLevels(stream: Readable, onLevel: (dbfs: number) => void): void {
  let pending = "";
  stream.on("data", (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const match = /RMS_level=(\S+)/.exec(line);
      if (!match) continue;
      const dbfs = Number(match[1]);
      // astats prints "-inf" for all-zero samples (nothing played at all).
      onLevel(Number.isFinite(dbfs) ? dbfs : -Infinity);
    }
  });
}

/** Keeps the latest of ffmpeg's `-progress` counters (key=value lines, repeated every period). */
function readProgress(text: string, counters: FrameCounters): void {
  const last = (key: string) => {
    const matches = [...text.matchAll(new RegExp(`^${key}=(\\d+)$`, "gm"))];
    const value = matches.at(-1)?.[1];
    return value === undefined ? undefined : Number(value);
  };
  counters.frames = last("frame") ?? counters.frames;
  counters.droppedFrames = last("drop_frames") ?? counters.droppedFrames;
  counters.duplicatedFrames = last("dup_frames") ?? counters.duplicatedFrames;
}
