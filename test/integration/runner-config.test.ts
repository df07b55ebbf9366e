import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** Runs the CLI from source, as `meetbot run`, and returns its exit code and stderr. */
function meetbotRun(args: string[], env: Record<string, string> = {}, stdin = "") {
  const result = spawnSync(process.execPath, ["--import", "tsx", "src/cli.ts", "run", ...args], {
    env: { ...process.env, BOT_CONFIG: "", ...env },
    encoding: "utf8",
    input: stdin,
    timeout: 30_000,
  });
  return { code: result.status, stderr: result.stderr };
}

describe("meetbot run: config", () => {
  it("lists every bad field and exits 2", () => {
    const { code, stderr } = meetbotRun([], {
      BOT_CONFIG: JSON.stringify({
        botId: -1,
        meetingInfo: { platform: "google" },
        callback: { baseUrl: "nope", token: "x" },
        upload: { url: "http://127.0.0.1/up" },
      }),
    });
    expect(code).toBe(2);
    for (const field of ["botId", "meetingInfo.meetingUrl", "callback.baseUrl", "callback.token"]) {
      expect(stderr).toContain(`  ${field}:`);
    }
  });

  it("explains a missing config and exits 2", () => {
    const { code, stderr } = meetbotRun([]);
    expect(code).toBe(2);
    expect(stderr).toContain("set BOT_CONFIG");
  });

  it("reads --config - from stdin (how the local launcher hands it over)", () => {
    const invalid = meetbotRun(["--config", "-"], {}, "{ not json");
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("stdin is not valid JSON");
    const config = { botId: 3, meetingInfo: { platform: "google" }, callback: {}, upload: {} };
    const incomplete = meetbotRun(["--config", "-"], {}, JSON.stringify(config));
    expect(incomplete.code).toBe(2);
    expect(incomplete.stderr).toContain("invalid bot config in stdin");
    expect(incomplete.stderr).toContain("  meetingInfo.meetingUrl:");
  });

  it("reads --config FILE and rejects invalid JSON clearly", () => {
    const file = join(mkdtempSync(join(tmpdir(), "cfg-")), "bot.json");
    writeFileSync(file, "{ not json");
    const { code, stderr } = meetbotRun(["--config", file]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${file} is not valid JSON`);
  });

  it("checks a warm runner's settings before it starts anything", () => {
    const { code, stderr } = meetbotRun(["--warm", "--log-level", "loud"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^meetbot run --warm: logLevel: /);
  });

  it("rejects unknown flags with usage and exits 2", () => {
    const { code, stderr } = meetbotRun(["--frobnicate"]);
    expect(code).toBe(2);
    expect(stderr).toContain("Usage:");
  });
});
