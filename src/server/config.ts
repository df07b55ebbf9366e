import path from "node:path";
import type { Launcher } from "./launcher/launcher.js";

export interface StartServerOptions {
  /** 0 = a free port; default 8080. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The SQLite file, the server secret, recordings and per-bot runner logs live here. */
  dataDir: string;
  /** How runners and download links reach this server; default http://<host>:<port>. */
  publicBaseUrl?: string;
  /** Default: LocalProcessLauncher. */
  launcher?: Launcher;
  /** Meeting hosts accepted besides the real platforms' ("host" or "host:port"); default from env. */
  allowedMeetingHosts?: string[];
  /** pino level; default "info". */
  logLevel?: string;
}

export interface ServerConfig {
  host: string;
  port: number;
  dataDir: string;
  /** Undefined until known when it defaults to the listening address (port 0). */
  publicBaseUrl: string | undefined;
  allowedMeetingHosts: string[];
  logLevel: string;
  paths: { database: string; recordings: string; bots: string };
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
    paths: {
      database: path.join(dataDir, "meetbot.sqlite"),
      recordings: path.join(dataDir, "recordings"),
      bots: path.join(dataDir, "bots"),
    },
  };
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
