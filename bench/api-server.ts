/**
 * A server for bench/api.ts, in its own process so that it has a core of its own and the load
 * generator the other: `bare` is a Fastify hello-world, the yardstick; `meetbot` is our control
 * plane on a temporary SQLite data dir; `floor <sqlite file>` is the least any server can do to
 * answer GET /v1/bots/{id} from meetbot's database (see floor()). Prints `{"url": ...}` once
 * listening (meetbot adds its `database`), then one `{"launched": BotConfig}` line per deployed
 * bot (the bench plays the runner with its token).
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
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

/**
 * GET /v1/bots/{id} written by hand on a bare Fastify: hash the API key and find it in a map,
 * two prepared SQLite lookups (the same SQL as ours), JSON.stringify of the fields. No schema,
 * no request log, no ORM: the floor for this read on this machine, so the figure to compare
 * meetbot's with (the hello-world does no work at all).
 */
async function floor(file: string): Promise<() => Promise<void>> {
  const db = new SQLite(file, { readonly: true });
  const keyOwner = db.prepare<[string], { user_id: number }>(
    "select user_id from api_keys where key_hash = ?",
  );
  const botById = db.prepare<[number, number], Record<string, unknown>>(
    "select * from bots where id = ? and user_id = ?",
  );
  const recordingOf = db.prepare<[number], Record<string, unknown>>(
    "select size_bytes, duration_ms, created_at from recordings where bot_id = ?",
  );
  const owners = new Map<string, number>();
  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>("/v1/bots/:id", async (request, reply) => {
    const key = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "")?.[1] ?? "";
    const hash = createHash("sha256").update(key).digest("hex");
    let userId = owners.get(hash);
    if (userId === undefined) {
      userId = keyOwner.get(hash)?.user_id;
      if (userId === undefined) return reply.code(401).send({ detail: "Could not validate credentials" });
      owners.set(hash, userId);
    }
    const row = botById.get(Number(request.params.id), userId);
    if (!row) return reply.code(404).send({ detail: "Bot not found" });
    const recording = recordingOf.get(row.id as number);
    return {
      id: row.id,
      botDisplayName: row.bot_display_name,
      meetingTitle: row.meeting_title,
      status: row.status,
      meetingInfo: JSON.parse(row.meeting_info as string),
      createdAt: row.created_at,
      recording: recording ? { sizeBytes: recording.size_bytes, createdAt: recording.created_at } : null,
      deploymentError: row.deployment_error === null ? null : JSON.parse(row.deployment_error as string),
      lastHeartbeat: row.last_heartbeat,
    };
  });
  print({ url: await app.listen({ host: "127.0.0.1", port: 0 }) });
  return async () => {
    await app.close();
    db.close();
  };
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
  print({ url: server.url, database: join(dataDir, "meetbot.sqlite") });
  return async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  };
}

const [kind, file] = process.argv.slice(2);
const close = await (kind === "bare" ? bare() : kind === "floor" ? floor(file ?? "") : meetbot());
process.once("SIGTERM", () => {
  void close().then(() => process.exit(0));
});
