import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * A runner holds no secret of the server's: Chromium renders third-party pages, so nothing in the
 * runner's process tree may carry what the server's environment holds beyond the allowlist.
 * Canary values are put in this process's environment (the server runs here), and every
 * /proc/<pid>/environ of a recording bot's tree is searched for them.
 */

const CANARY = `canary-${randomBytes(12).toString("hex")}`;
const CANARY_NAME = `MEETBOT_CANARY_${randomBytes(4).toString("hex").toUpperCase()}`;
const saved = { MEETBOT_JWT_SECRET: process.env.MEETBOT_JWT_SECRET, [CANARY_NAME]: undefined };

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  process.env.MEETBOT_JWT_SECRET = CANARY;
  process.env[CANARY_NAME] = `${CANARY}-other`;
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** A process's environment as the kernel shows it; null once it has exited. */
function environOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return null;
  }
}

/** The program a process runs: the base name of its argv[0]. */
function programOf(pid: number): string | null {
  try {
    return basename(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "");
  } catch {
    return null;
  }
}

describe("the runner's environment", { timeout: 120_000 }, () => {
  it("a child that inherits this process's environment carries the canary (the probe sees leaks)", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    await new Promise((resolve) => child.once("spawn", resolve));
    try {
      expect(environOf(child.pid as number)).toContain(CANARY);
    } finally {
      child.kill();
    }
  });

  it("no process of a recording bot's tree holds the server's canary values", async () => {
    const { api, mock, control } = stack;
    const code = "env-cana-ryx";
    await control.configure("google", code, { participants: 2, admit: "open" });
    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
    });
    await api.deploy(bot.id);
    await eventually(async () => {
      const events = await api.botEvents(bot.id);
      return events.some((e) => e.eventType === "RECORDING_STARTED") ? true : undefined;
    }, "the bot to record");

    const runnerPid = stack.launcher.pid(bot.id);
    expect(runnerPid).toBeDefined();
    const tree = processTree(runnerPid as number)
      .map((pid) => ({ pid, program: programOf(pid), environ: environOf(pid) }))
      .filter((p) => p.program !== null && p.environ !== null);

    // The tree is the whole bot: the runner, its display and sound, the browser, the recorder.
    const programs = new Set(tree.map((p) => p.program));
    for (const program of ["node", "Xvfb", "pulseaudio", "parec", "chromium", "ffmpeg"]) {
      expect(programs, `${program} in ${[...programs].join(", ")}`).toContain(program);
    }
    expect(tree.length).toBeGreaterThanOrEqual(6);

    // The runner gets the allowlisted PATH; nothing of the server's secrets, and its config (the
    // callback token, a login's session) came on stdin: no process's environment holds any of it.
    const runner = tree.find((p) => p.pid === runnerPid);
    const runnerVariables = (runner?.environ ?? "").split("\0").map((entry) => entry.split("=")[0]);
    expect(runnerVariables).toContain("PATH");
    for (const { pid, program, environ } of tree) {
      expect(environ, `${program} (${pid})`).not.toContain(CANARY);
      expect(environ, `${program} (${pid})`).not.toContain(CANARY_NAME);
      expect(environ, `${program} (${pid})`).not.toContain("BOT_CONFIG=");
      expect(environ, `${program} (${pid})`).not.toContain(code);
    }

    await control.end("google", code);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("DONE");
  });
});
