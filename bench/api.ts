/**
 * `make bench`, the control plane's part: requests per second and latency of an API-key
 * authenticated GET /v1/bots/{id} and of POST /v1/bots, each against a bare Fastify hello-world
 * on the same machine (the ratio is the figure to watch), and how many runner callback events per
 * second the server ingests. Each server runs in its own process; autocannon drives it from this
 * one. Prints figures only; asserts nothing.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { type BotConfig, callbackEventUrl } from "../src/core/index.js";

const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 10);
const CONNECTIONS = 32;

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

interface BenchServer {
  url: string;
  /** The BotConfig of each bot deployed from now on, in order. */
  nextLaunch(): Promise<BotConfig>;
  stop(): Promise<void>;
}

async function startBenchServer(kind: "bare" | "meetbot"): Promise<BenchServer> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "bench/api-server.ts", kind], {
    stdio: ["ignore", "pipe", "inherit"],
    // The bench is one client hammering one credential: lift the per-credential limits.
    env: {
      ...process.env,
      NODE_ENV: "production",
      MEETBOT_RATE_LIMIT_PER_MINUTE: "0",
      MEETBOT_RATE_LIMIT_PER_HOUR: "0",
    },
  });
  const waiting: Array<(config: BotConfig) => void> = [];
  const launched: BotConfig[] = [];
  let resolveUrl: (url: string) => void;
  const url = new Promise<string>((resolve) => (resolveUrl = resolve));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    const message = JSON.parse(line) as { url?: string; launched?: BotConfig };
    if (message.url) resolveUrl(message.url);
    if (message.launched) {
      const next = waiting.shift();
      if (next) next(message.launched);
      else launched.push(message.launched);
    }
  });
  return {
    url: await url,
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

async function load(options: autocannon.Options): Promise<Figures> {
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

async function json(url: string, init: { method?: string; token?: string; body?: unknown } = {}) {
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

const BOT_BODY = {
  meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" },
  botDisplayName: "Bench Bot",
  meetingTitle: "Load",
};

export async function benchApi(): Promise<string[]> {
  const bare = await startBenchServer("bare");
  const yardstick = await load({ url: `${bare.url}/hello` });
  await bare.stop();

  const server = await startBenchServer("meetbot");
  try {
    const user = await json(`${server.url}/v1/auth/register`, {
      method: "POST",
      body: { email: `bench-${Date.now()}@example.com`, password: "bench-password-1", name: "Bench" },
    });
    const apiKey = await json(`${server.url}/v1/api-keys`, {
      method: "POST",
      token: user.access_token as string,
      body: { name: "bench" },
    });
    const key = apiKey.key as string;
    const auth = { authorization: `Bearer ${key}` };
    const bot = await json(`${server.url}/v1/bots`, { method: "POST", token: key, body: BOT_BODY });

    const read = await load({ url: `${server.url}/v1/bots/${bot.id}`, headers: auth });
    const create = await load({
      url: `${server.url}/v1/bots`,
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(BOT_BODY),
    });

    // Ingestion: one deployed bot, its runner's events with fresh sequence numbers.
    const target = await json(`${server.url}/v1/bots`, { method: "POST", token: key, body: BOT_BODY });
    await json(`${server.url}/v1/bots/${target.id}/deploy`, { method: "POST", token: key });
    const config = await server.nextLaunch();
    let seq = 0;
    const ingest = await load({
      url: new URL(callbackEventUrl(config), config.callback.baseUrl).toString(),
      method: "POST",
      headers: { authorization: `Bearer ${config.callback.token}`, "content-type": "application/json" },
      requests: [
        {
          setupRequest: (request) => {
            seq += 1;
            return {
              ...request,
              body: JSON.stringify({
                seq,
                type: "participant.joined",
                eventTime: new Date().toISOString(),
                data: { participantId: `p-${seq}`, participantName: `Participant ${seq}` },
              }),
            };
          },
        },
      ],
    });
    const stored = (await json(`${server.url}/v1/bots/${target.id}/events`, { token: key })) as unknown;
    const storedCount = Array.isArray(stored) ? stored.length : Number.NaN;

    const row = (name: string, f: Figures, ratio?: number) =>
      `  ${name.padEnd(44)} ${Math.round(f.rps).toString().padStart(6)} req/s  p50 ${f.p50} ms  p99 ${f.p99} ms` +
      (ratio === undefined ? "" : `  ${ratio.toFixed(2)}x bare`) +
      (f.non2xx > 0 ? `  (${f.non2xx} non-2xx or errors)` : "");
    return [
      `control plane (${CONNECTIONS} connections, ${SECONDS} s each, SQLite)`,
      row("bare Fastify hello-world", yardstick),
      row("GET /v1/bots/{id}, API key", read, read.rps / yardstick.rps) + "  (goal ≥ 0.5x)",
      row("POST /v1/bots, API key", create, create.rps / yardstick.rps),
      row("POST /bot-callbacks/{id}/event (ingestion)", ingest) + `  ${storedCount} events stored`,
    ];
  } finally {
    await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.stdout.write(`${(await benchApi()).join("\n")}\n`);
}
