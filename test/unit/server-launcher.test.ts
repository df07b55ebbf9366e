import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BotConfig } from "../../src/core/index.js";
import { resolveConfig } from "../../src/server/config.js";
import {
  findRepoRoot,
  LocalProcessLauncher,
  launcherOptions,
  RUNNER_MALLOC_TUNABLES,
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

/**
 * A stand-in runner: writes what it received (config, environment) and its process ids into its
 * work dir, prints to both streams.
 */
const REPORT_SCRIPT = `
const fs = require("node:fs");
const config = JSON.parse(fs.readFileSync(0, "utf8"));
const stat = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
fs.writeFileSync(config.workDir + "/report.json", JSON.stringify({
  config, args: process.argv.slice(-2), pid: process.pid, pgrp: Number(stat[2]), sid: Number(stat[3]), env: process.env,
}));
console.log("runner says hello on stdout");
console.error("runner says hello on stderr");
`;

describe("LocalProcessLauncher", () => {
  it("starts the command detached, its config on stdin and only the allowlisted env, logging to runner.log", async () => {
    const launcher = new LocalProcessLauncher({
      dataDir,
      command: [process.execPath, "-e", REPORT_SCRIPT, "--"],
      env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", MEETBOT_JWT_SECRET: "s".repeat(32), FROM_PARENT: "yes" },
    });
    const cfg = config(7);
    await launcher.launch(cfg);
    const exit = await launcher.waitForExit(7);
    expect(exit).toEqual({ code: 0, signal: null });

    const got = JSON.parse(await readFile(path.join(cfg.workDir as string, "report.json"), "utf8"));
    expect(got.config).toEqual(cfg);
    expect(got.args).toEqual(["--config", "-"]);
    // The config (its callback token, a login's session) is in no environment variable. TMPDIR
    // is a folder of its own, gone once it exited.
    const { TMPDIR, ...env } = got.env;
    // V8's compile cache where every runner shares it (bin/meetbot.js), not in the runner's TMPDIR.
    expect(env).toEqual({
      PATH: "/usr/bin:/bin",
      LANG: "C.UTF-8",
      NODE_COMPILE_CACHE: path.join(tmpdir(), "node-compile-cache"),
      GLIBC_TUNABLES: RUNNER_MALLOC_TUNABLES,
    });
    expect(path.dirname(TMPDIR)).toBe(tmpdir());
    expect(path.basename(TMPDIR)).toMatch(/^meetbot-runner-/);
    expect(existsSync(TMPDIR)).toBe(false);
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
      env: process.env,
      command: [process.execPath, "-e", "console.log('run')", "--"],
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
    const launcher = new LocalProcessLauncher({
      dataDir,
      env: process.env,
      command: [process.execPath, "-e", script, "--"],
    });
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

  it("removes the runner's temporary folder, and what it left there, when the runner is killed", async () => {
    const ready = path.join(dataDir, "ready");
    // A runner that leaves a folder in its TMPDIR (as Chromium's profile) and never exits by itself.
    const script = `
      const fs = require("node:fs");
      const dir = fs.mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "profile-"));
      fs.writeFileSync(dir + "/Cookies", "secret");
      fs.writeFileSync(${JSON.stringify(ready)}, dir);
      setInterval(() => {}, 1000);
    `;
    const launcher = new LocalProcessLauncher({
      dataDir,
      env: process.env,
      command: [process.execPath, "-e", script, "--"],
    });
    await launcher.launch(config(11));
    await vi.waitFor(() => expect(existsSync(ready)).toBe(true), { timeout: 10_000 });
    const profile = await readFile(ready, "utf8");
    expect(existsSync(path.join(profile, "Cookies"))).toBe(true);
    const exited = launcher.waitForExit(11);
    process.kill(launcher.pid(11) as number, "SIGKILL");
    expect(await exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(existsSync(path.dirname(profile))).toBe(false);
  });

  it("rejects launch when the command cannot be spawned", async () => {
    const launcher = new LocalProcessLauncher({
      dataDir,
      env: process.env,
      command: [path.join(dataDir, "no-such-runner")],
    });
    await expect(launcher.launch(config(4))).rejects.toThrow(/ENOENT/);
    expect(launcher.isRunning(4)).toBe(false);
  });

  it("keeps no handle on a runner it did not start", async () => {
    const launcher = new LocalProcessLauncher({
      dataDir,
      env: process.env,
      command: [process.execPath, "-e", "", "--"],
    });
    await launcher.stop(12345);
    expect(launcher.waitForExit(12345)).toBeUndefined();
  });
});

/**
 * A stand-in warm runner (its report folder the first argument): says it is warm with which
 * arguments, then writes the config line it gets on stdin.
 */
const WARM_SCRIPT = `
const fs = require("node:fs");
const [reportDir, ...args] = process.argv.slice(1);
if (!args.includes("--warm")) process.exit(3);
console.log("warm and waiting, pid " + process.pid + ", args " + JSON.stringify(args));
let text = "";
process.stdin.on("data", (c) => { text += c; });
process.stdin.on("end", () => {
  fs.writeFileSync(reportDir + "/" + process.pid + ".json", text);
  console.log("got my bot");
});
`;

async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value === undefined) throw new Error(`still waiting for ${what}`);
      return value;
    },
    { timeout: 10_000 },
  );
}

describe("LocalProcessLauncher with warm runners", () => {
  it("hands a deploy to a waiting runner on stdin, moves its log to the bot's, and refills the pool", async () => {
    const launcher = new LocalProcessLauncher({
      dataDir,
      command: [process.execPath, "-e", WARM_SCRIPT, "--", dataDir],
      env: process.env,
      warmRunners: 1,
      // A warm runner starts its browser before any bot config: it gets the settings as flags.
      settings: { browser: { executablePath: "/opt/chromium/chrome" }, logLevel: "debug" },
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
    expect(botLog).toContain(
      `warm and waiting, pid ${pid}, args ${JSON.stringify(["--warm", "--browser", "/opt/chromium/chrome", "--log-level", "debug"])}`,
    );
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
    // close() returns once it exited.
    await launcher.close();
    expect(isAlive(refillPid)).toBe(false);
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
  it("prefers the option, then node bin/meetbot.js run", () => {
    expect(resolveRunnerCommand(["a", "b"])).toEqual(["a", "b"]);
    expect(resolveRunnerCommand(undefined)).toEqual([
      process.execPath,
      "--max-semi-space-size=1",
      path.join(findRepoRoot(), "bin", "meetbot.js"),
      "run",
    ]);
  });

  it("starts the image's runner as a local one: the same V8 flag and malloc settings", async () => {
    const dockerfile = await readFile(path.join(findRepoRoot(), "Dockerfile"), "utf8");
    expect(dockerfile).toContain(`ENV GLIBC_TUNABLES=${RUNNER_MALLOC_TUNABLES}\n`);
    expect(dockerfile).toMatch(/^ENTRYPOINT \[.*"node", "--max-semi-space-size=1", /m);
  });
});

describe("the server's runner configuration", () => {
  const resolve = (env: NodeJS.ProcessEnv) => resolveConfig({ dataDir, env });

  it("takes MEETBOT_RUNNER_COMMAND as a JSON array and refuses anything else, naming it", () => {
    expect(resolve({ MEETBOT_RUNNER_COMMAND: '["c","--x"]' }).runner.command).toEqual(["c", "--x"]);
    expect(resolve({}).runner.command).toBeUndefined();
    for (const bad of ["node run", "[]", '[""]', "[1]", '{"a":1}']) {
      expect(() => resolve({ MEETBOT_RUNNER_COMMAND: bad }), bad).toThrow(/^MEETBOT_RUNNER_COMMAND: must be/);
    }
  });

  it("gives runners only the allowlisted variables of its environment", () => {
    const runner = resolve({
      PATH: "/usr/bin",
      HOME: "/home/op",
      LC_ALL: "C.UTF-8",
      TMPDIR: "/var/tmp",
      MEETBOT_JWT_SECRET: "s".repeat(32),
      DATABASE_URL: "postgres://u:p@db/x",
      MEETBOT_CHROMIUM_PATH: "/opt/chromium/chrome",
    }).runner;
    expect(runner.env).toEqual({ PATH: "/usr/bin", HOME: "/home/op", LC_ALL: "C.UTF-8", TMPDIR: "/var/tmp" });
    // What the runner needs from the operator goes in its BotConfig instead.
    expect(runner.settings.browser.executablePath).toBe("/opt/chromium/chrome");
  });

  it("hands the runner settings to the launcher it makes", () => {
    const config = resolve({ PATH: "/usr/bin", MEETBOT_WARM_RUNNERS: "2", MEETBOT_LOG_LEVEL: "debug" });
    expect(launcherOptions(config)).toEqual({
      dataDir,
      env: { PATH: "/usr/bin" },
      warmRunners: 2,
      settings: {
        browser: { executablePath: "/usr/bin/chromium" },
        platformUrls: {},
        logLevel: "debug",
        finalDeliveryTimeout: 120_000,
        recordingSegmentInterval: 5_000,
      },
    });
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
