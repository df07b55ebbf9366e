import { type ChildProcess, execFile } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { childEnv, spawnTied, tailOutput, terminate, waitForExit } from "../media/processes.js";
import { BotFailure } from "./errors.js";

/**
 * The bot's private display and sound card: an Xvfb display of the recording's size and a
 * PulseAudio daemon of its own with one null sink. Several bots on one machine never share
 * either, so their recordings cannot bleed into each other.
 */
export interface MediaEnvironment {
  /** X display for Chromium and ffmpeg's x11grab, e.g. ":99". */
  display: string;
  /** Environment for Chromium and ffmpeg so that they find this bot's PulseAudio. */
  pulseEnv: Record<string, string>;
  /** The PulseAudio source to record: the null sink's monitor. */
  audioSource: string;
  close(): Promise<void>;
}

const SINK = "meetbot";
const execFileAsync = promisify(execFile);
const START_TIMEOUT_MS = 10_000;

export async function startMediaEnvironment(opts: {
  width: number;
  height: number;
  /** Use this display instead of starting Xvfb (headed debugging on a developer's screen). */
  existingDisplay?: string;
}): Promise<MediaEnvironment> {
  const started: ChildProcess[] = [];
  const runtimeDir = await mkdtemp(join(tmpdir(), "meetbot-pulse-"));
  const close = async () => {
    await Promise.all(started.map((child) => terminate(child)));
    // A daemon may still be writing its last files as it exits: retry rather than fail.
    await rm(runtimeDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  };
  try {
    const [display, pulse] = await Promise.all([
      opts.existingDisplay
        ? Promise.resolve(opts.existingDisplay)
        : startXvfb(opts.width, opts.height, started),
      startPulseAudio(runtimeDir, started),
    ]);
    return { display, pulseEnv: pulse, audioSource: `${SINK}.monitor`, close };
  } catch (error) {
    // The reason the environment did not start is what matters, not a cleanup hiccup after it.
    await close().catch(() => {});
    throw error;
  }
}

async function startXvfb(width: number, height: number, started: ChildProcess[]): Promise<string> {
  // -displayfd makes Xvfb pick a free display itself and tell us which: no races between bots.
  // No GLX: Chromium runs without GPU, and the extension alone costs ~55 MB of PSS (measured).
  const xvfb = spawnTied(
    "Xvfb",
    [
      ...["-displayfd", "3", "-screen", "0", `${width}x${height}x24`],
      ...["-nolisten", "tcp", "-ac", "-nocursor", "-extension", "GLX"],
    ],
    { stdio: ["ignore", "pipe", "pipe", "pipe"], deathSignal: "KILL" },
  );
  started.push(xvfb);
  const output = tailOutput(xvfb);
  const displayPipe = xvfb.stdio[3];
  if (!displayPipe) throw new BotFailure("MEDIA_SETUP_FAILED", "Xvfb: no display pipe");
  const number = await new Promise<string>((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error("timed out")), START_TIMEOUT_MS);
    displayPipe.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("\n")) {
        clearTimeout(timer);
        resolve(text.trim());
      }
    });
    xvfb.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void waitForExit(xvfb).then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}`));
    });
  }).catch((error: Error) => {
    throw new BotFailure("MEDIA_SETUP_FAILED", `Xvfb failed to start: ${error.message}\n${output()}`);
  });
  return `:${number}`;
}

async function startPulseAudio(runtimeDir: string, started: ChildProcess[]): Promise<Record<string, string>> {
  // Our own daemon in user mode (system mode refuses root clients), without the default script:
  // no hardware probing, just the socket and one null sink that is therefore the default sink.
  const env = { XDG_RUNTIME_DIR: runtimeDir, HOME: runtimeDir };
  await mkdir(join(runtimeDir, "pulse"), { recursive: true });
  const socket = join(runtimeDir, "pulse", "native");
  const pulse = spawnTied(
    "pulseaudio",
    [
      "--daemonize=no",
      "--exit-idle-time=-1",
      "--disallow-exit",
      "--disable-shm",
      "-n",
      "--log-target=stderr",
      "--log-level=error",
      `--load=module-native-protocol-unix auth-anonymous=1 socket=${socket}`,
      `--load=module-null-sink sink_name=${SINK} rate=48000 sink_properties=device.description=${SINK}`,
    ],
    { env, stdio: ["ignore", "pipe", "pipe"], deathSignal: "KILL" },
  );
  started.push(pulse);
  const output = tailOutput(pulse);
  const pulseEnv = { XDG_RUNTIME_DIR: runtimeDir, PULSE_SERVER: `unix:${socket}`, PULSE_SINK: SINK };
  const ready = await waitForPulse(pulseEnv, pulse);
  if (!ready) throw new BotFailure("MEDIA_SETUP_FAILED", `PulseAudio failed to start\n${output()}`);
  started.push(await warmUpMonitor(pulseEnv));
  return pulseEnv;
}

/**
 * A fresh null sink renders its first block 2 s after it starts, so a recorder that connects to
 * its monitor early waits ~2 s for its first audio (measured 1.8-2.0 s for ffmpeg and parec alike,
 * whatever latency they ask for), and ffmpeg's whole output waits with it. A low-latency reader
 * attached now, followed by a suspend/resume of the sink, restarts the sink's clock with small
 * blocks: the recorder then gets audio within ~20 ms. The reader stays for the bot's life,
 * reading ~190 kB/s into /dev/null, which costs next to nothing.
 */
async function warmUpMonitor(pulseEnv: Record<string, string>): Promise<ChildProcess> {
  const env = childEnv(pulseEnv);
  const devNull = openSync("/dev/null", "w");
  const reader = spawnTied("parec", ["--raw", "--latency-msec=20", "-d", `${SINK}.monitor`], {
    env: pulseEnv,
    stdio: ["ignore", devNull, "ignore"],
    deathSignal: "KILL",
  });
  closeSync(devNull);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline && !(await pactl(env, ["list", "short", "source-outputs"])).trim()) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await pactl(env, ["suspend-sink", SINK, "1"]);
  await pactl(env, ["suspend-sink", SINK, "0"]);
  return reader;
}

async function pactl(env: Record<string, string>, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync("pactl", args, { env }).catch(() => ({ stdout: "" }));
  return stdout;
}

/** Ready means a client can talk to it: `pactl info` succeeds against our socket. */
async function waitForPulse(pulseEnv: Record<string, string>, pulse: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline && pulse.exitCode === null) {
    const probe = spawnTied("pactl", ["info"], { env: pulseEnv, stdio: "ignore" });
    if ((await waitForExit(probe)) === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
