import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import { DEFAULT_CHROMIUM_PATH } from "../../src/core/index.js";
import { chromiumArgs } from "../../src/runner/browser.js";
import { eventually } from "../helpers/stack.js";

/**
 * The runner's Chromium flags, as a runner that is not root uses them (the Docker image's user):
 * Chromium must start with its sandbox, i.e. its renderer in a user namespace of its own. As root
 * (this test machine) the flags are --no-sandbox, so the test drops to `nobody` with setpriv.
 */
const NOBODY = 65534;
let chromium: ChildProcess | undefined;
let home: string | undefined;
afterEach(() => {
  chromium?.kill("SIGKILL");
  // Chromium's helpers may still be writing into its profile for a moment after the kill.
  if (home) rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

function userNamespace(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/user`);
  } catch {
    return null;
  }
}

function chromiumType(pid: number): string | null {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (!cmdline.includes("chromium")) return null;
    return /--type=([a-z-]+)/.exec(cmdline)?.[1] ?? "browser";
  } catch {
    return null;
  }
}

describe("Chromium's sandbox", { timeout: 90_000 }, () => {
  it("is off only for root", () => {
    expect(chromiumArgs(true)).toEqual(expect.arrayContaining(["--no-sandbox", "--no-zygote"]));
    expect(chromiumArgs(false).filter((arg) => /sandbox|zygote/.test(arg))).toEqual([]);
  });

  it("confines the renderer of a runner that is not root in a user namespace of its own", async () => {
    home = mkdtempSync(join(tmpdir(), "meetbot-sandbox-"));
    chownSync(home, NOBODY, NOBODY);
    const args = [
      ...chromiumArgs(false),
      "--headless",
      `--user-data-dir=${join(home, "profile")}`,
      "data:text/html,<p>sandboxed</p>",
    ];
    chromium = spawn(
      "setpriv",
      [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", DEFAULT_CHROMIUM_PATH, ...args],
      { env: { PATH: "/usr/bin:/bin", HOME: home }, stdio: "ignore" },
    );
    const root = chromium.pid as number;
    const { browser, renderer } = await eventually(async () => {
      const tree = processTree(root).map((pid) => ({ pid, type: chromiumType(pid) }));
      const browserPid = tree.find((p) => p.type === "browser")?.pid;
      const rendererPid = tree.find((p) => p.type === "renderer")?.pid;
      return browserPid && rendererPid ? { browser: browserPid, renderer: rendererPid } : undefined;
    }, "Chromium's browser and renderer processes");

    expect(userNamespace(browser)).not.toBeNull();
    expect(userNamespace(renderer)).not.toBeNull();
    expect(userNamespace(renderer)).not.toBe(userNamespace(browser));
  });
});
