/**
 * `make bench`, the control plane's part: requests per second and latency of an API-key
 * authenticated GET /v1/bots/{id} and of POST /v1/bots, each against a bare Fastify hello-world
 * on the same machine, the read also against the same read written by hand with no framework
 * around it (the floor: what is left of the ratio is our overhead), and how many runner callback events per
 * second the server ingests. Each server runs in its own process; autocannon drives it from this
 * one. Prints figures only; asserts nothing.
 */
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { callbackEventUrl } from "../src/core/index.js";
import { json, startServerProcess } from "./server-process.js";

const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 10);
const CONNECTIONS = 32;

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
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

const BOT_BODY = {
  meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" },
  botDisplayName: "Bench Bot",
  meetingTitle: "Load",
};

export async function benchApi(): Promise<string[]> {
  const bare = await startServerProcess("bare");
  const yardstick = await load({ url: `${bare.url}/hello` });
  await bare.stop();

  const server = await startServerProcess("meetbot");
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
    const floor = await startServerProcess("floor", {}, server.database);
    const floorRead = await load({ url: `${floor.url}/v1/bots/${bot.id}`, headers: auth });
    await floor.stop();
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
      row("same read by hand, no framework (the floor)", floorRead, floorRead.rps / yardstick.rps),
      row("GET /v1/bots/{id}, API key", read, read.rps / yardstick.rps) +
        `  (goal ≥ 0.5x)  ${(read.rps / floorRead.rps).toFixed(2)}x the floor`,
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
