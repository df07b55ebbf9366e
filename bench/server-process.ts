/**
 * A server from bench/api-server.ts in a process of its own (its own core; the load is generated
 * by the bench's process), and the JSON calls the benches make to set it up.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { BotConfig } from "../src/core/index.js";

export interface ServerProcess {
  url: string;
  /** meetbot's SQLite file (meetbot only). */
  database?: string;
  /** The BotConfig of each bot deployed from now on, in order. */
  nextLaunch(): Promise<BotConfig>;
  stop(): Promise<void>;
}

/**
 * Starts `kind` (`bare`: a Fastify hello-world; `meetbot`: our control plane on a temp SQLite dir;
 * `floor`: GET /v1/bots/{id} by hand on meetbot's `database`) with rate limits off (a bench is one
 * client hammering one credential) plus `env`.
 */
export async function startServerProcess(
  kind: "bare" | "meetbot" | "floor",
  env: Record<string, string> = {},
  database = "",
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/api-server.ts", kind, database], {
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      ...process.env,
      NODE_ENV: "production",
      MEETBOT_RATE_LIMIT_PER_MINUTE: "0",
      MEETBOT_RATE_LIMIT_PER_HOUR: "0",
      ...env,
    },
  });
  const waiting: Array<(config: BotConfig) => void> = [];
  const launched: BotConfig[] = [];
  let resolveListening: (message: { url: string; database?: string }) => void = () => {};
  const listening = new Promise<{ url: string; database?: string }>(
    (resolve) => (resolveListening = resolve),
  );
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line) as { url?: string; database?: string; launched?: BotConfig };
    if (message.url) resolveListening({ url: message.url, database: message.database });
    if (message.launched) {
      const next = waiting.shift();
      if (next) next(message.launched);
      else launched.push(message.launched);
    }
  });
  return {
    ...(await listening),
    nextLaunch: () => {
      const ready = launched.shift();
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
    },
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** A JSON request; throws with the answer unless it is 2xx. */
export async function json(url: string, init: { method?: string; token?: string; body?: unknown } = {}) {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (!response.ok)
    throw new Error(`${init.method ?? "GET"} ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}
