import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { join } from "node:path";
import { chromium } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BotConfig, StorageState } from "../../src/core/index.js";
import { type MediaEnvironment, startMediaEnvironment } from "../../src/runner/media-env.js";
import { findRepoRoot } from "../../src/server/launcher/local-process.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * `meetbot login` end to end: the compiled CLI opens a real Chromium on a virtual display (the
 * runner's own Xvfb) at the mock platform's sign-in page; the test plays the person, filling the
 * mock's sign-in form in that very window through the DevTools port the CLI was asked to open
 * (`--remote-debugging-port`). The session it saves becomes a bot account on a real server, which
 * a bot then joins a guests-refused meeting with; or a 0600 file. And its failures, one line each.
 */

const CLI = join(findRepoRoot(), "dist", "src", "cli.js");
let display: MediaEnvironment;
let stack: Awaited<ReturnType<typeof startStack>>;
let apiKey: string;
/** The login each bot was launched with, by bot id. */
const launched = new Map<number, BotConfig["login"]>();

beforeAll(async () => {
  display = await startMediaEnvironment({ width: 1024, height: 768 });
  stack = await startStack({
    env: { MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
    editConfig: (config) => {
      launched.set(config.botId, config.login);
      return config;
    },
  });
  apiKey = (await stack.api.createApiKey("login-cli")).key;
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await display?.close();
});

async function mock(method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.mock.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function login(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [CLI, "login", ...args], {
    env: { ...process.env, DISPLAY: display.display, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/** The window the CLI opened, through its DevTools port, once the CLI says it is waiting. */
async function windowOf(run: Run, port: number, path: string) {
  await eventually(
    async () => (run.stdout().includes("Waiting up to") ? true : undefined),
    "the CLI to wait",
    30_000,
  );
  const browser = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
  const page = await eventually(
    async () =>
      browser
        .contexts()
        .flatMap((c) => c.pages())
        .find((p) => new URL(p.url()).pathname === path),
    `the sign-in page ${path} in the CLI's window`,
  );
  return { browser, page };
}

/** Types the account into the mock's sign-in form, as a person would. */
async function signIn(run: Run, port: number, path: string, identifier: string, submit: string) {
  const { browser, page } = await windowOf(run, port, path);
  await page.locator('input[type="email"]').fill(identifier);
  await page.getByRole("button", { name: submit }).click();
  const code = await run.exit;
  await browser.close().catch(() => {});
  return code;
}

const secretsOf = (session: StorageState) => session.cookies.map((c) => c.value).filter((v) => v.length >= 8);

describe("meetbot login", { timeout: 120_000 }, () => {
  it("google → a server: the person signs in on the sign-in page, the account is stored with the account's cookies (a bot then gets into a guests-refused meeting with it), the session is never printed", async () => {
    await mock("PUT", "/control/accounts/google/cli-google", { name: "Cli Google" });
    const port = await freePort();
    const run = login([
      "google",
      "--name",
      "Recruiting bot",
      "--group",
      "cli",
      "--server",
      stack.api.baseUrl,
      "--api-key",
      apiKey,
      "--sign-in-url",
      `${stack.mock.url}/accounts/signin`,
      "--remote-debugging-port",
      String(port),
    ]);
    expect(await signIn(run, port, "/accounts/signin", "cli-google@example.com", "Next"), run.stderr()).toBe(
      0,
    );
    expect(run.stdout()).toContain("Sign in to Google in the browser window");
    expect(run.stdout()).toMatch(/Saved bot account \d+ "Recruiting bot" \(google, group "cli"\)/);
    const accounts = (await stack.api.botAccounts()).botAccounts;
    const account = accounts.find((a) => a.name === "Recruiting bot");
    expect(account).toMatchObject({ platform: "google", group: "cli", status: "unchecked" });

    // A bot with the account gets into a meeting that refuses guests, as the account.
    const code = "cli-logi-nnn";
    await mock("PUT", `/control/meetings/google/${code}`, {
      admit: "open",
      participants: 1,
      anonymous: "refused",
      endAfterMs: 2000,
    });
    const bot = await stack.api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${code}` },
      botDisplayName: "Meetbot",
      login: { mode: "always", accountId: account?.id },
    });
    await stack.api.deploy(bot.id);
    const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 });
    expect(final.status, JSON.stringify(final.deploymentError)).toBe("DONE");
    const state = (await mock("GET", `/control/meetings/google/${code}`)) as { attendees: unknown[] };
    expect(state.attendees).toMatchObject([{ name: "Cli Google", account: "cli-google" }]);
    const session = launched.get(bot.id)?.session as StorageState;
    expect(session.cookies.map((c) => c.name)).toContain("SID");
    for (const secret of secretsOf(session)) expect(run.stdout() + run.stderr()).not.toContain(secret);
  });

  it("teams → --out: the file (mode 0600) holds the session cookie and the web client's account keys; nothing secret printed", async () => {
    await mock("PUT", "/control/accounts/teams/cli-teams", { name: "Cli Teams" });
    const port = await freePort();
    const file = join(stack.dataDir, "teams-session.json");
    const run = login([
      "teams",
      "--out",
      file,
      "--sign-in-url",
      `${stack.mock.url}/login`,
      "--remote-debugging-port",
      String(port),
    ]);
    expect(await signIn(run, port, "/login", "cli-teams", "Next"), run.stderr()).toBe(0);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const session = JSON.parse(await readFile(file, "utf8")) as StorageState;
    expect(session.cookies.find((c) => c.name === "ESTSAUTH")?.value).toMatch(/^teams\./);
    expect(session.origins.flatMap((o) => o.localStorage)).toContainEqual({
      name: "msal.account.keys",
      value: "cli-teams",
    });
    expect(run.stdout()).toContain(`Saved the teams session to ${file}`);
    for (const secret of secretsOf(session)) expect(run.stdout() + run.stderr()).not.toContain(secret);
  });

  it("a bad API key: one line naming the 401, exit 1, before any window opens", async () => {
    const run = login(["zoom", "--name", "x", "--server", stack.api.baseUrl, "--api-key", "mbk_wrong"]);
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toBe(
      `meetbot login: the server at ${stack.api.baseUrl} refused the API key (401)\n`,
    );
    expect(run.stdout()).toBe("");
  });

  it("a server that is not there: one line, exit 1", async () => {
    const server = `http://127.0.0.1:${await freePort()}`;
    const run = login(["zoom", "--name", "x", "--server", server, "--api-key", apiKey]);
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toMatch(
      new RegExp(`^meetbot login: cannot reach the server at ${server} \\(ECONNREFUSED\\)\\n$`),
    );
  });

  it("the window closed before signing in: one line, exit 1, no file", async () => {
    const port = await freePort();
    const file = join(stack.dataDir, "never.json");
    const run = login([
      "zoom",
      "--out",
      file,
      "--sign-in-url",
      `${stack.mock.url}/signin`,
      "--remote-debugging-port",
      String(port),
    ]);
    const { browser, page } = await windowOf(run, port, "/signin");
    await page.close();
    expect(await run.exit).toBe(1);
    await browser.close().catch(() => {});
    expect(run.stderr()).toBe(
      "meetbot login: the browser window was closed before the sign-in completed; nothing saved\n",
    );
    await expect(stat(file)).rejects.toThrow();
  });

  it("Ctrl-C while waiting: the window closes, one line, exit 1, no file", async () => {
    const file = join(stack.dataDir, "interrupted.json");
    const run = login(["zoom", "--out", file, "--sign-in-url", `${stack.mock.url}/signin`]);
    await eventually(
      async () => (run.stdout().includes("Waiting up to") ? true : undefined),
      "the CLI to wait",
    );
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toBe("meetbot login: interrupted; nothing saved\n");
    await expect(stat(file)).rejects.toThrow();
  });

  it("nobody signs in: a timeout line, exit 1", async () => {
    const file = join(stack.dataDir, "late.json");
    const run = login(["zoom", "--out", file, "--sign-in-url", `${stack.mock.url}/signin`, "--timeout", "2"]);
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toBe(
      "meetbot login: no sign-in after 2 s (no zm_aid/zm_haid cookie on 127.0.0.1); nothing saved\n",
    );
    await expect(stat(file)).rejects.toThrow();
  });

  it("leaves no browser profile (with the session's cookies in it) behind, whatever the ending", async () => {
    expect((await readdir(tmpdir())).filter((name) => name.startsWith("meetbot-login-"))).toEqual([]);
  });

  it("no display, or neither --server nor --out: one line, exit 2", async () => {
    const noDisplay = login(["google", "--out", "x.json"], { DISPLAY: "" });
    expect(await noDisplay.exit).toBe(2);
    expect(noDisplay.stderr()).toMatch(/^meetbot login: needs a display .*DISPLAY is not set.*\n$/);
    const neither = login(["google", "--name", "x"]);
    expect(await neither.exit).toBe(2);
    expect(neither.stderr()).toBe("meetbot login: give either --server URL --api-key KEY or --out FILE\n");
  });
});
