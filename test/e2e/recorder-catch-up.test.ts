import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { RecordingOptions } from "../../src/core/index.js";
import { type MediaEnvironment, startMediaEnvironment } from "../../src/runner/media-env.js";
import type { BotFailure } from "../../src/runner/errors.js";
import { Recorder } from "../../src/runner/recorder.js";

/**
 * A recorder whose ffmpeg fell behind the call still records up to the moment it was asked to
 * stop, and one whose ffmpeg stalled records on in a new segment: its ffmpeg (real, on a real PulseAudio of its own) is frozen with SIGSTOP for a few
 * seconds, as a starved machine holds it off the cores, while the sound it has not read waits in
 * the daemon. The stop comes while it is frozen; 'q' sent then would drop that backlog, so the
 * recorder first waits until ffmpeg has written up to the stop.
 */
let media: MediaEnvironment;
let dir: string;
beforeAll(async () => {
  media = await startMediaEnvironment({ width: 320, height: 240 });
  dir = await mkdtemp(join(tmpdir(), "meetbot-catch-up-"));
}, 30_000);
afterAll(async () => {
  await media?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The pid of the recorder's ffmpeg: the one ffmpeg among this process's descendants. */
function ffmpegPid(): number {
  const pids = processTree(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "ffmpeg";
    } catch {
      return false; // exited meanwhile
    }
  });
  if (pids.length !== 1) throw new Error(`expected one ffmpeg, found ${pids.length}`);
  return pids[0] as number;
}

/** An audio-only Recorder on the file's sound server, writing into `file`, with its log lines kept. */
function audioRecorder(file: string, opts: { onFailure: (failure: BotFailure) => void; stallMs?: number }) {
  const logged: Array<{ msg: string; behindMs?: number; leftBehindMs?: number; stalledMs?: number }> = [];
  const log = pino(
    { level: "info" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  const recorder = new Recorder(
    {
      ...RecordingOptions.parse({ video: false }),
      display: media.display,
      audioSource: media.audioSource,
      pulseEnv: media.pulseEnv,
      ...opts,
    },
    join(dir, file),
    log,
  );
  return { recorder, logged };
}

it(
  "waits for a frozen ffmpeg to write up to the stop before it asks it to quit",
  { timeout: 60_000 },
  async () => {
    const { recorder, logged } = audioRecorder("recording.mp4", {
      onFailure: (failure) => {
        throw failure;
      },
    });
    await recorder.start();
    await sleep(2_000);
    const pid = ffmpegPid();
    process.kill(pid, "SIGSTOP");
    try {
      await sleep(3_000);
      const stopAskedAt = Date.now();
      const stopping = recorder.stop();
      // Still frozen a moment into the stop: ffmpeg could not have read anything yet.
      await sleep(1_000);
      process.kill(pid, "SIGCONT");
      const result = await stopping;
      const wantedMs = stopAskedAt - (recorder.startedAt as Date).getTime();
      // Everything up to the stop, give or take the lag the recorder allows (1 s) and a fragment.
      expect(result.durationMs).toBeGreaterThan(wantedMs - 1_500);
      const caughtUp = logged.find((line) => line.msg.startsWith("ffmpeg had fallen behind the call"));
      expect(caughtUp, JSON.stringify(logged.map((line) => line.msg))).toBeDefined();
      expect(caughtUp?.behindMs).toBeGreaterThan(2_000);
      expect(caughtUp?.leftBehindMs).toBeLessThanOrEqual(1_000);
    } finally {
      // Never leave it frozen, should an assertion above have thrown first.
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone already
      }
    }
  },
);

it(
  "kills an ffmpeg whose output stalled and records on in a new segment, joined at the end",
  { timeout: 60_000 },
  async () => {
    const failures: unknown[] = [];
    const { recorder, logged } = audioRecorder("stalled.mp4", {
      onFailure: (failure) => failures.push(failure),
      stallMs: 3_000,
    });
    await recorder.start();
    await sleep(2_000);
    const stalled = ffmpegPid();
    // Frozen for good, as an ffmpeg whose input stopped answering: it never writes again.
    process.kill(stalled, "SIGSTOP");
    try {
      await vi.waitFor(
        () => {
          const pid = ffmpegPid();
          expect(pid).not.toBe(stalled);
          expect(recorder.running).toBe(true);
        },
        { timeout: 20_000, interval: 200 },
      );
    } finally {
      // Never leave it frozen, should it not have been killed.
      try {
        process.kill(stalled, "SIGKILL");
      } catch {
        // killed already, as it should be
      }
    }
    await sleep(2_000);
    const result = await recorder.stop();
    const killed = logged.find((line) => line.msg.startsWith("ffmpeg has written nothing for too long"));
    expect(killed?.stalledMs, JSON.stringify(logged.map((line) => line.msg))).toBeGreaterThanOrEqual(3_000);
    expect(recorder.parts).toBe(2);
    expect(failures).toEqual([]);
    // Both segments are in the file, with the stalled time kept as the gap it was.
    expect(result.durationMs).toBeGreaterThan(6_000);
  },
);
