import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { RecordingOptions } from "../../src/core/index.js";
import { BotFailure } from "../../src/runner/errors.js";
import { Recorder } from "../../src/runner/recorder.js";

/**
 * An ffmpeg that never records its first frame fails the recording instead of leaving the bot in
 * the call recording nothing. The stand-in here is an X server socket that accepts connections
 * and never answers: real ffmpeg's x11grab waits on it forever, as it does on a display that
 * hangs (ffmpeg 5.1's x11grab without MIT-SHM did the same, found while measuring).
 */
const X11_DIR = "/tmp/.X11-unix";
let silentServer: Server;
let display: string;
let dir: string;
const connections: Socket[] = [];

/** The first display number with no X socket (a live server or a stale socket file). */
function unusedDisplayNumber(): number {
  for (let n = 200; n < 300; n++) if (!existsSync(join(X11_DIR, `X${n}`))) return n;
  throw new Error(`no free display number in ${X11_DIR}`);
}

beforeAll(async () => {
  mkdirSync(X11_DIR, { recursive: true, mode: 0o1777 });
  const number = unusedDisplayNumber();
  display = `:${number}`;
  silentServer = createServer((socket) => connections.push(socket));
  await new Promise<void>((resolve) => silentServer.listen(join(X11_DIR, `X${number}`), resolve));
  dir = await mkdtemp(join(tmpdir(), "meetbot-stuck-input-"));
});
afterAll(async () => {
  for (const socket of connections) socket.destroy();
  await new Promise((resolve) => silentServer?.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** This process's ffmpeg children still running. */
function ffmpegChildren(): number[] {
  return processTree(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "ffmpeg";
    } catch {
      return false; // exited meanwhile
    }
  });
}

it("fails RECORDING_FAILED, naming the display, and kills its ffmpeg when no first frame comes", async () => {
  const failures: BotFailure[] = [];
  const recorder = new Recorder(
    {
      ...RecordingOptions.parse({ width: 320, height: 240 }),
      display,
      audioSource: "default",
      pulseEnv: {},
      onFailure: (failure) => failures.push(failure),
      firstFrameWaitMs: 2_000,
    },
    join(dir, "recording.mp4"),
    pino({ level: "silent" }),
  );
  const outcome = await recorder.start().then(
    () => "started",
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(BotFailure);
  expect((outcome as BotFailure).subCode).toBe("RECORDING_FAILED");
  expect((outcome as BotFailure).message).toContain(`recorded nothing in 2 s (display ${display}`);
  // ffmpeg did reach the display: the wait was on it, not on a spawn that failed.
  expect(connections.length).toBeGreaterThan(0);
  await vi.waitFor(() => expect(ffmpegChildren()).toEqual([]), { timeout: 5_000, interval: 100 });
  // A start that failed is no mid-call failure: nothing else is reported.
  expect(failures).toEqual([]);
});
