import path from "node:path";
import { z } from "zod";
import {
  allowlistedEnv,
  DEFAULT_CHROMIUM_PATH,
  DEFAULT_FINAL_DELIVERY_TIMEOUT_MS,
  RUNNER_LOG_LEVELS,
  type RunnerSettings,
} from "../core/index.js";
import {
  OAUTH_PROVIDERS,
  type OAuthConfig,
  type OAuthProviderName,
  oauthConfigFromEnv,
} from "./auth/oauth-config.js";
import type { DatabaseOptions } from "./db/database.js";
import type { Launcher } from "./launcher/launcher.js";
import { StartupError } from "./startup-error.js";

/**
 * What `meetbot serve` (or a test, or the demo) asks for. Every field left out comes from the
 * environment (ServerEnv below), then from its default.
 */
export interface StartServerOptions {
  /** Where settings not given here come from; default process.env (the only reader of it). */
  env?: NodeJS.ProcessEnv;
  /** 0 = a free port; default 8080. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The SQLite file, the server secret, recordings and per-bot runner logs live here. */
  dataDir: string;
  /**
   * postgres:// or postgresql:// selects PostgreSQL; "" means SQLite in dataDir.
   * Default: env DATABASE_URL (unset = SQLite).
   */
  databaseUrl?: string;
  /** How runners and download links reach this server; default http://<host>:<port>. */
  publicBaseUrl?: string;
  /** Default: LocalProcessLauncher. */
  launcher?: Launcher;
  /** Meeting hosts accepted besides the real platforms' ("host" or "host:port"); default from env. */
  allowedMeetingHosts?: string[];
  /** The server's pino level; default "info". */
  logLevel?: string;
  /** When the server gives up on silent bots; defaults from env (see WatchdogConfig). */
  watchdog?: Partial<WatchdogConfig>;
  /** Requests allowed per credential; defaults from env (see RateLimitConfig). */
  rateLimit?: Partial<RateLimitConfig>;
  /** OAuth sign-in providers; default from env (see oauthConfigFromEnv). */
  oauth?: OAuthConfig;
  /** Outbound webhook requests; defaults from env (see OutboundConfig). */
  outbound?: Partial<OutboundConfig>;
  /** The webhook delivery worker; defaults from env (see WebhooksConfig). */
  webhooks?: Partial<WebhooksConfig>;
}

/** The outbox worker that sends webhook and callbackUrl deliveries (src/server/webhooks/worker.ts). */
export interface WebhooksConfig {
  /**
   * Run a delivery worker in this process. Env MEETBOT_WEBHOOK_WORKER, default 1; 0 makes an
   * API-only process (another process's worker sends the deliveries it queues).
   */
  worker: boolean;
  /** Deliveries in flight at once per process, each to a different endpoint. Env MEETBOT_WEBHOOK_CONCURRENCY, default 16. */
  concurrency: number;
  /**
   * How often the worker looks for due deliveries besides being woken by this process's own
   * events (retries coming due, other processes' rows). Env MEETBOT_WEBHOOK_POLL_INTERVAL_MS, default 1000.
   */
  pollIntervalMs: number;
  /**
   * Finished deliveries (succeeded or failed) and their attempts are deleted this many days after
   * their last attempt. Env MEETBOT_WEBHOOK_RETENTION_DAYS, default 30.
   */
  retentionDays: number;
}

/** How webhook and callback deliveries reach user-chosen URLs (src/server/webhooks/outbound.ts). */
export interface OutboundConfig {
  /**
   * Allow loopback, private (RFC 1918, fc00::/7) and shared (100.64.0.0/10) targets: local
   * development, the demo and tests. Env MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1, default off.
   */
  allowPrivateTargets: boolean;
  /** Env MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS, default 10000 (spec). */
  connectTimeoutMs: number;
  /** Env MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS, default 30000 (spec). */
  responseTimeoutMs: number;
}

/** Fixed clock windows, counted per credential in this server process. 0 = no limit for that window. */
export interface RateLimitConfig {
  /** Env MEETBOT_RATE_LIMIT_PER_MINUTE, default 60. */
  perMinute: number;
  /** Env MEETBOT_RATE_LIMIT_PER_HOUR, default 1000. */
  perHour: number;
}

export interface WatchdogConfig {
  /** How often running bots are checked. Env MEETBOT_WATCHDOG_INTERVAL_MS, default 5000. */
  intervalMs: number;
  /** A bot still DEPLOYING this long is FATAL LAUNCH_TIMEOUT. Env MEETBOT_LAUNCH_TIMEOUT_MS, default 120000. */
  launchTimeoutMs: number;
  /**
   * A running bot silent for this many heartbeat intervals is FATAL HEARTBEAT_TIMEOUT.
   * Env MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE, default 6.
   */
  heartbeatTimeoutMultiple: number;
}

/** Runners: what the operator sets for every bot, and how the local launcher starts them. */
export interface RunnerConfig {
  /** Copied into every BotConfig (browser, platform URLs, log level, final delivery timeout). */
  settings: RunnerSettings;
  /** argv of a runner (env MEETBOT_RUNNER_COMMAND, a JSON array); undefined: `node bin/meetbot.js run`. */
  command: [string, ...string[]] | undefined;
  /** Runners kept started and waiting for a bot. Env MEETBOT_WARM_RUNNERS, default 0. */
  warmRunners: number;
  /** A runner's whole environment besides its config: the allowlisted variables of the server's. */
  env: Record<string, string>;
}

export interface ServerConfig {
  host: string;
  port: number;
  dataDir: string;
  /** Undefined until known when it defaults to the listening address (port 0). */
  publicBaseUrl: string | undefined;
  allowedMeetingHosts: string[];
  logLevel: string;
  watchdog: WatchdogConfig;
  rateLimit: RateLimitConfig;
  oauth: OAuthConfig;
  outbound: OutboundConfig;
  webhooks: WebhooksConfig;
  paths: { database: string; recordings: string; bots: string };
  database: DatabaseOptions;
  /** Env MEETBOT_JWT_SECRET; undefined: the secret generated once into the data dir. */
  jwtSecret: string | undefined;
  runner: RunnerConfig;
}

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";

/** The longest delay a Node timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A variable read as text: unset and empty are the same (the default applies), anything else must
 * parse or startup stops with `<NAME>: <message>`.
 */
function fromText<T>(fallback: T, parse: (raw: string) => T | undefined, expected: string) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined || raw.trim() === "") return fallback;
      const value = parse(raw.trim());
      if (value === undefined) {
        ctx.addIssue({ code: "custom", message: `must be ${expected} (got "${raw}")` });
        return z.NEVER;
      }
      return value;
    });
}

function wholeNumber(raw: string, min: number, max: number): number | undefined {
  if (!/^\d+$/.test(raw)) return undefined;
  const n = Number(raw);
  return n >= min && n <= max ? n : undefined;
}

const milliseconds = (fallback: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, 1, MAX_TIMER_MS), "a whole number of milliseconds, 1 or more");
const wholeFrom = (fallback: number, min: number, max: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, min, max), `a whole number from ${min} to ${max}`);
const positive = (fallback: number) =>
  fromText(
    fallback,
    (raw) => (/^\d*\.?\d+$/.test(raw) && Number(raw) > 0 ? Number(raw) : undefined),
    "a positive number",
  );
/** A request count per window; 0 switches that window's limit off. */
const perWindow = (fallback: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, 0, 1_000_000_000), "a whole number (0 turns the limit off)");
const flag = (fallback: boolean) =>
  fromText(
    fallback,
    (raw) =>
      (({ "1": true, true: true, "0": false, false: false }) as Record<string, boolean>)[raw.toLowerCase()],
    "1 or 0",
  );
const httpUrl = fromText<string | undefined>(
  undefined,
  (raw) => (/^https?:$/.test(URL.parse(raw)?.protocol ?? "") ? raw.replace(/\/+$/, "") : undefined),
  "an http(s) URL",
);
const optionalText = z
  .string()
  .optional()
  .transform((raw) => (raw?.trim() ? raw : undefined));

const RunnerCommand = z.tuple([z.string().min(1)], z.string());

type OAuthVariable =
  | `MEETBOT_OAUTH_${Uppercase<OAuthProviderName>}_${"CLIENT_ID" | "CLIENT_SECRET" | "ISSUER"}`
  | "MEETBOT_OAUTH_REDIRECT_URL";
const OAUTH_VARIABLES: OAuthVariable[] = [
  ...OAUTH_PROVIDERS.flatMap((name) =>
    (["CLIENT_ID", "CLIENT_SECRET", "ISSUER"] as const).map(
      (part) => `MEETBOT_OAUTH_${name.toUpperCase() as Uppercase<OAuthProviderName>}_${part}` as const,
    ),
  ),
  "MEETBOT_OAUTH_REDIRECT_URL",
];
/** Read as text here; oauthConfigFromEnv checks them together (both client halves, issuer URLs). */
const oauthVariables = Object.fromEntries(OAUTH_VARIABLES.map((name) => [name, optionalText])) as Record<
  OAuthVariable,
  typeof optionalText
>;

/**
 * Every environment variable the server reads, with its default; the README's "Environment"
 * table lists the same. Besides these, only the runner allowlist (RUNNER_ENV_ALLOWLIST: PATH,
 * HOME, locale, TMPDIR) is read, to be passed on to runners unchanged.
 */
export const ServerEnv = z.object({
  /** Checked in resolveDatabase (it may come from an option too), never echoed: it holds a password. */
  DATABASE_URL: z.string().default(""),
  MEETBOT_DATABASE_POOL_SIZE: wholeFrom(10, 1, 1000),
  /** The server's one secret, never echoed in an error. */
  MEETBOT_JWT_SECRET: optionalText.refine((value) => value === undefined || value.length >= 16, {
    message: "must be at least 16 characters",
  }),
  MEETBOT_ALLOWED_MEETING_HOSTS: z
    .string()
    .optional()
    .transform((raw) => parseHostList(raw ?? "")),
  MEETBOT_RATE_LIMIT_PER_MINUTE: perWindow(60),
  MEETBOT_RATE_LIMIT_PER_HOUR: perWindow(1000),
  MEETBOT_WATCHDOG_INTERVAL_MS: milliseconds(5_000),
  MEETBOT_LAUNCH_TIMEOUT_MS: milliseconds(120_000),
  MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE: positive(6),
  MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: flag(false),
  MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS: milliseconds(10_000),
  MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS: milliseconds(30_000),
  MEETBOT_WEBHOOK_WORKER: flag(true),
  MEETBOT_WEBHOOK_CONCURRENCY: wholeFrom(16, 1, 1000),
  MEETBOT_WEBHOOK_POLL_INTERVAL_MS: milliseconds(1000),
  MEETBOT_WEBHOOK_RETENTION_DAYS: positive(30),
  ...oauthVariables,
  MEETBOT_RUNNER_COMMAND: fromText<[string, ...string[]] | undefined>(
    undefined,
    (raw) => {
      try {
        return RunnerCommand.parse(JSON.parse(raw));
      } catch {
        return undefined;
      }
    },
    'a JSON array of strings, the program first (like ["node","bin/meetbot.js","run"])',
  ),
  MEETBOT_WARM_RUNNERS: wholeFrom(0, 0, 16),
  // These reach runners in their BotConfig (RunnerSettings), never through the environment.
  MEETBOT_CHROMIUM_PATH: fromText(DEFAULT_CHROMIUM_PATH, (raw) => raw, "a path"),
  MEETBOT_LOG_LEVEL: fromText<RunnerSettings["logLevel"]>(
    "info",
    (raw) => RUNNER_LOG_LEVELS.find((level) => level === raw),
    `one of ${RUNNER_LOG_LEVELS.join(", ")}`,
  ),
  MEETBOT_FINAL_DELIVERY_TIMEOUT_MS: fromText(
    DEFAULT_FINAL_DELIVERY_TIMEOUT_MS,
    (raw) => wholeNumber(raw, 0, 86_400_000),
    "a whole number of milliseconds, 0 to 86400000",
  ),
  MEETBOT_ZOOM_WEB_BASE_URL: httpUrl,
  MEETBOT_TEAMS_WEB_BASE_URL: httpUrl,
});
export type ServerEnv = z.infer<typeof ServerEnv>;

/** The environment, checked: a bad variable stops startup with one line per variable naming it. */
export function parseServerEnv(env: NodeJS.ProcessEnv): ServerEnv {
  const parsed = ServerEnv.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  throw new StartupError(lines.join("\n"));
}

export function resolveConfig(opts: StartServerOptions): ServerConfig {
  const raw = opts.env ?? process.env;
  const env = parseServerEnv(raw);
  const dataDir = path.resolve(opts.dataDir);
  const port = opts.port ?? DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`invalid port ${port}`);
  const databaseUrl = opts.databaseUrl ?? env.DATABASE_URL;
  return {
    host: opts.host ?? DEFAULT_HOST,
    port,
    dataDir,
    publicBaseUrl: opts.publicBaseUrl === undefined ? undefined : normalizeBaseUrl(opts.publicBaseUrl),
    allowedMeetingHosts: (opts.allowedMeetingHosts ?? env.MEETBOT_ALLOWED_MEETING_HOSTS).map((h) =>
      h.trim().toLowerCase(),
    ),
    logLevel: opts.logLevel ?? "info",
    watchdog: {
      intervalMs: opts.watchdog?.intervalMs ?? env.MEETBOT_WATCHDOG_INTERVAL_MS,
      launchTimeoutMs: opts.watchdog?.launchTimeoutMs ?? env.MEETBOT_LAUNCH_TIMEOUT_MS,
      heartbeatTimeoutMultiple:
        opts.watchdog?.heartbeatTimeoutMultiple ?? env.MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE,
    },
    rateLimit: {
      perMinute: opts.rateLimit?.perMinute ?? env.MEETBOT_RATE_LIMIT_PER_MINUTE,
      perHour: opts.rateLimit?.perHour ?? env.MEETBOT_RATE_LIMIT_PER_HOUR,
    },
    oauth:
      opts.oauth ?? oauthConfigFromEnv(Object.fromEntries(OAUTH_VARIABLES.map((name) => [name, env[name]]))),
    outbound: {
      allowPrivateTargets: opts.outbound?.allowPrivateTargets ?? env.MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS,
      connectTimeoutMs: opts.outbound?.connectTimeoutMs ?? env.MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: opts.outbound?.responseTimeoutMs ?? env.MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS,
    },
    webhooks: {
      worker: opts.webhooks?.worker ?? env.MEETBOT_WEBHOOK_WORKER,
      concurrency: opts.webhooks?.concurrency ?? env.MEETBOT_WEBHOOK_CONCURRENCY,
      pollIntervalMs: opts.webhooks?.pollIntervalMs ?? env.MEETBOT_WEBHOOK_POLL_INTERVAL_MS,
      retentionDays: opts.webhooks?.retentionDays ?? env.MEETBOT_WEBHOOK_RETENTION_DAYS,
    },
    paths: {
      database: path.join(dataDir, "meetbot.sqlite"),
      recordings: path.join(dataDir, "recordings"),
      bots: path.join(dataDir, "bots"),
    },
    database: resolveDatabase(databaseUrl, dataDir, env.MEETBOT_DATABASE_POOL_SIZE),
    jwtSecret: env.MEETBOT_JWT_SECRET,
    runner: {
      settings: {
        browser: { executablePath: env.MEETBOT_CHROMIUM_PATH },
        platformUrls: {
          ...(env.MEETBOT_ZOOM_WEB_BASE_URL ? { zoomWeb: env.MEETBOT_ZOOM_WEB_BASE_URL } : {}),
          ...(env.MEETBOT_TEAMS_WEB_BASE_URL ? { teamsWeb: env.MEETBOT_TEAMS_WEB_BASE_URL } : {}),
        },
        logLevel: env.MEETBOT_LOG_LEVEL,
        finalDeliveryTimeout: env.MEETBOT_FINAL_DELIVERY_TIMEOUT_MS,
      },
      command: env.MEETBOT_RUNNER_COMMAND,
      warmRunners: env.MEETBOT_WARM_RUNNERS,
      env: allowlistedEnv(raw),
    },
  };
}

/** postgres:// or postgresql:// selects PostgreSQL; empty, SQLite in dataDir. */
function resolveDatabase(url: string, dataDir: string, poolSize: number): DatabaseOptions {
  if (url.trim() === "") return { kind: "sqlite", file: path.join(dataDir, "meetbot.sqlite") };
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new StartupError("DATABASE_URL must start with postgres:// or postgresql:// (unset it for SQLite)");
  }
  return { kind: "postgres", url, poolSize };
}

export function parseHostList(value: string): string[] {
  return value
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
}

export function normalizeBaseUrl(value: string): string {
  const url = new URL(value);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`publicBaseUrl must be http(s): ${value}`);
  }
  return url.toString().replace(/\/+$/, "");
}

/** The address a local client uses for a listening socket (wildcards become loopback). */
export function localUrl(host: string, port: number): string {
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
