import path from "node:path";
import { type OAuthConfig, oauthConfigFromEnv } from "./auth/oauth-config.js";
import type { DatabaseOptions } from "./db/database.js";
import type { Launcher } from "./launcher/launcher.js";
import { StartupError } from "./startup-error.js";

export interface StartServerOptions {
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
  /** pino level; default "info". */
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
}

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";

export function resolveConfig(opts: StartServerOptions, env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const dataDir = path.resolve(opts.dataDir);
  const port = opts.port ?? DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`invalid port ${port}`);
  return {
    host: opts.host ?? DEFAULT_HOST,
    port,
    dataDir,
    publicBaseUrl: opts.publicBaseUrl === undefined ? undefined : normalizeBaseUrl(opts.publicBaseUrl),
    allowedMeetingHosts: (
      opts.allowedMeetingHosts ?? parseHostList(env.MEETBOT_ALLOWED_MEETING_HOSTS ?? "")
    ).map((h) => h.trim().toLowerCase()),
    logLevel: opts.logLevel ?? "info",
    watchdog: {
      intervalMs: opts.watchdog?.intervalMs ?? positiveFromEnv(env, "MEETBOT_WATCHDOG_INTERVAL_MS", 5_000),
      launchTimeoutMs:
        opts.watchdog?.launchTimeoutMs ?? positiveFromEnv(env, "MEETBOT_LAUNCH_TIMEOUT_MS", 120_000),
      heartbeatTimeoutMultiple:
        opts.watchdog?.heartbeatTimeoutMultiple ??
        positiveFromEnv(env, "MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE", 6),
    },
    rateLimit: {
      perMinute: opts.rateLimit?.perMinute ?? countFromEnv(env, "MEETBOT_RATE_LIMIT_PER_MINUTE", 60),
      perHour: opts.rateLimit?.perHour ?? countFromEnv(env, "MEETBOT_RATE_LIMIT_PER_HOUR", 1000),
    },
    oauth: opts.oauth ?? oauthConfigFromEnv(env),
    outbound: {
      allowPrivateTargets:
        opts.outbound?.allowPrivateTargets ?? flagFromEnv(env, "MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS"),
      connectTimeoutMs:
        opts.outbound?.connectTimeoutMs ?? positiveFromEnv(env, "MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS", 10_000),
      responseTimeoutMs:
        opts.outbound?.responseTimeoutMs ??
        positiveFromEnv(env, "MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS", 30_000),
    },
    webhooks: {
      worker:
        opts.webhooks?.worker ??
        ((env.MEETBOT_WEBHOOK_WORKER ?? "").trim() === "" || flagFromEnv(env, "MEETBOT_WEBHOOK_WORKER")),
      concurrency:
        opts.webhooks?.concurrency ?? Math.ceil(positiveFromEnv(env, "MEETBOT_WEBHOOK_CONCURRENCY", 16)),
      pollIntervalMs:
        opts.webhooks?.pollIntervalMs ?? positiveFromEnv(env, "MEETBOT_WEBHOOK_POLL_INTERVAL_MS", 1000),
      retentionDays:
        opts.webhooks?.retentionDays ?? positiveFromEnv(env, "MEETBOT_WEBHOOK_RETENTION_DAYS", 30),
    },
    paths: {
      database: path.join(dataDir, "meetbot.sqlite"),
      recordings: path.join(dataDir, "recordings"),
      bots: path.join(dataDir, "bots"),
    },
    database: resolveDatabase(opts.databaseUrl ?? env.DATABASE_URL ?? "", dataDir, env),
  };
}

/** DATABASE_URL (postgres:// or postgresql://) selects PostgreSQL; unset or empty, SQLite in dataDir. */
function resolveDatabase(url: string, dataDir: string, env: NodeJS.ProcessEnv): DatabaseOptions {
  if (url.trim() === "") return { kind: "sqlite", file: path.join(dataDir, "meetbot.sqlite") };
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new StartupError("DATABASE_URL must start with postgres:// or postgresql:// (unset it for SQLite)");
  }
  const poolSize = env.MEETBOT_DATABASE_POOL_SIZE;
  const n = poolSize === undefined || poolSize === "" ? 10 : Number(poolSize);
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    throw new StartupError(`MEETBOT_DATABASE_POOL_SIZE must be an integer 1-1000, got "${poolSize}"`);
  }
  return { kind: "postgres", url, poolSize: n };
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

/** "1"/"true" on, "0"/"false"/unset off; anything else is a typo worth stopping for. */
function flagFromEnv(env: NodeJS.ProcessEnv, name: string): boolean {
  const value = (env[name] ?? "").trim().toLowerCase();
  if (value === "1" || value === "true") return true;
  if (value === "" || value === "0" || value === "false") return false;
  throw new StartupError(`${name} must be 1 or 0, got "${env[name]}"`);
}

function positiveFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${value}"`);
  return n;
}

/** A non-negative integer (0 allowed: it switches a limit off). */
function countFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  }
  return n;
}
