import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/server/config.js";
import { ServerEnv } from "../../src/server/env.js";
import { StartupError } from "../../src/server/startup-error.js";

/**
 * Runs `meetbot serve` from source with `env` added to a clean environment (no variable of this
 * process leaks in); resolves with its exit code and output. Each case here must stop before the
 * server listens.
 */
function meetbotServe(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "meetbot-config-"));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli.ts", "serve", "--port", "0", "--data-dir", dataDir],
    { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once("close", (code) => {
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, stderr });
    }),
  );
}

describe("meetbot serve: a bad environment variable", { timeout: 60_000 }, () => {
  const cases: Array<[Record<string, string>, string]> = [
    [
      { MEETBOT_WATCHDOG_INTERVAL_MS: "abc" },
      'MEETBOT_WATCHDOG_INTERVAL_MS: must be a whole number of milliseconds, 1 or more (got "abc")',
    ],
    [
      { MEETBOT_RATE_LIMIT_PER_HOUR: "-1" },
      'MEETBOT_RATE_LIMIT_PER_HOUR: must be a whole number (0 turns the limit off) (got "-1")',
    ],
    [{ MEETBOT_WEBHOOK_WORKER: "yes" }, 'MEETBOT_WEBHOOK_WORKER: must be 1 or 0 (got "yes")'],
    [{ MEETBOT_WARM_RUNNERS: "17" }, 'MEETBOT_WARM_RUNNERS: must be a whole number from 0 to 16 (got "17")'],
    [
      { MEETBOT_ZOOM_WEB_BASE_URL: "ftp://zoom.local" },
      'MEETBOT_ZOOM_WEB_BASE_URL: must be an http(s) URL (got "ftp://zoom.local")',
    ],
    [
      { MEETBOT_LOG_LEVEL: "loud" },
      'MEETBOT_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ],
  ];
  for (const [env, line] of cases) {
    it(`${Object.keys(env)[0]}: exits 1 with one line naming it, no stack trace`, async () => {
      const { code, stderr } = await meetbotServe(env);
      expect(code).toBe(1);
      expect(stderr).toBe(`meetbot serve: ${line}\n`);
    });
  }

  it("never echoes a secret it refuses", async () => {
    const secret = "too-short-x";
    const { code, stderr } = await meetbotServe({ MEETBOT_JWT_SECRET: secret });
    expect(code).toBe(1);
    expect(stderr).toBe("meetbot serve: MEETBOT_JWT_SECRET: must be at least 16 characters\n");

    const key = `k1:${randomBytes(16).toString("base64")}`;
    const keyed = await meetbotServe({ MEETBOT_SECRET_KEY: key });
    expect(keyed.code).toBe(1);
    expect(keyed.stderr).toBe(
      'meetbot serve: MEETBOT_SECRET_KEY: key "k1" must be 32 bytes in base64 (openssl rand -base64 32), got 16 bytes\n',
    );

    const teams = await meetbotServe({
      MEETBOT_TEAMS_BOT_TENANT_ID: "contoso.onmicrosoft.com",
      MEETBOT_TEAMS_BOT_CLIENT_SECRET: "teams-client-secret-value",
    });
    expect(teams.code).toBe(1);
    expect(teams.stderr).toBe(
      "meetbot serve: MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID and MEETBOT_TEAMS_BOT_CLIENT_SECRET: set all three, or none (missing MEETBOT_TEAMS_BOT_CLIENT_ID)\n",
    );

    const url = "mysql://meetbot:hunter2-password@db/meetbot";
    const database = await meetbotServe({ DATABASE_URL: url });
    expect(database.code).toBe(1);
    expect(database.stderr).toBe(
      "meetbot serve: DATABASE_URL must start with postgres:// or postgresql:// (unset it for SQLite)\n",
    );
  });

  it("names every bad variable, one line each", async () => {
    const { code, stderr } = await meetbotServe({
      MEETBOT_LAUNCH_TIMEOUT_MS: "2m",
      MEETBOT_RUNNER_COMMAND: "node run",
    });
    expect(code).toBe(1);
    expect(stderr.split("\n")).toEqual([
      'meetbot serve: MEETBOT_LAUNCH_TIMEOUT_MS: must be a whole number of milliseconds, 1 or more (got "2m")',
      expect.stringMatching(/^meetbot serve: MEETBOT_RUNNER_COMMAND: must be a JSON array of strings/),
      "",
    ]);
  });
});

describe("the server's configuration", () => {
  const resolve = (env: NodeJS.ProcessEnv, options: { watchdog?: { intervalMs: number } } = {}) =>
    resolveConfig({ dataDir: "/tmp/meetbot-config-test", env, ...options });

  it("has a default for every variable: an empty environment is a working one", () => {
    const config = resolve({});
    expect(config.watchdog).toEqual({
      intervalMs: 5_000,
      launchTimeoutMs: 120_000,
      heartbeatTimeoutMultiple: 6,
    });
    expect(config.webhooks).toEqual({
      worker: true,
      concurrency: 16,
      pollIntervalMs: 1000,
      retentionDays: 30,
    });
    expect(config.database).toEqual({ kind: "sqlite", file: "/tmp/meetbot-config-test/meetbot.sqlite" });
    expect(config.jwtSecret).toBeUndefined();
    expect(config.runner).toEqual({
      settings: {
        browser: { executablePath: "/usr/bin/chromium" },
        platformUrls: {},
        logLevel: "info",
        finalDeliveryTimeout: 120_000,
        recordingSegmentInterval: 5_000,
      },
      command: undefined,
      warmRunners: 0,
      env: {},
    });
  });

  it("reads the runner settings every BotConfig carries; an empty value is the default", () => {
    const settings = resolve({
      MEETBOT_CHROMIUM_PATH: "/opt/chromium/chrome",
      MEETBOT_ZOOM_WEB_BASE_URL: "http://127.0.0.1:9000/",
      MEETBOT_TEAMS_WEB_BASE_URL: "https://teams.proxy.example/teams",
      MEETBOT_LOG_LEVEL: "",
      MEETBOT_FINAL_DELIVERY_TIMEOUT_MS: "0",
      MEETBOT_RECORDING_SEGMENT_INTERVAL_MS: "0",
    }).runner.settings;
    expect(settings).toEqual({
      browser: { executablePath: "/opt/chromium/chrome" },
      platformUrls: { zoomWeb: "http://127.0.0.1:9000", teamsWeb: "https://teams.proxy.example/teams" },
      logLevel: "info",
      finalDeliveryTimeout: 0,
      recordingSegmentInterval: 0,
    });
  });

  it("speaks with flite unless MEETBOT_TTS_ENGINE=openai, whose settings come together", () => {
    expect(resolve({}).speech).toEqual({ engine: "flite" });
    const key = "sk-never-echoed-4e1d";
    expect(resolve({ MEETBOT_TTS_ENGINE: "openai", MEETBOT_TTS_API_KEY: key }).speech).toEqual({
      engine: "openai",
      openai: { baseUrl: "https://api.openai.com/v1", apiKey: key, model: "gpt-4o-mini-tts" },
    });
    expect(
      resolve({
        MEETBOT_TTS_ENGINE: "openai",
        MEETBOT_TTS_BASE_URL: "http://tts.internal:8000/v1/",
        MEETBOT_TTS_MODEL: "kokoro",
      }).speech,
    ).toEqual({
      engine: "openai",
      openai: { baseUrl: "http://tts.internal:8000/v1", apiKey: undefined, model: "kokoro" },
    });
    const refusal = (env: NodeJS.ProcessEnv) => {
      try {
        resolve(env);
      } catch (err) {
        expect(err).toBeInstanceOf(StartupError);
        return (err as Error).message;
      }
      throw new Error("not refused");
    };
    expect(refusal({ MEETBOT_TTS_ENGINE: "openai" })).toBe(
      "MEETBOT_TTS_ENGINE=openai: set MEETBOT_TTS_API_KEY (OpenAI) or MEETBOT_TTS_BASE_URL (an OpenAI-compatible server)",
    );
    expect(refusal({ MEETBOT_TTS_API_KEY: key })).toBe(
      "MEETBOT_TTS_API_KEY set but MEETBOT_TTS_ENGINE is flite: set MEETBOT_TTS_ENGINE=openai to use it",
    );
    expect(refusal({ MEETBOT_TTS_ENGINE: "espeak" })).toBe(
      'MEETBOT_TTS_ENGINE: must be one of flite, openai (got "espeak")',
    );
    expect(refusal({ MEETBOT_TTS_ENGINE: "openai", MEETBOT_TTS_BASE_URL: "ftp://tts" })).toBe(
      'MEETBOT_TTS_BASE_URL: must be an http(s) URL (got "ftp://tts")',
    );
  });

  it("lets an option win over the environment", () => {
    expect(resolve({ MEETBOT_WATCHDOG_INTERVAL_MS: "700" }).watchdog.intervalMs).toBe(700);
    expect(
      resolve({ MEETBOT_WATCHDOG_INTERVAL_MS: "700" }, { watchdog: { intervalMs: 50 } }).watchdog.intervalMs,
    ).toBe(50);
  });

  it("refuses a timer longer than Node can wait (it would fire at once)", () => {
    expect(() => resolve({ MEETBOT_WATCHDOG_INTERVAL_MS: "2147483648" })).toThrow(StartupError);
    expect(resolve({ MEETBOT_WATCHDOG_INTERVAL_MS: "2147483647" }).watchdog.intervalMs).toBe(2_147_483_647);
  });

  it("is the README's Environment table, variable for variable", () => {
    const readme = readFileSync("README.md", "utf8");
    const table = readme.slice(readme.indexOf("Environment:"), readme.indexOf("### PostgreSQL"));
    const documented = new Set<string>();
    for (const row of table.split("\n").filter((line) => line.startsWith("| `"))) {
      const firstCell = row.split("|")[1] ?? "";
      for (const [, name] of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) documented.add(name as string);
    }
    expect([...documented].sort()).toEqual(Object.keys(ServerEnv.shape).sort());
  });
});
