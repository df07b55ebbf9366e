import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BotConfig } from "../../src/core/index.js";
import {
  findRepoRoot,
  LocalProcessLauncher,
  resolveRunnerCommand,
} from "../../src/server/launcher/local-process.js";

let dataDir: string;
const launchers: { launcher: LocalProcessLauncher; botId: number }[] = [];
beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-launcher-"));
});
afterEach(async () => {
  for (const { launcher, botId } of launchers.splice(0)) {
    const exited = launcher.waitForExit(botId);
    await launcher.stop(botId);
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

const config = (botId: number) =>
  BotConfig.parse({
    botId,
    meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
    callback: { baseUrl: "http://127.0.0.1:1", token: "t".repeat(32) },
    upload: { url: `http://127.0.0.1:1/v1/bot-callbacks/${botId}/recording` },
    workDir: path.join(dataDir, "bots", String(botId), "work"),
  });

/** A stand-in runner: writes what it received and its process ids, prints to both streams. */
const REPORT_SCRIPT = `
const fs = require("node:fs");
const stat = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
fs.writeFileSync(process.env.REPORT_FILE, JSON.stringify({
  config: JSON.parse(process.env.BOT_CONFIG), pid: process.pid, pgrp: Number(stat[2]), sid: Number(stat[3]),
  inherited: process.env.FROM_PARENT,
}));
console.log("runner says hello on stdout");
console.error("runner says hello on stderr");
`;

describe("LocalProcessLauncher", () => {
  it("starts the command detached, with BOT_CONFIG and the parent env, logging to runner.log", async () => {
    const report = path.join(dataDir, "report.json");
    const launcher = new LocalProcessLauncher({
      dataDir,
      command: [process.execPath, "-e", REPORT_SCRIPT],
      env: { ...process.env, REPORT_FILE: report, FROM_PARENT: "yes" },
    });
    const cfg = config(7);
    await launcher.launch(cfg);
    const exit = await launcher.waitForExit(7);
    expect(exit).toEqual({ code: 0, signal: null });

    const got = JSON.parse(await readFile(report, "utf8"));
    expect(got.config).toEqual(cfg);
    expect(got.inherited).toBe("yes");
    // its own process group and session: stopping the server does not stop it
    expect(got.pgrp).toBe(got.pid);
    expect(got.sid).toBe(got.pid);
    const ownStat = (await readFile("/proc/self/stat", "utf8")).split(") ")[1]?.split(" ") ?? [];
    expect(got.pgrp).not.toBe(Number(ownStat[2]));

    const log = await readFile(launcher.logFile(7), "utf8");
    expect(log).toContain("runner says hello on stdout");
    expect(log).toContain("runner says hello on stderr");
    expect(launcher.logFile(7)).toBe(path.join(dataDir, "bots", "7", "runner.log"));
    expect(existsSync(cfg.workDir as string)).toBe(true);
    expect(launcher.isRunning(7)).toBe(false);
  });

  it("appends to runner.log across launches", async () => {
    const launcher = new LocalProcessLauncher({
      dataDir,
      command: [process.execPath, "-e", "console.log('run')"],
    });
    await launcher.launch(config(3));
    await launcher.waitForExit(3);
    await launcher.launch(config(3));
    await launcher.waitForExit(3);
    expect((await readFile(launcher.logFile(3), "utf8")).match(/run/g)).toHaveLength(2);
  });

  it("stop() sends SIGTERM to the runner's process group", async () => {
    const ready = path.join(dataDir, "ready");
    // a runner with a child of its own: both must get the signal
    const script = `
      const { spawn } = require("node:child_process");
      spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      process.on("SIGTERM", () => { console.log("got SIGTERM"); process.exit(0); });
      require("node:fs").writeFileSync(${JSON.stringify(ready)}, "");
      setInterval(() => {}, 1000);
    `;
    const launcher = new LocalProcessLauncher({ dataDir, command: [process.execPath, "-e", script] });
    await launcher.launch(config(9));
    await vi.waitFor(() => expect(existsSync(ready)).toBe(true), { timeout: 10_000 });
    expect(launcher.isRunning(9)).toBe(true);
    const exited = launcher.waitForExit(9);
    await launcher.stop(9);
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(await readFile(launcher.logFile(9), "utf8")).toContain("got SIGTERM");
    expect(launcher.isRunning(9)).toBe(false);
    await launcher.stop(9); // a second stop is a no-op
  });

  it("rejects launch when the command cannot be spawned", async () => {
    const launcher = new LocalProcessLauncher({ dataDir, command: [path.join(dataDir, "no-such-runner")] });
    await expect(launcher.launch(config(4))).rejects.toThrow(/ENOENT/);
    expect(launcher.isRunning(4)).toBe(false);
  });

  it("keeps no handle on a runner it did not start", async () => {
    const launcher = new LocalProcessLauncher({ dataDir, command: [process.execPath, "-e", ""] });
    await launcher.stop(12345);
    expect(launcher.waitForExit(12345)).toBeUndefined();
  });
});

/** A stand-in warm runner: says it is warm, then writes the config line it gets on stdin. */
const WARM_SCRIPT = `
const fs = require("node:fs");
if (!process.argv.includes("--warm")) process.exit(3);
console.log("warm and waiting, pid " + process.pid);
let text = "";
process.stdin.on("data", (c) => { text += c; });
process.stdin.on("end", () => {
  fs.writeFileSync(process.env.REPORT_DIR + "/" + process.pid + ".json", text);
  console.log("got my bot");
});
`;

async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("LocalProcessLauncher with warm runners", () => {
  it("hands a deploy to a waiting runner on stdin, moves its log to the bot's, and refills the pool", async () => {
    const env = { ...process.env, REPORT_DIR: dataDir };
    const launcher = new LocalProcessLauncher({
      dataDir,
      command: [process.execPath, "-e", WARM_SCRIPT, "--"],
      env,
      warmRunners: 1,
    });
    const warmDir = path.join(dataDir, "warm");
    const firstLog = await until(
      async () => (existsSync(warmDir) ? (await readdir(warmDir))[0] : undefined),
      "a warm runner's log",
    );
    await until(
      async () =>
        (await readFile(path.join(warmDir, firstLog), "utf8")).includes("waiting") ? true : undefined,
      "warm",
    );

    await launcher.launch(config(21));
    const pid = launcher.pid(21) as number;
    const received = await until(
      () =>
        existsSync(path.join(dataDir, `${pid}.json`))
          ? readFile(path.join(dataDir, `${pid}.json`), "utf8")
          : undefined,
      "the config on stdin",
    );
    expect(BotConfig.parse(JSON.parse(received))).toEqual(config(21));
    await launcher.waitForExit(21);
    const botLog = await readFile(launcher.logFile(21), "utf8");
    expect(botLog).toContain(`warm and waiting, pid ${pid}`);
    expect(botLog).toContain("got my bot");

    // The pool refills with a new runner, which close() stops since no bot claimed it.
    const refill = await until(async () => {
      const logs = await readdir(warmDir);
      return logs.find((name) => name !== firstLog);
    }, "a new warm runner");
    const refillPid = await until(async () => {
      const match = /pid (\d+)/.exec(await readFile(path.join(warmDir, refill), "utf8"));
      return match ? Number(match[1]) : undefined;
    }, "the new runner's pid");
    await launcher.close();
    await until(() => (isAlive(refillPid) ? undefined : true), "the idle warm runner to exit");
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("resolveRunnerCommand", () => {
  it("prefers the option, then MEETBOT_RUNNER_COMMAND, then node bin/meetbot.js run", () => {
    expect(resolveRunnerCommand(["a", "b"], { MEETBOT_RUNNER_COMMAND: '["c"]' })).toEqual(["a", "b"]);
    expect(resolveRunnerCommand(undefined, { MEETBOT_RUNNER_COMMAND: '["c","--x"]' })).toEqual(["c", "--x"]);
    expect(resolveRunnerCommand(undefined, {})).toEqual([
      process.execPath,
      "--max-semi-space-size=1",
      path.join(findRepoRoot(), "bin", "meetbot.js"),
      "run",
    ]);
  });

  it("refuses a MEETBOT_RUNNER_COMMAND that is not a JSON array of strings", () => {
    for (const bad of ["node run", "[]", '[""]', "[1]", '{"a":1}']) {
      expect(() => resolveRunnerCommand(undefined, { MEETBOT_RUNNER_COMMAND: bad }), bad).toThrow(
        /MEETBOT_RUNNER_COMMAND/,
      );
    }
  });
});

describe("findRepoRoot", () => {
  it("finds the folder holding package.json from a file deep inside", async () => {
    const root = findRepoRoot(import.meta.url);
    const pkg = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
    expect(pkg.name).toBe("meetbot");
    expect(findRepoRoot(path.join(root, "dist", "src", "server", "launcher", "local-process.js"))).toBe(root);
  });
});
