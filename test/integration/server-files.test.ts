import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe } from "vitest";
import { MAX_RECORDING_BYTES } from "../../src/server/services/recordings.js";
import {
  deployedBot,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/** What the server keeps on disk is its own user's only, and nothing half-written stays. */

const UNLIMITED = { rateLimit: { perMinute: 0, perHour: 0 } };
const mode = async (file: string) => ((await stat(file)).mode & 0o777).toString(8);

let server: TestServer;
let user: TestUser;
let scratch: string;
test.override("serverOptions", UNLIMITED);
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  user = await registerUser(server.api);
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-files-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("files on disk", () => {
  test("data dir and its folders are 0700; database, WAL, SHM, secret, recordings and artifacts 0600", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    const artifact = await server.api.put(`/v1/bot-callbacks/${botId}/artifacts/failure.png`, {
      rawBody: mp4Bytes(64),
      token: runner.config.callback.token,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(artifact.status).toBe(201);
    expect((await runner.upload(mp4Bytes(1024), 500)).status).toBe(201);

    const { dataDir } = server;
    const dirs = [
      dataDir,
      path.join(dataDir, "recordings"),
      path.join(dataDir, "bots"),
      path.join(dataDir, "bots", String(botId), "artifacts"),
    ];
    const files = [
      path.join(dataDir, "jwt-secret"),
      path.join(dataDir, "recordings", `${botId}.mp4`),
      path.join(dataDir, "bots", String(botId), "artifacts", "failure.png"),
      // On PostgreSQL the database is not a file here.
      ...(server.databaseUrl
        ? []
        : ["", "-wal", "-shm"].map((s) => path.join(dataDir, `meetbot.sqlite${s}`))),
    ];
    expect(await Promise.all(dirs.map(mode))).toEqual(dirs.map(() => "700"));
    expect(await Promise.all(files.map(mode))).toEqual(files.map(() => "600"));
  });

  test("a server started on an existing data dir makes it 0700 and its database 0600 again", async () => {
    const dataDir = path.join(scratch, "loose");
    await mkdir(path.join(dataDir, "recordings"), { recursive: true, mode: 0o755 });
    await writeFile(path.join(dataDir, "meetbot.sqlite"), "", { mode: 0o644 });
    const again = await startTestServer({ dataDir });
    try {
      expect(await mode(dataDir)).toBe("700");
      expect(await mode(path.join(dataDir, "recordings"))).toBe("700");
      if (!again.databaseUrl) expect(await mode(path.join(dataDir, "meetbot.sqlite"))).toBe("600");
    } finally {
      await again.close();
    }
  });

  test("removes the unfinished uploads an earlier run left, not one another process is writing", async () => {
    const dataDir = path.join(scratch, "leftovers");
    const artifacts = path.join(dataDir, "bots", "7", "artifacts");
    await mkdir(artifacts, { recursive: true });
    await mkdir(path.join(dataDir, "recordings"), { recursive: true });
    const old = [
      path.join(dataDir, "recordings", "7.mp4.0a1b2c3d4e5f.part"),
      path.join(artifacts, "trace.zip.a1b2c3d4e5f6.part"),
    ];
    const fresh = path.join(dataDir, "recordings", "8.mp4.bbbbbbbbbbbb.part");
    const kept = path.join(dataDir, "recordings", "7.mp4");
    for (const file of [...old, fresh, kept]) await writeFile(file, "partial");
    const anHourAgo = new Date(Date.now() - 60 * 60 * 1000);
    for (const file of [...old, kept]) await utimes(file, anHourAgo, anHourAgo);

    const again = await startTestServer({ dataDir });
    await again.close();
    expect(old.filter((file) => existsSync(file))).toEqual([]);
    expect(existsSync(fresh)).toBe(true);
    expect(await readFile(kept, "utf8")).toBe("partial");
  });
});

describe("an upload that declares more than the limit", () => {
  test("is answered 413 before its body is read", async () => {
    const { botId, config } = await deployedBot(server, user);
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1");
    const response = new Promise<string>((resolve, reject) => {
      let text = "";
      socket.on("data", (chunk) => (text += chunk.toString()));
      socket.on("end", () => resolve(text)); // the server closes: it will not drain the rest
      socket.on("error", reject);
    });
    // Declares one byte over the limit and sends 16: the answer cannot wait for the rest.
    socket.write(
      `PUT /v1/bot-callbacks/${botId}/recording HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
        `Authorization: Bearer ${config.callback.token}\r\nContent-Type: video/mp4\r\n` +
        `X-Recording-Duration-Ms: 1000\r\nContent-Length: ${MAX_RECORDING_BYTES + 1}\r\n\r\n` +
        "0123456789abcdef",
    );
    const text = await response;
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))).toEqual({
      detail: `Upload declares ${MAX_RECORDING_BYTES + 1} bytes; the limit is ${MAX_RECORDING_BYTES}`,
    });
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
    expect(bot.body.recording).toBeNull();
  });
});

describe("meetbot serve", () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill("SIGTERM");
  });

  test("runs with umask 077, so the runners it starts write their files 0600 too", async () => {
    const dataDir = path.join(scratch, "served");
    const env = { ...process.env };
    delete env.DATABASE_URL; // SQLite in the data dir, whatever this test run uses
    child = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli.ts", "serve", "--port", "0", "--data-dir", dataDir],
      { env, stdio: ["ignore", "pipe", "inherit"] },
    );
    const started = child;
    await new Promise<void>((resolve, reject) => {
      let out = "";
      started.stdout?.on("data", (chunk) => {
        out += chunk.toString();
        if (out.includes("listening on")) resolve();
      });
      started.once("exit", (code) => reject(new Error(`meetbot serve exited ${code}`)));
    });
    const status = await readFile(`/proc/${started.pid}/status`, "utf8");
    expect(status).toMatch(/^Umask:\s+0077$/m);
    expect(await mode(dataDir)).toBe("700");
    for (const name of ["meetbot.sqlite", "meetbot.sqlite-wal", "meetbot.sqlite-shm", "jwt-secret"]) {
      expect([name, await mode(path.join(dataDir, name))]).toEqual([name, "600"]);
    }
  });
});
