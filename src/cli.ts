import { resolve } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";

const USAGE = `meetbot — self-hostable meeting bots

Usage:
  meetbot serve [--port 8080] [--host 127.0.0.1] [--data-dir ./.data] [--public-url URL] [--notes-port P]
      Start the control plane (the /v1 API). Data in SQLite under --data-dir, or in PostgreSQL
      when DATABASE_URL=postgres://user:password@host:5432/db is set. --notes-port (or
      MEETBOT_NOTES_PORT) also serves the meeting-notes interface on that port.
  meetbot run [--config FILE | --config -] [--headed]
      Run one bot. The config comes from --config FILE, from stdin with --config -, or from the
      BOT_CONFIG environment variable.
      --headed shows the browser on your own $DISPLAY instead of a private virtual display.
  meetbot run --warm [--width 1280 --height 720] [--browser /usr/bin/chromium] [--log-level info]
      Prepare display, sound and browser first, then read the bot's config as one JSON line on
      stdin (what the server's warm pool, MEETBOT_WARM_RUNNERS, uses to join faster).
  meetbot login <google|zoom|teams> --name LABEL [--group G] (--server URL --api-key KEY | --out FILE)
        [--sign-in-url URL] [--timeout SECONDS] [--browser /usr/bin/chromium] [--remote-debugging-port P]
      Sign a bot account in once: a Chromium window opens on your $DISPLAY at the platform's
      sign-in page; once you have signed in, the session becomes a bot account on the server
      (POST /v1/bot-accounts with the API key; MEETBOT_API_KEY works too) or the file (mode 0600).
      --sign-in-url replaces the platform's page (a mock's); --timeout defaults to 600.
  meetbot mock [--port 8090] [--host 127.0.0.1]
      Serve the mock meeting pages (Google Meet at /meet/<code>) and their control API.
  meetbot demo
      Start a mock meeting and a server, send a bot, and show its whole life.
  meetbot users set-plan <email> <plan> [--data-dir ./.data]
      Give a user the notes interface's plan: free (100 requests per hour), pro (1000),
      enterprise (unlimited), or default (back to MEETBOT_DEFAULT_PLAN). Same database as serve.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return serve(rest);
    case "run":
      return run(rest);
    case "mock":
      return mock(rest);
    case "login":
      return login(rest);
    case "users":
      return users(rest);
    case "demo": {
      const { runDemo } = await import("./demo.js");
      return runDemo();
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`meetbot: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

/** Parsed flags; every flag we declare is a string or a boolean. */
type Flags = Record<string, string | boolean | undefined>;

function parse(args: string[], options: ParseArgsConfig["options"]): Flags {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values as Flags;
  } catch (error) {
    process.stderr.write(`meetbot: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

function port(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    process.stderr.write(`meetbot: --port must be an integer 0-65535, got "${value}"\n`);
    process.exit(2);
  }
  return n;
}

function dimension(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 240 || n > 3840) {
    process.stderr.write(`meetbot: --${name} must be an integer 240-3840, got "${value}"\n`);
    process.exit(2);
  }
  return n;
}

async function run(args: string[]): Promise<number> {
  const values = parse(args, {
    config: { type: "string" },
    headed: { type: "boolean" },
    warm: { type: "boolean" },
    width: { type: "string" },
    height: { type: "string" },
    browser: { type: "string" },
    "log-level": { type: "string" },
  });
  let headedDisplay: string | undefined;
  if (values.headed) {
    headedDisplay = process.env.DISPLAY;
    if (!headedDisplay) {
      process.stderr.write("meetbot run: --headed needs a display, but DISPLAY is not set\n");
      return 2;
    }
  }
  if (values.warm) {
    // The settings a warm runner's stage starts with, before its config arrives (same checks).
    const { RunnerSettings } = await import("./core/index.js");
    const settings = RunnerSettings.safeParse({
      ...(values.browser !== undefined ? { browser: { executablePath: values.browser } } : {}),
      ...(values["log-level"] !== undefined ? { logLevel: values["log-level"] } : {}),
    });
    if (!settings.success) {
      const [issue] = settings.error.issues;
      process.stderr.write(`meetbot run --warm: ${issue?.path.join(".")}: ${issue?.message}\n`);
      return 2;
    }
    const { runWarm } = await import("./runner/main.js");
    return runWarm({
      width: dimension(values.width, 1280, "width"),
      height: dimension(values.height, 720, "height"),
      executablePath: settings.data.browser.executablePath,
      logLevel: settings.data.logLevel,
      ...(headedDisplay ? { headedDisplay } : {}),
    });
  }
  const { loadBotConfig, ConfigError } = await import("./runner/config.js");
  let config: ReturnType<typeof loadBotConfig>;
  try {
    config = loadBotConfig({ ...(typeof values.config === "string" ? { file: values.config } : {}) });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`meetbot run: ${error.message}\n`);
    return 2;
  }
  const { runBot } = await import("./runner/main.js");
  return runBot(config, { ...(headedDisplay ? { headedDisplay } : {}) });
}

async function login(args: string[]): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`meetbot login: ${message}\n`);
    return 2;
  };
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: "string" },
        group: { type: "string" },
        server: { type: "string" },
        "api-key": { type: "string" },
        out: { type: "string" },
        "sign-in-url": { type: "string" },
        timeout: { type: "string" },
        browser: { type: "string" },
        "remote-debugging-port": { type: "string" },
      },
    });
  } catch (error) {
    return fail((error as Error).message);
  }
  const { values, positionals } = parsed;
  const { PLATFORMS } = await import("./core/index.js");
  const [platform, ...extra] = positionals;
  if (!platform || extra.length > 0 || !(PLATFORMS as readonly string[]).includes(platform)) {
    return fail(`expected one platform: ${PLATFORMS.join(", ")}`);
  }
  const name = typeof values.name === "string" ? values.name.trim() : "";
  const server = values.server as string | undefined;
  if (!name && server !== undefined)
    return fail("--name LABEL is required (yours, to tell the bot accounts apart)");
  const apiKey = (values["api-key"] as string | undefined) ?? process.env.MEETBOT_API_KEY;
  const out = values.out as string | undefined;
  if ((server === undefined) === (out === undefined))
    return fail("give either --server URL --api-key KEY or --out FILE");
  if (server !== undefined) {
    if (!apiKey) return fail("--server needs --api-key KEY (or MEETBOT_API_KEY)");
    if (!/^https?:\/\//.test(server) || !URL.canParse(server))
      return fail(`--server must be an http(s) URL, got "${server}"`);
  }
  const signInUrl = values["sign-in-url"] as string | undefined;
  if (signInUrl !== undefined && (!/^https?:\/\//.test(signInUrl) || !URL.canParse(signInUrl))) {
    return fail(`--sign-in-url must be an http(s) URL, got "${signInUrl}"`);
  }
  const timeout = Number(values.timeout ?? 600);
  if (!Number.isFinite(timeout) || timeout <= 0 || timeout > 86_400) {
    return fail(`--timeout must be a number of seconds (0-86400], got "${values.timeout}"`);
  }
  const debugPort = values["remote-debugging-port"];
  const debugPortNumber = debugPort === undefined ? undefined : Number(debugPort);
  if (
    debugPortNumber !== undefined &&
    !(Number.isInteger(debugPortNumber) && debugPortNumber > 0 && debugPortNumber < 65536)
  ) {
    return fail(`--remote-debugging-port must be an integer 1-65535, got "${debugPort}"`);
  }
  const display = process.env.DISPLAY;
  if (!display) {
    return fail(
      "needs a display to show the browser on, but DISPLAY is not set (run it on a desktop, or over ssh -X or VNC)",
    );
  }
  const { RunnerSettings } = await import("./core/index.js");
  const settings = RunnerSettings.safeParse(
    values.browser ? { browser: { executablePath: values.browser } } : {},
  );
  if (!settings.success) return fail(`--browser: ${settings.error.issues[0]?.message}`);
  const { runLogin } = await import("./login.js");
  return runLogin(
    {
      platform: platform as (typeof PLATFORMS)[number],
      name,
      ...(values.group ? { group: values.group as string } : {}),
      ...(server !== undefined ? { server, apiKey: apiKey as string } : {}),
      ...(out !== undefined ? { out: resolve(out) } : {}),
      ...(signInUrl ? { signInUrl } : {}),
      timeoutMs: timeout * 1000,
      executablePath: settings.data.browser.executablePath,
      display,
      ...(debugPortNumber !== undefined ? { remoteDebuggingPort: debugPortNumber } : {}),
    },
    {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    },
  );
}

async function serve(args: string[]): Promise<number> {
  const values = parse(args, {
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    "public-url": { type: "string" },
    "notes-port": { type: "string" },
  });
  const { startServer } = await import("./server/main.js");
  const { StartupError } = await import("./server/startup-error.js");
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      port: port(values.port, 8080),
      host: (values.host as string | undefined) ?? "127.0.0.1",
      dataDir: resolve((values["data-dir"] as string | undefined) ?? ".data"),
      ...(values["public-url"] ? { publicBaseUrl: values["public-url"] as string } : {}),
      ...(values["notes-port"] !== undefined ? { notes: { port: port(values["notes-port"], 8081) } } : {}),
    });
  } catch (error) {
    // The operator's to fix (a bad variable, database down): the reason, not a stack trace.
    if (!(error instanceof StartupError)) throw error;
    for (const line of error.message.split("\n")) process.stderr.write(`meetbot serve: ${line}\n`);
    return 1;
  }
  process.stdout.write(`meetbot control plane listening on ${server.url}\n`);
  if (server.notesUrl) process.stdout.write(`meeting-notes interface listening on ${server.notesUrl}\n`);
  await untilSignal();
  await server.close();
  return 0;
}

async function users(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (command !== "set-plan") {
    process.stderr.write(`meetbot users: unknown command "${command ?? ""}" (set-plan)\n\n${USAGE}`);
    return 2;
  }
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options: { "data-dir": { type: "string" } }, allowPositionals: true });
  } catch (error) {
    process.stderr.write(`meetbot users set-plan: ${(error as Error).message}\n`);
    return 2;
  }
  const [email, plan, ...extra] = parsed.positionals;
  if (email === undefined || plan === undefined || extra.length > 0) {
    process.stderr.write("meetbot users set-plan: expected <email> <plan>\n");
    return 2;
  }
  const { PLANS, isPlan } = await import("./notes/plans.js");
  if (plan !== "default" && !isPlan(plan)) {
    process.stderr.write(
      `meetbot users set-plan: unknown plan "${plan}" (one of ${PLANS.join(", ")}, or default)\n`,
    );
    return 2;
  }
  const { resolveConfig } = await import("./server/config.js");
  const { openDatabase } = await import("./server/db/database.js");
  const { StartupError } = await import("./server/startup-error.js");
  const { setUserPlan } = await import("./notes/plan-limits.js");
  let change: Awaited<ReturnType<typeof setUserPlan>>;
  let defaultPlan: string;
  try {
    const config = resolveConfig({
      dataDir: resolve((parsed.values["data-dir"] as string | undefined) ?? ".data"),
    });
    defaultPlan = config.notes.defaultPlan;
    const db = await openDatabase(config.database);
    try {
      change = await setUserPlan(db.kysely, email, plan === "default" ? null : plan);
    } finally {
      await db.close();
    }
  } catch (error) {
    if (!(error instanceof StartupError)) throw error;
    for (const line of error.message.split("\n")) process.stderr.write(`meetbot users set-plan: ${line}\n`);
    return 1;
  }
  if (!change) {
    process.stderr.write(`meetbot users set-plan: no user has the e-mail "${email}"\n`);
    return 1;
  }
  const shown = (stored: string | null) => stored ?? `${defaultPlan} (the default)`;
  process.stdout.write(`${change.email}: plan ${shown(change.before)} -> ${shown(change.after)}\n`);
  return 0;
}

async function mock(args: string[]): Promise<number> {
  const values = parse(args, { port: { type: "string" }, host: { type: "string" } });
  const { startMockHost } = await import("../fixtures/host/server.js");
  const host = await startMockHost({
    port: port(values.port, 8090),
    host: (values.host as string | undefined) ?? "127.0.0.1",
  });
  process.stdout.write(`mock meeting host on ${host.url} (try ${host.url}/meet/abc-defg-hij)\n`);
  await untilSignal();
  await host.close();
  return 0;
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

// Everything meetbot writes is its own user's only: the database, recordings, the runner's work
// files (spool, recording, artifacts) and what Chromium, ffmpeg and PulseAudio write for it, since
// every process it starts inherits the mask (files 0600, directories 0700).
process.umask(0o077);

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`meetbot: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
