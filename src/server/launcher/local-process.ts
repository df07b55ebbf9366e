import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { BotConfig } from "../../core/index.js";
import type { Launcher } from "./launcher.js";

export interface LocalProcessLauncherOptions {
  /** Runner logs go to `<dataDir>/bots/<id>/runner.log`. */
  dataDir: string;
  /** argv of the runner; default env MEETBOT_RUNNER_COMMAND (JSON array), else `node bin/meetbot.js run`. */
  command?: string[];
  /** Environment of the runner besides BOT_CONFIG; default this process's. */
  env?: NodeJS.ProcessEnv;
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

export function resolveRunnerCommand(
  option: string[] | undefined,
  env: NodeJS.ProcessEnv,
): [string, ...string[]] {
  if (option) return Command.parse(option);
  const fromEnv = env.MEETBOT_RUNNER_COMMAND;
  if (fromEnv) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fromEnv);
    } catch {
      throw new Error("MEETBOT_RUNNER_COMMAND must be a JSON array of strings");
    }
    const result = Command.safeParse(parsed);
    if (!result.success) throw new Error("MEETBOT_RUNNER_COMMAND must be a JSON array of strings");
    return result.data;
  }
  return [process.execPath, path.join(findRepoRoot(), "bin", "meetbot.js"), "run"];
}

/**
 * One detached child process per bot (its own process group), so that stopping or restarting the
 * server never stops a running bot. stdout and stderr are appended to the bot's runner.log.
 */
export class LocalProcessLauncher implements Launcher {
  private readonly command: [string, ...string[]];
  private readonly env: NodeJS.ProcessEnv;
  private readonly children = new Map<number, { child: ChildProcess; exited: Promise<RunnerExit> }>();

  constructor(private readonly options: LocalProcessLauncherOptions) {
    this.env = options.env ?? process.env;
    this.command = resolveRunnerCommand(options.command, this.env);
  }

  logFile(botId: number): string {
    return path.join(this.options.dataDir, "bots", String(botId), "runner.log");
  }

  async launch(config: BotConfig): Promise<void> {
    const logFile = this.logFile(config.botId);
    await mkdir(path.dirname(logFile), { recursive: true });
    if (config.workDir) await mkdir(config.workDir, { recursive: true });
    const log = await open(logFile, "a", 0o600);
    try {
      const [file, ...args] = this.command;
      const child = spawn(file, args, {
        detached: true,
        stdio: ["ignore", log.fd, log.fd],
        env: { ...this.env, BOT_CONFIG: JSON.stringify(config) },
      });
      const exited = new Promise<RunnerExit>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      const entry = { child, exited };
      this.children.set(config.botId, entry);
      void exited.then(() => {
        if (this.children.get(config.botId) === entry) this.children.delete(config.botId);
      });
      try {
        await new Promise<void>((resolve, reject) => {
          child.once("spawn", resolve);
          child.once("error", reject);
        });
      } catch (err) {
        this.children.delete(config.botId);
        throw err;
      }
      // Later errors (e.g. a failed kill) must not crash the server.
      child.on("error", () => {});
      child.unref();
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
