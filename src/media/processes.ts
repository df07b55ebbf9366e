import { type ChildProcess, execFile, type SpawnOptions, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { allowlistedEnv } from "../core/index.js";

const execFileAsync = promisify(execFile);

/**
 * Every helper program, of a runner (Xvfb, PulseAudio, ffmpeg) or of the server (ffmpeg, ffprobe,
 * pocketsphinx), is started through here with the allowlisted environment (childEnv): the
 * runner's BOT_CONFIG and the server's JWT secret, database URL and provider keys never reach
 * one.
 *
 * A long-running helper (spawnTied) is wrapped in
 * `setpriv --pdeathsig`: if the runner dies, even by SIGKILL, the kernel signals the child, so
 * no Xvfb or ffmpeg keeps running (and recording) for hours behind a dead runner. ffmpeg gets
 * SIGTERM, on which it still finalizes its file.
 *
 * Each child also gets its own process group, so a signal meant for the runner's group (a
 * terminal's Ctrl-C, a supervisor's group kill) reaches only the runner, which then stops its
 * children in the right order: leave the call, finalize the recording, then the display.
 *
 * A child's environment is the allowlist (childEnv) plus `env`: never the runner's whole own.
 */
const SETPRIV = "/usr/bin/setpriv";

export function spawnTied(
  command: string,
  args: readonly string[],
  options: Omit<SpawnOptions, "env"> & { deathSignal?: "TERM" | "KILL"; env?: Record<string, string> } = {},
): ChildProcess {
  const { deathSignal = "TERM", env, ...rest } = options;
  const spawnOptions: SpawnOptions = { detached: true, ...rest, env: childEnv(env) };
  if (!existsSync(SETPRIV)) return spawn(command, args, spawnOptions);
  return spawn(SETPRIV, [`--pdeathsig=${deathSignal}`, "--", command, ...args], spawnOptions);
}

/**
 * Runs a short helper (ffprobe, pactl, a remux) to its end; resolves with its output, rejects when
 * it exits non-zero (the error carries `stderr`). `env`: what it needs beyond the allowlist.
 */
export function runToEnd(
  file: string,
  args: readonly string[],
  options: { maxBuffer?: number; signal?: AbortSignal; env?: Readonly<Record<string, string>> } = {},
): Promise<{ stdout: string; stderr: string }> {
  const { env, ...rest } = options;
  return execFileAsync(file, args, { ...rest, env: childEnv(env) });
}

/**
 * The environment of a program the runner or the server starts: PATH, HOME, locale, TMPDIR (RUNNER_ENV_ALLOWLIST)
 * and what that program needs (DISPLAY, PulseAudio's socket). Whatever else the runner's own
 * environment holds (BOT_CONFIG with its callback token, in a container) stays out of reach of
 * the browser and its pages, and the server's own secrets out of reach of a demuxer reading a
 * runner's bytes.
 */
export function childEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return allowlistedEnv(process.env, extra);
}

/** Resolves with the exit code (or the signal's name) once the process has exited. */
export function waitForExit(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
}

/** Signals a process and, if it is still alive after `graceMs`, kills it. */
export async function terminate(child: ChildProcess, graceMs = 3_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = waitForExit(child);
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Keeps the last lines a process printed, so a failure can say what the process said. */
export function tailOutput(child: ChildProcess, maxLines = 20): () => string {
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > maxLines) lines.shift();
    }
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return () => lines.join("\n");
}

/**
 * ffmpeg's first line of complaint, made fit to answer: without the address it prints beside a
 * demuxer's name (`[mp3 @ 0x55d0...]`) and with the server's directories cut from file paths.
 */
export function ffmpegComplaint(stderr: string, args: readonly string[]): string {
  const line = stderr.split("\n").find((l) => l.trim() !== "") ?? "ffmpeg failed";
  const withoutAddress = line.trim().replace(/ @ 0x[0-9a-f]+\]/g, "]");
  return args
    .filter((arg) => path.isAbsolute(arg))
    .reduce((text, file) => text.split(file).join(path.basename(file)), withoutAddress)
    .slice(0, 300);
}
