import type { ChildProcess } from "node:child_process";
import { rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { RecordingOptions } from "../core/index.js";
import { runToEnd, spawnTied, tailOutput, waitForExit } from "../media/processes.js";
import { probeDurationMs } from "../media/untrusted-input.js";
import { BotFailure } from "./errors.js";
import { appendFragments } from "./mp4-append.js";
import { RECORDED_SOUND_DELAY_MS } from "./media-env.js";

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
  /** How far into its output this ffmpeg has written, in µs (its `out_time_us`). */
  outTimeUs: number;
}

/** Where an ffmpeg's output stood when its first frame was reported, to measure how far it falls behind. */
interface OutputMark {
  atMs: number;
  outTimeUs: number;
}

/** How often ffmpeg may die mid-call and be restarted before the recording counts as failed. */
const MAX_RESTARTS = 3;

/**
 * 'q' makes ffmpeg drop what still waits in its input queues (`-thread_queue_size`): on a starved
 * machine its encoder fell behind and a Teams bot's 31 s call came out 18.7 s long. So a stop
 * first lets ffmpeg write up to the moment it was asked to stop, when it is more than this behind
 * (the progress period and the 1 s fragments make a few hundred ms the normal lag) ...
 */
const CATCH_UP_LAG_MS = 1_000;
/** ... for at most this long; then it stops as it would have (a runner's stop grace is longer). */
const CATCH_UP_MAX_MS = 15_000;

/**
 * The sound level is read in windows of this many samples: half a second at the 48 kHz ffmpeg's
 * pulse input delivers by default. Two readings a second are plenty for a timeout of seconds
 * to hours, and each costs one short line on a pipe.
 */
const LEVEL_WINDOW_SAMPLES = 24_000;
/** ffmpeg writes the level readings to this file descriptor (stdout carries -progress). */
const LEVEL_FD = 3;
/** How long start() waits for the level meter's first window (half a second of sound) to place the clock. */
const FIRST_SOUND_WAIT_MS = 3_000;
/**
 * How long an ffmpeg may take to record its first frame (opening its inputs takes 0.2–1 s, a few
 * seconds on a starved machine). One that never does is stuck: an X server or a sound server
 * that accepts and never answers holds it in its input's set-up forever. Without this bound the
 * bot sat in the call recording nothing, with nothing failed and nothing said.
 */
const FIRST_FRAME_WAIT_MS = 20_000;
/**
 * An ffmpeg whose output has not moved for this long has stalled (a display or sound server that
 * stopped answering mid-call holds its input forever): it is killed, and the recording goes on in
 * a new segment as after a crash. A starved machine slows ffmpeg down, it does not stop it.
 */
const STALL_MS = 30_000;
/** How often the output's progress is checked against STALL_MS. */
const STALL_CHECK_MS = 2_000;
/** A resumed ffmpeg writes its MP4 to this file descriptor, to be appended (mp4-append.ts). */
const APPEND_FD = 4;

/**
 * Records the bot's display (x11grab; none for an audio-only bot) and its sound card's monitor (pulse) with ffmpeg, spawned
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
 * If ffmpeg dies mid-call (or stalls, and is killed: STALL_MS) it is restarted into a new
 * segment with the same T0, and the segments are joined at the end with their gaps kept, so times
 * in the recording stay times on the recording's clock. After MAX_RESTARTS the recording fails
 * (what was recorded is still kept).
 *
 * A pause stops ffmpeg cleanly ('q'); the resume starts a new ffmpeg whose T0 is shifted by all
 * the time paused so far, so its frames carry on where the recording paused, and its output is
 * appended to the file as more fragments of the same movie (mp4-append.ts): the paused time is
 * not in the file (no gap of black), the file stays one growing fMP4 the segment uploader keeps
 * following, and nothing is joined at the end. The recording's clock (recording-clock.ts) is the
 * same wall clock minus the pauses.
 */
export class Recorder {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restarts = 0;
  private output: () => string = () => "";
  /** The segment files, in order, with when each began (ms on the recording's clock); the first is `path`. */
  private readonly segments: string[] = [];
  private readonly segmentStarts: number[] = [];
  /** A resumed ffmpeg's output being appended to the file; settles once all of it is written. */
  private appending: Promise<unknown> = Promise.resolve();
  /** All the time paused before the current segment: its T0 is startedAt plus this. */
  private pausedMs = 0;
  /** Set from a pause until the resume's segment runs: ffmpeg's exit meanwhile is no crash. */
  private paused = false;
  /** The latest progress counters of each segment's ffmpeg (they count from 0 per process). */
  private readonly counters: FrameCounters[] = [];
  /** The running ffmpeg's output position when its first frame was reported. */
  private outputMark: OutputMark | null = null;
  /** The wall-clock instant that is 0 s in the recording: its first sound (see start()). */
  startedAt: Date | null = null;
  /** Set while start() waits for the first sound's place after T0, in ms. */
  private onFirstSound: ((offsetMs: number) => void) | null = null;

  constructor(
    private readonly opts: RecordingOptions & {
      display: string;
      audioSource: string;
      pulseEnv: Record<string, string>;
      /** Called when ffmpeg cannot be kept running; the recording so far is kept. */
      onFailure: (failure: BotFailure) => void;
      /** Called twice a second with the RMS level of the recorded sound, in dBFS (-Infinity: digital silence). */
      onLevel?: (dbfs: number) => void;
      /** FIRST_FRAME_WAIT_MS unless given (tests wait less). */
      firstFrameWaitMs?: number;
      /** STALL_MS unless given (tests wait less). */
      stallMs?: number;
    },
    readonly path: string,
    private readonly log: Logger,
  ) {}

  /**
   * Starts ffmpeg; resolves once the first video frame is encoded (so the recording truly runs)
   * and the recording's clock is set to the file's first sound.
   *
   * The MP4 muxer starts a file at its first packet, not at T0 (the moment ffmpeg was started,
   * its timestamps' origin): the file's 0 s is the first sound captured, which comes after
   * ffmpeg opened its inputs (0.2–1 s, longer on a busy machine). `startedAt`, the clock every
   * event of the call is placed on (speaker turns, chat, pauses), moves to that sound, read off
   * the level meter's first window (its timestamp is the sample's, on T0's clock). Otherwise a
   * turn would lie that much later than its words in the file, and its first words would go to
   * the one who spoke before.
   */
  async start(): Promise<void> {
    const t0 = Date.now();
    this.startedAt = new Date(t0);
    const offset = new Promise<number | null>((resolve) => {
      this.onFirstSound = resolve;
      setTimeout(() => resolve(null), FIRST_SOUND_WAIT_MS).unref();
    });
    await this.startSegment(this.path);
    const offsetMs = await offset;
    this.onFirstSound = null;
    if (offsetMs === null) {
      this.log.warn(
        { waitedMs: FIRST_SOUND_WAIT_MS },
        "no sound timestamp yet: the clock starts when ffmpeg did",
      );
    } else {
      this.startedAt = new Date(t0 + Math.max(0, Math.round(offsetMs)));
    }
    this.log.info({ path: this.path, firstSoundAfterMs: offsetMs }, "recording");
  }

  /** How many ffmpeg processes wrote the recording: more than one after a restart (then joined). */
  get parts(): number {
    return this.segments.length;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Pauses: ffmpeg stops cleanly, and all it wrote is in the file when this resolves. */
  async pause(): Promise<void> {
    if (this.paused || this.stopping) return;
    this.paused = true;
    await this.stopChild();
  }

  /**
   * Resumes: a new ffmpeg, its T0 shifted by `pausedMs` (all the time paused so far), so that its
   * first frame is at the recording's clock, right after where the recording paused; its output
   * is appended to the file the recording paused in.
   */
  async resume(pausedMs: number): Promise<void> {
    if (!this.paused || this.stopping) return;
    this.pausedMs = pausedMs;
    try {
      await this.startSegment(null);
    } catch (error) {
      // Stopped (the call ended) while it started: no failure, and nothing recorded to keep.
      if (this.stopping) return await this.dropUnstarted();
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
    await this.appending;
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
    await this.catchUp(Date.now());
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
    await this.appending;
  }

  /** How far the running ffmpeg's output trails the wall clock `atMs`, in ms; 0 before its first frame. */
  private lagMs(atMs: number): number {
    const counters = this.counters.at(-1);
    if (!this.outputMark || !counters) return 0;
    const written = (counters.outTimeUs - this.outputMark.outTimeUs) / 1000;
    return atMs - this.outputMark.atMs - written;
  }

  /** Waits while ffmpeg's output trails `stopAtMs` by more than CATCH_UP_LAG_MS (see there). */
  private async catchUp(stopAtMs: number): Promise<void> {
    const behindMs = this.lagMs(stopAtMs);
    if (behindMs <= CATCH_UP_LAG_MS) return;
    const deadline = Date.now() + CATCH_UP_MAX_MS;
    while (this.running && Date.now() < deadline && this.lagMs(stopAtMs) > CATCH_UP_LAG_MS) {
      await sleep(100);
    }
    this.log.warn(
      { behindMs: Math.round(behindMs), leftBehindMs: Math.max(0, Math.round(this.lagMs(stopAtMs))) },
      "ffmpeg had fallen behind the call: waited for it to write up to the stop",
    );
  }

  /**
   * Starts an ffmpeg writing to `path`, a segment of its own; null: after a pause, appending to
   * the last segment's file (mp4-append.ts), or, should its movie not match, to a file of its own.
   */
  private async startSegment(path: string | null): Promise<void> {
    const appendTo = path === null ? (this.segments.at(-1) as string) : null;
    const partPath = join(dirname(this.path), `recording-part${this.segments.length + 1}.mp4`);
    if (path !== null) this.segments.push(path);
    const t0 = (((this.startedAt as Date).getTime() + this.pausedMs) / 1000).toFixed(3);
    const args = [
      ...["-hide_banner", "-loglevel", "warning", "-nostats", "-y", "-copyts"],
      ...["-progress", "pipe:1", "-stats_period", "0.1"],
      ...recordingArgs(this.opts, t0),
      ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
      ...["-frag_duration", "1000000", "-flush_packets", "1"],
      ...(appendTo ? ["-f", "mp4", `pipe:${APPEND_FD}`] : [path as string]),
    ];
    const child = spawnTied("ffmpeg", args, {
      env: this.opts.pulseEnv,
      stdio: ["pipe", "pipe", "pipe", "pipe", ...(appendTo ? (["pipe"] as const) : [])],
    });
    // Appending: the fragments wait for the part's place on the recording's clock (below).
    let place: (startMs: number) => void = () => {};
    const placed = new Promise<number>((resolve) => {
      place = resolve;
    });
    if (appendTo) {
      // Not the same movie after all (mp4-append.ts): the part is a segment of its own, joined at the end.
      const ownSegment = () => {
        this.log.warn({ segment: partPath }, "the resumed recording's movie differs: recording it apart");
        this.segments.push(partPath);
        void placed.then((startMs) => this.segmentStarts.push(startMs));
      };
      const stream = child.stdio[APPEND_FD] as Readable;
      this.appending = appendFragments(stream, appendTo, placed, partPath, ownSegment).catch(
        (error: Error) => {
          this.log.error({ err: error.message }, "could not append the resumed recording");
        },
      );
    }
    this.child = child;
    this.output = tailOutput(child);
    const { onLevel } = this.opts;
    readLevels(child.stdio[LEVEL_FD] as Readable, {
      onLevel: onLevel ?? (() => {}),
      onFirstWindow: (ptsSeconds) => this.onFirstSound?.(ptsSeconds * 1000),
    });
    child.stdin?.on("error", () => {}); // ffmpeg may exit before reading 'q'; that is not our error
    const counters: FrameCounters = { frames: 0, droppedFrames: 0, duplicatedFrames: 0, outTimeUs: 0 };
    this.outputMark = null;
    this.counters.push(counters);
    child.stdout?.on("data", (chunk: Buffer) => readProgress(chunk.toString(), counters));
    // Video: the first frame encoded. Audio only (no frames ever): the first audio in the file.
    const started = this.opts.video ? /frame=(\d+)/ : /out_time_us=(\d+)/;
    const waitMs = this.opts.firstFrameWaitMs ?? FIRST_FRAME_WAIT_MS;
    let stuck: NodeJS.Timeout | undefined;
    const firstFrame = new Promise<void>((resolve, reject) => {
      const onProgress = (chunk: Buffer) => {
        const frames = started.exec(chunk.toString());
        if (frames && Number(frames[1]) > 0) {
          child.stdout?.off("data", onProgress);
          resolve();
        }
      };
      // SIGKILL: a stuck ffmpeg has nothing to finalize, and one blocked in an input's set-up
      // does not act on SIGTERM.
      stuck = setTimeout(() => {
        reject(
          new BotFailure(
            "RECORDING_FAILED",
            `ffmpeg recorded nothing in ${waitMs / 1000} s (display ${this.opts.video ? this.opts.display : "none"}, sound ${this.opts.audioSource}):\n${this.output()}`,
          ),
        );
        child.kill("SIGKILL");
      }, waitMs);
      child.stdout?.on("data", onProgress);
      child.once("error", (error) => reject(new BotFailure("RECORDING_FAILED", `ffmpeg: ${error.message}`)));
      void waitForExit(child).then((code) => {
        reject(
          new BotFailure("RECORDING_FAILED", `ffmpeg exited (${code}) before recording:\n${this.output()}`),
        );
      });
    });
    try {
      await firstFrame;
    } finally {
      clearTimeout(stuck);
      // The MP4 muxer rebases each file to start at 0, so a segment's place on the recording's
      // clock is kept: when its first frame was reported (within the 0.1 s progress period).
      place(Date.now() - (this.startedAt as Date).getTime() - this.pausedMs);
      this.outputMark = { atMs: Date.now(), outTimeUs: counters.outTimeUs };
    }
    if (!appendTo) this.segmentStarts.push(await placed);
    const watch = this.watchForStall(child, counters);
    void waitForExit(child).then((code) => {
      clearInterval(watch);
      if (!this.stopping && !this.paused && this.child === child) void this.restart(code);
    });
  }

  /** Kills `child` once its output has not moved for STALL_MS (see there); its exit restarts it. */
  private watchForStall(child: ChildProcess, counters: FrameCounters): NodeJS.Timeout {
    const stallMs = this.opts.stallMs ?? STALL_MS;
    let written = counters.outTimeUs;
    let movedAt = Date.now();
    const watch = setInterval(
      () => {
        if (counters.outTimeUs !== written || this.stopping || this.paused) {
          written = counters.outTimeUs;
          movedAt = Date.now();
          return;
        }
        if (Date.now() - movedAt < stallMs) return;
        clearInterval(watch);
        this.log.error(
          { stalledMs: Date.now() - movedAt, ffmpeg: this.output() },
          "ffmpeg has written nothing for too long: killing it to record on in a new segment",
        );
        child.kill("SIGKILL");
      },
      Math.min(STALL_CHECK_MS, stallMs / 2),
    );
    watch.unref();
    return watch;
  }

  /** Forgets the last segment file if it never got its first frame: it holds nothing. */
  private async dropUnstarted(): Promise<void> {
    if (this.segmentStarts.length >= this.segments.length) return;
    const segment = this.segments.pop() as string;
    if (segment !== this.path) await rm(segment, { force: true });
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
      // Paused or stopped while it started: no failure; a resume starts ffmpeg again.
      if (this.stopping || this.paused) return await this.dropUnstarted();
      this.opts.onFailure(
        error instanceof BotFailure ? error : new BotFailure("RECORDING_FAILED", String(error)),
      );
    }
  }

  /**
   * Joins the segments into `path` without re-encoding. Each segment's span is set to reach the
   * next one's start, so a gap while ffmpeg restarted stays a gap rather than shifting what follows.
   */
  private async joinSegments(): Promise<void> {
    // The first segment's own start is 0 s of the recording.
    const starts = this.segmentStarts.map((ms, i) => (i === 0 ? 0 : ms / 1000));
    const list = this.segments
      .map((segment, i) => {
        const next = starts[i + 1];
        const span = next === undefined ? "" : `\nduration ${(next - (starts[i] ?? 0)).toFixed(3)}`;
        return `file '${segment.replace(/'/g, "'\\''")}'${span}`;
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
 * ffmpeg's inputs, filters and encoders: the display (x11grab, H.264) and the sound (pulse, AAC),
 * or for an audio-only bot (`video: false`) the sound alone. Both sides take the shared origin T0
 * (setpts/asetpts), and the sound is split to the level meter. Audio only is AAC in the same
 * fragmented MP4 (an .m4a): the segment upload and the server's checks read it as they read a
 * video recording, and every browser plays it (Opus would cost less CPU still, 0.019 core in
 * stereo, but not every browser plays Opus in MP4, and .m4a means AAC to every player).
 */
function recordingArgs(
  opts: RecordingOptions & { display: string; audioSource: string },
  t0: string,
): string[] {
  const { width, height, frameRate, display, audioSource } = opts;
  const audioInput = ["-thread_queue_size", "1024", "-f", "pulse", "-i", audioSource];
  const audio = (input: number) => [
    ...[
      "-filter_complex",
      `[${input}:a]asetpts=PTS-(${t0}+${RECORDED_SOUND_DELAY_MS / 1000})/TB,atrim=start=0,asplit=2[audio][meter];[meter]${LEVEL_METER}`,
    ],
  ];
  // Audio only: mono at 64 kb/s. A meeting's voices reach the sink as the same sound on both
  // channels, and ffmpeg's AAC encoder is most of the recorder's CPU: 0.034 core for mono 64k
  // against 0.058 for stereo 128k (20 s of speech in real time, measured).
  if (!opts.video) {
    return ["-channels", "1", ...audioInput, ...audio(0), "-map", "[audio]", "-c:a", "aac", "-b:a", "64k"];
  }
  return [
    ...["-thread_queue_size", "1024", "-f", "x11grab", "-draw_mouse", "0"],
    ...["-video_size", `${width}x${height}`, "-framerate", String(frameRate), "-i", display],
    ...audioInput,
    ...audio(1),
    ...["-map", "0:v", "-vf", `setpts=PTS-${t0}/TB`, "-map", "[audio]"],
    // One encoder thread: x264's slice threads cost more CPU than they save on a 2-core machine
    // shared by several bots (0.212 → 0.183 core, 1280x720 at 25 fps, a smaller file too). The
    // display's BGR → YUV conversion is half of ffmpeg's CPU; fast_bilinear does it with ~15 %
    // less (no scaling happens, so only the chroma's subsampling filter differs).
    ...["-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-threads", "1"],
    ...["-sws_flags", "fast_bilinear", "-pix_fmt", "yuv420p", "-g", String(frameRate * 2)],
    ...["-c:a", "aac", "-b:a", "128k"],
  ];
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

/**
 * Calls `onLevel` with each reading ametadata prints (`lavfi.astats.Overall.RMS_level=-41.07`),
 * and `onFirstWindow` once with the first window's timestamp (`frame:0 pts:96000 pts_time:2`):
 * where the first sound lies after T0, in seconds.
 */
function readLevels(
  stream: Readable,
  {
    onLevel,
    onFirstWindow,
  }: { onLevel: (dbfs: number) => void; onFirstWindow: (ptsSeconds: number) => void },
): void {
  let pending = "";
  let firstSeen = false;
  stream.on("data", (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const first = firstSeen ? null : /^frame:\d+\s+pts:\S+\s+pts_time:(\S+)/.exec(line);
      if (first) {
        firstSeen = true;
        const seconds = Number(first[1]);
        if (Number.isFinite(seconds)) onFirstWindow(seconds);
      }
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
  counters.outTimeUs = last("out_time_us") ?? counters.outTimeUs;
}
