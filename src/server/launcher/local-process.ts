import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, open, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  allowlistedEnv,
  type BotConfig,
  RunnerSettings,
  type RunnerSettingsInput,
} from "../../core/index.js";
import type { ServerConfig } from "../config.js";
import type { Launcher } from "./launcher.js";

export interface LocalProcessLauncherOptions {
  /** Runner logs go to `<dataDir>/bots/<id>/runner.log`. */
  dataDir: string;
  /**
   * Where a runner's environment comes from. Only the allowlisted variables (PATH, HOME, locale,
   * TMPDIR: RUNNER_ENV_ALLOWLIST) are passed on, whatever else it holds: a runner and the
   * browser it drives hold no secret of the server's.
   */
  env: Readonly<Record<string, string | undefined>>;
  /** argv of the runner; default `node bin/meetbot.js run`. */
  command?: string[];
  /**
   * How many warm runners to keep ready (display, sound and browser already up, waiting for a
   * config): a deploy then skips most of the time to join, at the cost of an idle browser each.
   * Default 0.
   */
  warmRunners?: number;
  /**
   * What a warm runner's browser and logs start with, before its bot's config arrives: the
   * settings the server puts in every BotConfig. Default RunnerSettings' defaults.
   */
  settings?: RunnerSettingsInput;
}

/** The launcher `meetbot serve` makes: runners started as the server's configuration says. */
export function launcherOptions(config: ServerConfig): LocalProcessLauncherOptions {
  return {
    dataDir: config.dataDir,
    env: config.runner.env,
    ...(config.runner.command ? { command: config.runner.command } : {}),
    warmRunners: config.runner.warmRunners,
    settings: config.runner.settings,
  };
}

interface Runner {
  child: ChildProcess;
  exited: Promise<RunnerExit>;
}

export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A program (non-empty) and its arguments. */
const Command = z.tuple([z.string().min(1)], z.string());

/** The folder holding package.json, walking up from `from` (works from src/ and dist/src/). */
export function findRepoRoot(from: string = import.meta.url): string {
  let dir = path.dirname(from.startsWith("file:") ? fileURLToPath(from) : from);
  for (;;) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
}

export function resolveRunnerCommand(option: string[] | undefined): [string, ...string[]] {
  if (option) return Command.parse(option);
  // A 1 MB young generation: the runner's heap is small and mostly idle, and V8's default
  // semi-spaces cost ~40 MB of PSS per bot (measured with `make bench`).
  return [process.execPath, "--max-semi-space-size=1", path.join(findRepoRoot(), "bin", "meetbot.js"), "run"];
}

/**
 * glibc's malloc settings for the runner (GLIBC_TUNABLES; the Dockerfile sets the same for the
 * image's). Loading Playwright makes V8 malloc ~25 MB of parser and compiler memory that is freed
 * right after; with glibc's sliding thresholds that memory stayed in the process in 4 of 6 lone
 * video bots (runner PSS 123–124 MB against 101–102). Fixed thresholds give it back: 97–106 MB in
 * 9 of 9 at the same CPU. Not passed on to the runner's own children (their allowlisted
 * environment): Chromium has its own allocator, and ffmpeg measured no different with it.
 */
export const RUNNER_MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";

/**
 * One detached child process per bot (its own process group), so that stopping or restarting the
 * server never stops a running bot. stdout and stderr are appended to the bot's runner.log.
 */
export class LocalProcessLauncher implements Launcher {
  private readonly command: [string, ...string[]];
  private readonly env: Record<string, string>;
  private readonly settings: RunnerSettings;
  private readonly children = new Map<number, Runner>();
  /** Account checks' runners (short: they exit once they have reported). */
  private readonly checks = new Set<Runner>();
  /** Warm runners: started, stage prepared, waiting for a config on stdin. */
  private readonly warm: Array<Runner & { logFile: string }> = [];
  private readonly warmTarget: number;
  private closed = false;

  constructor(private readonly options: LocalProcessLauncherOptions) {
    this.env = allowlistedEnv(options.env);
    this.command = resolveRunnerCommand(options.command);
    this.warmTarget = options.warmRunners ?? 0;
    this.settings = RunnerSettings.parse(options.settings ?? {});
    void this.replenish();
  }

  logFile(botId: number): string {
    return path.join(this.options.dataDir, "bots", String(botId), "runner.log");
  }

  /** An account check's runner log: its id is a check's, not a bot's. */
  checkLogFile(checkId: number): string {
    return path.join(this.options.dataDir, "account-checks", String(checkId), "runner.log");
  }

  async launch(config: BotConfig): Promise<void> {
    if (config.accountCheck) return this.launchCheck(config);
    const logFile = this.logFile(config.botId);
    await mkdir(path.dirname(logFile), { recursive: true });
    if (config.workDir) await mkdir(config.workDir, { recursive: true });
    const warm = this.takeWarm();
    if (warm) {
      // The open log keeps its inode across the rename, so the runner goes on writing into the
      // bot's own runner.log.
      await rename(warm.logFile, logFile);
      warm.child.stdin?.end(`${JSON.stringify(config)}\n`);
      this.track(config.botId, warm);
      void this.replenish();
      return;
    }
    // On stdin, as a warm runner gets it: never in the environment, where /proc shows it.
    const runner = await this.spawnRunner(logFile, { args: ["--config", "-"], env: {}, stdin: true });
    runner.child.stdin?.end(JSON.stringify(config));
    this.track(config.botId, runner);
    void this.replenish();
  }

  /**
   * An account check's runner: always a cold one (a warm runner's log would land among bots'), its
   * own log folder, and kept apart from bots' runners so that stopping a bot of the same id never
   * reaches it. It exits by itself once it has reported.
   */
  private async launchCheck(config: BotConfig): Promise<void> {
    const logFile = this.checkLogFile(config.botId);
    await mkdir(path.dirname(logFile), { recursive: true });
    if (config.workDir) await mkdir(config.workDir, { recursive: true });
    const runner = await this.spawnRunner(logFile, { args: ["--config", "-"], env: {}, stdin: true });
    runner.child.stdin?.end(JSON.stringify(config));
    this.checks.add(runner);
    void runner.exited.then(() => this.checks.delete(runner));
  }

  /**
   * Stops the warm runners no bot has claimed, and waits for them (SIGKILL after `graceMs`): a
   * server that exited first would leave their temporary folders behind. Running bots are left alone.
   */
  async close(graceMs = 5_000): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.warm.splice(0).map(async (runner) => {
        runner.child.kill("SIGTERM");
        const timer = setTimeout(() => runner.child.kill("SIGKILL"), graceMs);
        await runner.exited;
        clearTimeout(timer);
      }),
    );
  }

  private takeWarm(): (Runner & { logFile: string }) | undefined {
    while (this.warm.length > 0) {
      const runner = this.warm.shift() as Runner & { logFile: string };
      if (runner.child.exitCode === null && runner.child.signalCode === null) return runner;
    }
    return undefined;
  }

  private async replenish(): Promise<void> {
    while (!this.closed && this.warm.length < this.warmTarget) {
      const dir = path.join(this.options.dataDir, "warm");
      await mkdir(dir, { recursive: true });
      const logFile = path.join(dir, `runner-${Date.now()}-${this.warm.length}.log`);
      const { browser, logLevel } = this.settings;
      const args = ["--warm", "--browser", browser.executablePath, "--log-level", logLevel];
      const runner = await this.spawnRunner(logFile, { args, env: {}, stdin: true }).catch(() => null);
      if (!runner) return; // cannot start runners at all; a deploy will say why
      const entry = { ...runner, logFile };
      this.warm.push(entry);
      // A warm runner that dies while waiting is dropped; the next deploy starts one cold.
      void runner.exited.then(() => {
        const index = this.warm.indexOf(entry);
        if (index >= 0) this.warm.splice(index, 1);
      });
    }
  }

  private track(botId: number, runner: Runner): void {
    this.children.set(botId, runner);
    void runner.exited.then(() => {
      if (this.children.get(botId) === runner) this.children.delete(botId);
    });
  }

  private async spawnRunner(
    logFile: string,
    how: { args: string[]; env: Record<string, string>; stdin?: boolean },
  ): Promise<Runner> {
    const log = await open(logFile, "a", 0o600);
    // A temporary folder of the runner's own (its TMPDIR, under the server's), removed when it
    // exits however it ends: a runner killed with SIGKILL cannot remove its Chromium profile (a
    // signed-in bot's cookies) or its sound server's folder itself. A runner that outlives the
    // server (a restart) removes its own on a clean exit, as before. V8's compile cache stays where
    // the runner would put it without its own TMPDIR, shared by all runners (bin/meetbot.js): in a
    // folder of each runner's own, every runner compiled everything anew (clean-clone `make test`:
    // the e2e run took 987 core-s that way, 911 with the cache shared).
    const runnerTmp = await mkdtemp(path.join(tmpdir(), "meetbot-runner-"));
    const compileCache = path.join(tmpdir(), "node-compile-cache");
    const removeTmp = () => rm(runnerTmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    try {
      const [file, ...args] = this.command;
      const child = spawn(file, [...args, ...how.args], {
        detached: true,
        stdio: [how.stdin ? "pipe" : "ignore", log.fd, log.fd],
        env: {
          ...this.env,
          ...how.env,
          TMPDIR: runnerTmp,
          NODE_COMPILE_CACHE: compileCache,
          GLIBC_TUNABLES: RUNNER_MALLOC_TUNABLES,
        },
      });
      const exited = new Promise<RunnerExit>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      ).then(async (exit) => {
        await removeTmp().catch(() => {});
        return exit;
      });
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (error) => {
          void removeTmp().catch(() => {});
          reject(error);
        });
      });
      // Later errors (e.g. a failed kill, a closed stdin) must not crash the server.
      child.on("error", () => {});
      child.stdin?.on("error", () => {});
      child.unref();
      return { child, exited };
    } finally {
      await log.close();
    }
  }

  async stop(botId: number): Promise<void> {
    const child = this.children.get(botId)?.child;
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const pid = child.pid;
    try {
      process.kill(-pid, "SIGTERM");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
    }
  }

  /**
   * Stops every runner this launcher started and waits for them (SIGKILL after `graceMs`). Not
   * part of a server's shutdown, which leaves bots running; for tests and tools that own the bots.
   */
  async stopAll(graceMs = 15_000): Promise<void> {
    const running = [...this.children.entries()];
    const checks = [...this.checks];
    for (const runner of checks) if (runner.child.pid !== undefined) signalGroup(runner.child.pid, "SIGTERM");
    await Promise.all(
      checks.map(async (runner) => {
        const timer = setTimeout(() => runner.child.kill("SIGKILL"), graceMs);
        await runner.exited;
        clearTimeout(timer);
      }),
    );
    await Promise.all(
      running.map(async ([botId, runner]) => {
        await this.stop(botId);
        const timer = setTimeout(() => runner.child.kill("SIGKILL"), graceMs);
        await runner.exited;
        clearTimeout(timer);
      }),
    );
  }

  /** Whether this launcher started a runner for the bot that has not exited yet. */
  isRunning(botId: number): boolean {
    return this.children.has(botId);
  }

  /** Resolves when the runner exits; undefined when none is known to be running. */
  waitForExit(botId: number): Promise<RunnerExit> | undefined {
    return this.children.get(botId)?.exited;
  }

  /** The runner's pid, when this launcher started one that is still running. */
  pid(botId: number): number | undefined {
    return this.children.get(botId)?.child.pid;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}
