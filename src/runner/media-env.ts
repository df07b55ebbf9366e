import type { ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToEnd, spawnTied, tailOutput, terminate, waitForExit } from "../media/processes.js";
import { BotFailure } from "./errors.js";

/**
 * The bot's private display and sound card: an Xvfb display of the recording's size and a
 * PulseAudio daemon of its own. Several bots on one machine never share either, so their
 * recordings cannot bleed into each other. The daemon has two null sinks:
 *
 * - `meetbot_call`: what the meeting plays (Chromium's output). Its monitor is the meeting alone,
 *   without the bot's own voice: what an agent on the bot's audio stream hears (agent-stream/),
 *   so that it never hears itself. A loopback copies it into `meetbot`.
 * - `meetbot`: the meeting and the bot's voice mixed; its monitor is what the bot records and
 *   hears.
 * - `meetbot_voice`: what the bot says (the runner plays clips into it). Its monitor, remapped as
 *   the source `meetbot_mic`, is the default source, so it is Chromium's microphone: the meeting's
 *   own sound never reaches the microphone (an echo would send the meeting back into the call).
 *   A loopback also copies it into `meetbot`, because no platform plays a participant's own voice
 *   back to them, and the record of the meeting must have both sides.
 */
export interface MediaEnvironment {
  /** X display for Chromium and ffmpeg's x11grab, e.g. ":99". */
  display: string;
  /** Environment for every client of this bot's PulseAudio (a live agent's Chromium, reader and player: ownLatencyEnv). */
  pulseEnv: Record<string, string>;
  /** The PulseAudio source to record: the meeting sink's monitor (with the bot's own voice mixed in). */
  audioSource: string;
  /** The PulseAudio source of the meeting's sound alone (Chromium's output, without the bot's voice). */
  callSource: string;
  /** The PulseAudio sink whose sound is the bot's microphone. */
  voiceSink: string;
  close(): Promise<void>;
}

const SINK = "meetbot";
const CALL_SINK = "meetbot_call";
const VOICE_SINK = "meetbot_voice";
const MIC_SOURCE = "meetbot_mic";
const START_TIMEOUT_MS = 10_000;
/**
 * The sound path's latency, which sets the sinks' block size and the recorder's and readers' buffers: how long a
 * late thread (Chromium's audio, the daemon's loopbacks) may be held off a core before the sound
 * has a hole. At 20 ms, 4 video bots recording at once on 2 cores had 15-19 holes each in 33 s of
 * speech; at 100 ms, 0-2 (bench/audio-only.ts). The sound reaches the recorder later for it, which
 * the recorder takes back (RECORDED_SOUND_DELAY_MS).
 */
const LATENCY_MS = 100;
/**
 * How much later than it played the sound reaches the recorder through the loopbacks at
 * LATENCY_MS: measured with bench/av-sync.ts (a beep and a flash drawn for the same instant).
 */
export const RECORDED_SOUND_DELAY_MS = 60;
/**
 * pulseEnv without the latency every client is held to: for a reader or player whose own small
 * latency is the point (a voice agent hears and speaks within tens of ms). The sinks it touches then
 * run the smaller blocks it asks for, and with them the risk of holes on a saturated machine.
 */
export function ownLatencyEnv(pulseEnv: Record<string, string>): Record<string, string> {
  const { PULSE_LATENCY_MSEC: _held, ...rest } = pulseEnv;
  return rest;
}
/**
 * Chromium's sound: its environment and flags. Held to LATENCY_MS, it plays and captures in big
 * blocks, and on a busy machine its late audio thread leaves no holes (8 audio-only bots at once:
 * 0-1 dropouts each against 2-5 on its own ~10 ms, and 0.14 core a bot against 0.20;
 * bench/audio-only.ts). Its own audio thread renders the same blocks (`--audio-buffer-size`, in
 * frames): on its default ~10 ms it woke itself, and the daemon with it, 100 times a second per
 * stream, for nothing (one audio-only bot in its call: 11.0 -> 9.7 % of a core, the daemon 3.3 ->
 * 2.4 %; A/V sync within its run-to-run spread, measured 2026-11-28). A bot with a live agent needs
 * its answers in the call within tens of ms (p50 51 ms against 154 held), so its Chromium keeps
 * its own latencies.
 */
export function browserSound(
  pulseEnv: Record<string, string>,
  opts: { promptMicrophone: boolean },
): { env: Record<string, string>; args: string[] } {
  if (opts.promptMicrophone) return { env: ownLatencyEnv(pulseEnv), args: [] };
  return { env: pulseEnv, args: [`--audio-buffer-size=${(RATE * LATENCY_MS) / 1000}`] };
}
/** Every sink's, and so every stream's, sample rate. */
const RATE = 48_000;

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
    return {
      display,
      pulseEnv: pulse,
      audioSource: `${SINK}.monitor`,
      callSource: `${CALL_SINK}.monitor`,
      voiceSink: VOICE_SINK,
      close,
    };
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
  // no hardware probing, just the socket, the sinks and the microphone (see MediaEnvironment).
  const daemonEnv = { XDG_RUNTIME_DIR: runtimeDir, HOME: runtimeDir };
  await mkdir(join(runtimeDir, "pulse"), { recursive: true });
  // The daemon's default rate is what clients that take the server's (Chromium) play at: 44.1 kHz
  // out of the box, which the daemon then resampled to the sinks' 48 kHz, stream by stream
  // (measured: Chromium's two streams at 44.1 kHz float). At 48 kHz nothing is resampled.
  await mkdir(join(runtimeDir, ".config", "pulse"), { recursive: true });
  await writeFile(
    join(runtimeDir, ".config", "pulse", "daemon.conf"),
    `default-sample-rate = ${RATE}\nalternate-sample-rate = ${RATE}\n`,
  );
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
      // pacmd's socket: several commands in one helper process (warmUp).
      `--load=module-cli-protocol-unix socket=${join(runtimeDir, "pulse", "cli")}`,
      `--load=module-null-sink sink_name=${SINK} rate=${RATE} sink_properties=device.description=${SINK}`,
      `--load=module-null-sink sink_name=${CALL_SINK} rate=${RATE} sink_properties=device.description=${CALL_SINK}`,
      `--load=module-null-sink sink_name=${VOICE_SINK} rate=${RATE} channels=1 sink_properties=device.description=${VOICE_SINK}`,
      `--load=module-remap-source source_name=${MIC_SOURCE} master=${VOICE_SINK}.monitor source_properties=device.description=${MIC_SOURCE}`,
      // The bot's voice into the recorded mix, LATENCY_MS late (the recorder takes that back).
      `--load=module-loopback source=${VOICE_SINK}.monitor sink=${SINK} latency_msec=${LATENCY_MS} source_dont_move=true sink_dont_move=true`,
      // The meeting into the recorded mix, with the same latency as the voice: both sides land in
      // the recording equally late, and so in step with each other.
      `--load=module-loopback source=${CALL_SINK}.monitor sink=${SINK} latency_msec=${LATENCY_MS} source_dont_move=true sink_dont_move=true`,
    ],
    { env: daemonEnv, stdio: ["ignore", "pipe", "pipe"], deathSignal: "KILL" },
  );
  started.push(pulse);
  const output = tailOutput(pulse);
  // Chromium (the one client that takes PULSE_SINK without -d) plays into the call sink.
  const pulseEnv: Record<string, string> = {
    XDG_RUNTIME_DIR: runtimeDir,
    PULSE_SERVER: `unix:${socket}`,
    PULSE_SINK: CALL_SINK,
    // Every client's own requests set the sinks' block size too: libpulse puts this latency in
    // place of theirs (a live agent's Chromium, reader and player go without it: ownLatencyEnv).
    PULSE_LATENCY_MSEC: String(LATENCY_MS),
  };
  const ready = await waitForPulse(pulseEnv, pulse);
  if (!ready) throw new BotFailure("MEDIA_SETUP_FAILED", `PulseAudio failed to start\n${output()}`);
  // Checked: a default source left on a monitor would send the meeting back into the call.
  for (const args of [
    ["set-default-sink", CALL_SINK],
    ["set-default-source", MIC_SOURCE],
  ]) {
    await runToEnd("pactl", args, { env: pulseEnv }).catch((error: Error) => {
      throw new BotFailure("MEDIA_SETUP_FAILED", `pactl ${args.join(" ")}: ${error.message}\n${output()}`);
    });
  }
  await warmUp(
    pulseEnv,
    [
      [SINK, `${SINK}.monitor`],
      [CALL_SINK, `${CALL_SINK}.monitor`],
      [VOICE_SINK, MIC_SOURCE],
    ],
    started,
  );
  return pulseEnv;
}

/**
 * A fresh null sink renders its first block 2 s after it starts, so a recorder that connects to
 * its monitor early waits ~2 s for its first audio (measured 1.8-2.0 s for ffmpeg and parec alike,
 * whatever latency they ask for), and ffmpeg's whole output waits with it. A reader
 * attached now, followed by a suspend/resume of the sink, restarts the sink's clock with its
 * blocks: the recorder then gets audio within a block. The reader stays for the bot's life,
 * reading ~190 kB/s into /dev/null, which costs next to nothing. The voice sink gets the same,
 * read through the microphone: without it the first sound the bot says reaches its microphone
 * late or not at all (measured: nothing in a 1.6 s capture), after it about 10 ms after playing.
 *
 * All sinks at once, and the suspends and resumes in one pacmd script: each helper process costs
 * the runner a spawn (tens of ms of CPU on a loaded machine); one sink at a time with pactl was
 * ~17 of them per bot.
 */
async function warmUp(
  pulseEnv: Record<string, string>,
  sinks: ReadonlyArray<readonly [sink: string, source: string]>,
  started: ChildProcess[],
): Promise<void> {
  const readers = async () => {
    const listed = (await pactl(pulseEnv, ["list", "short", "source-outputs"])).trim();
    return listed ? listed.split("\n").length : 0;
  };
  const before = await readers();
  const devNull = openSync("/dev/null", "w");
  for (const [, source] of sinks) {
    // At the sink's rate: parec asks 44.1 kHz by default, which the daemon resampled for nothing.
    const reader = spawnTied(
      "parec",
      ["--raw", `--latency-msec=${LATENCY_MS}`, `--rate=${RATE}`, "-d", source],
      { env: pulseEnv, stdio: ["ignore", devNull, "ignore"], deathSignal: "KILL" },
    );
    started.push(reader);
  }
  closeSync(devNull);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline && (await readers()) < before + sinks.length) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const script = sinks.map(([sink]) => `suspend-sink ${sink} 1\nsuspend-sink ${sink} 0\n`).join("");
  const pacmd = spawnTied("pacmd", [], { env: pulseEnv, stdio: ["pipe", "ignore", "ignore"] });
  pacmd.stdin?.end(script);
  await waitForExit(pacmd);
}

/** pactl's output, or "" when it fails (the daemon is still starting). */
async function pactl(pulseEnv: Record<string, string>, args: string[]): Promise<string> {
  const { stdout } = await runToEnd("pactl", args, { env: pulseEnv }).catch(() => ({ stdout: "" }));
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
