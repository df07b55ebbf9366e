/**
 * GET /v1/recordings/{id}/stream against the floor for serving the same file: bare Node `http` +
 * `fs.createReadStream`, no auth, no database. Two loads, each through the same client on the
 * same machine: whole-file downloads (throughput) and small random ranges (what a seeking player
 * sends; requests per second). Prints both figures and meetbot's ratio to the floor; asserts
 * nothing. The servers run in a child process (`serve`), so that the client has a core of its own.
 * `node --import tsx bench/stream.ts [size MiB, default 64]`
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { BotConfig } from "../src/core/index.js";
import type { Launcher } from "../src/server/launcher/launcher.js";
import { startServer } from "../src/server/main.js";
import { parseRange } from "../src/server/storage/range.js";

const SIZE = Number(process.argv[2] ?? 64) * 1024 * 1024;
const WHOLE_SECONDS = 5;
const RANGE_SECONDS = 5;
const RANGE_BYTES = 64 * 1024;
const CONCURRENCY = 4;

/** Keeps each deployed bot's config: the bench uploads its recording as the runner would. */
class KeepingLauncher implements Launcher {
  readonly configs = new Map<number, BotConfig>();
  async launch(config: BotConfig): Promise<void> {
    this.configs.set(config.botId, config);
  }
  async stop(): Promise<void> {}
}

async function json(res: Response): Promise<Record<string, unknown>> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** meetbot with one user and one bot whose recording is `bytes`. */
async function meetbot(dataDir: string, bytes: Buffer) {
  const launcher = new KeepingLauncher();
  const server = await startServer({
    port: 0,
    dataDir,
    launcher,
    logLevel: "silent",
    rateLimit: { perMinute: 0, perHour: 0 },
  });
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then(json);
  const user = await post("/v1/auth/register", {
    email: "bench@example.com",
    password: "correct horse battery",
    name: "Bench",
  });
  const token = user.access_token as string;
  const bot = await post(
    "/v1/bots",
    { meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" } },
    token,
  );
  const botId = bot.id as number;
  await post(`/v1/bots/${botId}/deploy`, {}, token);
  const config = launcher.configs.get(botId) as BotConfig;
  await json(
    await fetch(config.upload.url, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${config.callback.token}`,
        "content-type": "video/mp4",
        "x-recording-duration-ms": "60000",
      },
      body: new Uint8Array(bytes),
    }),
  );
  return {
    url: `${server.url}/v1/recordings/${botId}/stream`,
    headers: { authorization: `Bearer ${token}` },
    file: join(dataDir, "recordings", `${botId}.mp4`),
    close: () => server.close(),
  };
}

/** The floor: the same file, its size from a stat, one range, no checks. */
async function bare(file: string) {
  const server = createServer((req, res) => {
    void stat(file).then(({ size }) => {
      const range = parseRange(req.headers.range, size);
      if (range === "unsatisfiable") return res.writeHead(416).end();
      const headers = { "content-type": "video/mp4", "accept-ranges": "bytes" };
      if (range) {
        res.writeHead(206, {
          ...headers,
          "content-range": `bytes ${range.start}-${range.end}/${size}`,
          "content-length": range.end - range.start + 1,
        });
      } else {
        res.writeHead(200, { ...headers, "content-length": size });
      }
      createReadStream(file, range ?? {}).pipe(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/file`,
    headers: {},
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Requests for `seconds` from CONCURRENCY loops; answers {requests, bytes, seconds}. */
async function load(
  target: { url: string; headers: Record<string, string> },
  seconds: number,
  range: () => string | undefined,
) {
  const end = performance.now() + seconds * 1000;
  let requests = 0;
  let bytes = 0;
  const start = performance.now();
  const loop = async () => {
    while (performance.now() < end) {
      const r = range();
      const res = await fetch(target.url, { headers: { ...target.headers, ...(r ? { range: r } : {}) } });
      if (res.status !== (r ? 206 : 200)) throw new Error(`${target.url}: ${res.status}`);
      bytes += (await res.arrayBuffer()).byteLength;
      requests += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  return { requests, bytes, seconds: (performance.now() - start) / 1000 };
}

const randomRange = () => {
  const start = Math.floor(Math.random() * (SIZE - RANGE_BYTES));
  return `bytes=${start}-${start + RANGE_BYTES - 1}`;
};

type Target = { url: string; headers: Record<string, string> };

/** The child: both servers on `dataDir`'s source file; prints their targets, runs until killed. */
async function serve(dataDir: string): Promise<void> {
  const ours = await meetbot(dataDir, await readFile(join(dataDir, "source.bin")));
  const floor = await bare(ours.file);
  const targets: Record<string, Target> = {
    "bare http + createReadStream": { url: floor.url, headers: floor.headers },
    "meetbot /stream": { url: ours.url, headers: ours.headers },
  };
  console.log(JSON.stringify(targets));
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "meetbot-bench-stream-"));
  const child = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "serve", dataDir], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const source = randomBytes(SIZE);
    // The upload route stores only what opens as an MP4 (an ftyp box header); the rest is noise.
    source.set([0, 0, 0, 8, ...Buffer.from("ftyp", "latin1")]);
    await writeFile(join(dataDir, "source.bin"), source);
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const first = await lines.next();
    if (first.done) throw new Error("the server process ended before it listened");
    const targets = JSON.parse(first.value as string) as Record<string, Target>;
    const figures: Record<string, { wholeMiBps: number; rangeRequestsPerSecond: number }> = {};
    for (const [what, target] of Object.entries(targets)) {
      await load(target, 1, () => undefined); // warm-up
      const whole = await load(target, WHOLE_SECONDS, () => undefined);
      const ranges = await load(target, RANGE_SECONDS, randomRange);
      figures[what] = {
        wholeMiBps: Math.round(whole.bytes / 1024 / 1024 / whole.seconds),
        rangeRequestsPerSecond: Math.round(ranges.requests / ranges.seconds),
      };
      console.log(JSON.stringify({ what, ...figures[what] }));
    }
    const [f, o] = Object.values(figures);
    if (f && o) {
      console.log(
        `meetbot / floor: whole file ${(o.wholeMiBps / f.wholeMiBps).toFixed(2)}×, ` +
          `${RANGE_BYTES / 1024} KiB ranges ${(o.rangeRequestsPerSecond / f.rangeRequestsPerSecond).toFixed(2)}× ` +
          `(${CONCURRENCY} concurrent requests, ${SIZE / 1024 / 1024} MiB file)`,
      );
    }
  } finally {
    child.kill();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "serve") await serve(process.argv[3] as string);
else await main();
