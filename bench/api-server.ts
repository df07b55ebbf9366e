/**
 * A server for bench/api.ts, in its own process so that it has a core of its own and the load
 * generator the other: `bare` is a Fastify hello-world, the yardstick; `meetbot` is our control
 * plane on a temporary SQLite data dir. Prints `{"url": ...}` once listening, then one
 * `{"launched": BotConfig}` line per deployed bot (the bench plays the runner with its token).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import type { BotConfig } from "../src/core/index.js";
import type { Launcher } from "../src/server/launcher/launcher.js";
import { startServer } from "../src/server/main.js";

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

/** Hands each bot's config to the bench instead of starting a runner. */
class PrintingLauncher implements Launcher {
  async launch(config: BotConfig): Promise<void> {
    print({ launched: config });
  }
  async stop(): Promise<void> {}
}

async function bare(): Promise<() => Promise<void>> {
  const app = Fastify({ logger: false });
  app.get("/hello", async () => ({ hello: "world" }));
  print({ url: await app.listen({ host: "127.0.0.1", port: 0 }) });
  return () => app.close();
}

async function meetbot(): Promise<() => Promise<void>> {
  const dataDir = await mkdtemp(join(tmpdir(), "meetbot-api-bench-"));
  const server = await startServer({
    port: 0,
    dataDir,
    launcher: new PrintingLauncher(),
    allowedMeetingHosts: ["127.0.0.1"],
    logLevel: "silent",
  });
  print({ url: server.url });
  return async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  };
}

const close = await (process.argv[2] === "bare" ? bare() : meetbot());
process.once("SIGTERM", () => {
  void close().then(() => process.exit(0));
});
