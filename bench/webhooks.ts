/**
 * `make bench`, the webhooks' part: how long a reported bot event takes to reach a webhook
 * receiver (runner callback POST sent → signed delivery received and verified), at a steady 100
 * events per second, and how many deliveries per second the outbox worker sustains when events
 * fan out to many endpoints. The control plane runs in its own process (bench/api-server.ts, SQLite
 * in a temp dir); the runner and the receiver are this process. Prints figures only.
 *
 *   node --import tsx bench/webhooks.ts
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { verifyWebhook } from "../src/client/webhooks.js";
import { type BotConfig, callbackEventUrl } from "../src/core/index.js";
import { json, startServerProcess } from "./server-process.js";

const LATENCY_RATE = 100; // events per second
const LATENCY_SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 10);
const FANOUT_ENDPOINTS = 16;
const FANOUT_EVENTS = 400;
const FANOUT_POSTERS = 8;

/** Receives deliveries, verifies each with the shipped helper, and reports them as they come. */
class Receiver {
  private readonly server: Server;
  readonly secrets = new Map<string, string>();
  rejected = 0;
  onDelivery: (path: string, body: { event: string; data: Record<string, unknown> }, at: number) => void =
    () => {};
  url = "";

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const at = performance.now();
        const path = req.url ?? "/";
        const result = verifyWebhook({
          rawBody: Buffer.concat(chunks),
          headers: req.headers,
          secret: this.secrets.get(path) ?? "",
        });
        if (!result.ok) {
          this.rejected += 1;
          res.writeHead(401).end();
          return;
        }
        res.writeHead(204).end();
        this.onDelivery(path, result.webhook.payload as never, at);
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Plays one deployed bot's runner: numbered participant.joined events with its callback token. */
class Runner {
  private seq = 0;
  constructor(private readonly config: BotConfig) {}

  /** Posts the next event; resolves with its number once the server has applied it. */
  async participantJoined(): Promise<number> {
    const seq = ++this.seq;
    const response = await fetch(new URL(callbackEventUrl(this.config), this.config.callback.baseUrl), {
      method: "POST",
      headers: { authorization: `Bearer ${this.config.callback.token}`, "content-type": "application/json" },
      body: JSON.stringify({
        seq,
        type: "participant.joined",
        eventTime: new Date().toISOString(),
        data: { participantId: `p-${seq}`, participantName: `Participant ${seq}` },
      }),
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`event ${seq}: HTTP ${response.status}`);
    return seq;
  }

  get sent(): number {
    return this.seq;
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN;

export async function benchWebhooks(): Promise<string[]> {
  const receiver = new Receiver();
  await receiver.start();
  // The receiver is this process, on 127.0.0.1.
  const server = await startServerProcess("meetbot", { MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1" });
  try {
    const user = await json(`${server.url}/v1/auth/register`, {
      method: "POST",
      body: { email: `bench-${Date.now()}@example.com`, password: "bench-password-1", name: "Bench" },
    });
    const token = user.access_token as string;
    const webhook = async (path: string) => {
      const created = await json(`${server.url}/v1/webhooks`, {
        method: "POST",
        token,
        body: { name: path, url: `${receiver.url}${path}`, events: ["participant.joined"] },
      });
      receiver.secrets.set(path, created.secret as string);
      return created.id as number;
    };
    const deployedRunner = async () => {
      const bot = await json(`${server.url}/v1/bots`, {
        method: "POST",
        token,
        body: { meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" } },
      });
      await json(`${server.url}/v1/bots/${bot.id}/deploy`, { method: "POST", token });
      return new Runner(await server.nextLaunch());
    };

    // 1. Latency: one endpoint, a steady 100 events/s; from just before each callback POST to
    //    the verified delivery at the receiver.
    const latencyHook = await webhook("/latency");
    const latencyRunner = await deployedRunner();
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    receiver.onDelivery = (path, body, at) => {
      const start = sentAt.get(body.data.participantId as string);
      if (path === "/latency" && start !== undefined) latencies.push(at - start);
    };
    const total = LATENCY_RATE * LATENCY_SECONDS;
    const started = performance.now();
    const posts: Promise<number>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / LATENCY_RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sentAt.set(`p-${latencyRunner.sent + 1}`, performance.now());
      posts.push(latencyRunner.participantJoined());
    }
    await Promise.all(posts);
    await waitUntil(() => latencies.length >= total, 30_000);
    const sorted = [...latencies].sort((a, b) => a - b);
    await json(`${server.url}/v1/webhooks/${latencyHook}`, {
      method: "PATCH",
      token,
      body: { isActive: false },
    });

    // 2. Throughput: FANOUT_EVENTS events, each delivered to FANOUT_ENDPOINTS endpoints, posted by
    //    FANOUT_POSTERS concurrent runners' worth of requests; deliveries per second from the first
    //    post to the last delivery.
    for (let i = 0; i < FANOUT_ENDPOINTS; i++) await webhook(`/fanout-${i}`);
    const fanoutRunner = await deployedRunner();
    let fanoutReceived = 0;
    receiver.onDelivery = (path) => {
      if (path.startsWith("/fanout-")) fanoutReceived += 1;
    };
    const expected = FANOUT_EVENTS * FANOUT_ENDPOINTS;
    const fanoutStart = performance.now();
    let remaining = FANOUT_EVENTS;
    await Promise.all(
      Array.from({ length: FANOUT_POSTERS }, async () => {
        while (remaining > 0) {
          remaining -= 1;
          await fanoutRunner.participantJoined();
        }
      }),
    );
    const postedMs = performance.now() - fanoutStart;
    await waitUntil(() => fanoutReceived >= expected, 120_000);
    const fanoutMs = performance.now() - fanoutStart;

    const ms = (v: number) => `${v.toFixed(1)} ms`;
    return [
      `webhooks (control plane in its own process, SQLite; receiver verifies every signature)`,
      `  event → delivery at ${LATENCY_RATE} events/s for ${LATENCY_SECONDS} s, 1 endpoint: ` +
        `p50 ${ms(percentile(sorted, 0.5))}  p99 ${ms(percentile(sorted, 0.99))}  max ${ms(sorted.at(-1) ?? NaN)}` +
        `  (${latencies.length}/${total} delivered; goal p99 ≤ 100 ms)`,
      `  fan-out ${FANOUT_EVENTS} events × ${FANOUT_ENDPOINTS} endpoints: ` +
        `${Math.round((expected * 1000) / fanoutMs)} deliveries/s sustained` +
        `  (${expected} in ${(fanoutMs / 1000).toFixed(1)} s; events posted in ${(postedMs / 1000).toFixed(1)} s)` +
        (receiver.rejected > 0 ? `  ${receiver.rejected} failed verification` : ""),
    ];
  } finally {
    await server.stop();
    await receiver.close();
  }
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`bench: timed out after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.stdout.write(`${(await benchWebhooks()).join("\n")}\n`);
}
