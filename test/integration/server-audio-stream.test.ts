import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe } from "vitest";
import { StartupError } from "../../src/server/startup-error.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import {
  defined,
  deployedBot,
  openServerDatabase,
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";
import { expect, readRow, test } from "../helpers/fixtures.js";

/**
 * The bot option audioStream (a live audio channel for agents) on the server's side: validated at
 * create and PATCH (ws/wss only, the webhooks' address rule, the sample rates), the token stored
 * sealed and never answered, and the runner's BotConfig carrying it with the server's address rule.
 */
let server: TestServer;
let owner: TestUser;
const TOKEN = "agent-token-0123456789";

test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  webhooks: { worker: false },
  logLevel: "error",
  env: { MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
});

const create = (body: Record<string, unknown>, target = server) =>
  target.api.post("/v1/bots", {
    token: owner.token,
    body: { meetingInfo: TEST_MEETING, botDisplayName: "Agent", ...body },
  });

describe("bot option audioStream", () => {
  test("is answered without its token, stored sealed, and given to the runner whole", async ({ db }) => {
    const url = "wss://agent.example.com/meet?room=7";
    const { botId, config } = await deployedBot(server, owner, {
      audioStream: { url, sampleRate: 24000, token: TOKEN },
    });
    const shown = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(shown.body.audioStream).toEqual({ url, sampleRate: 24000, hasToken: true });
    expect(JSON.stringify(shown.body)).not.toContain(TOKEN);
    const list = await server.api.get("/v1/bots", { token: owner.token });
    expect(JSON.stringify(list.body)).not.toContain(TOKEN);
    // The runner gets the token, and the server's address rule (private targets refused here).
    expect(config.audioStream).toEqual({ url, sampleRate: 24000, token: TOKEN, allowPrivateTargets: false });
    // At rest the token is ciphertext.
    const row = defined(await readRow(db, "bots", botId), `bot ${botId}'s row`);
    expect(`${row.audio_stream} ${row.audio_stream_token}`).not.toContain(TOKEN);
    expect(JSON.parse(row.audio_stream_token as string)).toMatchObject({ keyId: "default" });
  });

  test("defaults to 16 kHz, without a token, and is null when not asked", async () => {
    const res = await create({ audioStream: { url: "ws://agent.example.com/a" } });
    expect(res.status).toBe(201);
    expect(res.body.audioStream).toEqual({
      url: "ws://agent.example.com/a",
      sampleRate: 16000,
      hasToken: false,
    });
    expect((await create({})).body.audioStream).toBeNull();
  });

  test.each([
    [{ url: "https://agent.example.com/" }, ["body", "audioStream", "url"], /ws:\/\/ or wss:\/\//],
    [{ url: "ws://agent.example.com/", sampleRate: 8000 }, ["body", "audioStream", "sampleRate"], /./],
    [{ url: "ws://127.0.0.1:9000/" }, ["body", "audioStream", "url"], /loopback.*MEETBOT_ALLOW_PRIVATE/],
    [{ url: "wss://10.1.2.3/" }, ["body", "audioStream", "url"], /private address/],
    [{ url: "ws://169.254.169.254/" }, ["body", "audioStream", "url"], /metadata/],
    [{ url: "ws://localhost:9000/" }, ["body", "audioStream", "url"], /loopback name/],
    [{ url: "ws://agent.example.com/", token: "" }, ["body", "audioStream", "token"], /./],
  ])("refuses %j with a 422 at its field", async (audioStream, loc, message) => {
    const res = await create({ audioStream });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(validationIssues(res.body)[0]?.loc).toEqual(loc);
    expect(validationIssues(res.body)[0]?.msg).toMatch(message);
  });

  test("is replaced whole by a PATCH (the token too) and removed with null; checked as at create", async () => {
    const created = await create({ audioStream: { url: "ws://agent.example.com/a", token: TOKEN } });
    const id = created.body.id;
    const patch = (audioStream: unknown) =>
      server.api.patch(`/v1/bots/${id}`, { token: owner.token, body: { audioStream } });
    const replaced = await patch({ url: "wss://agent.example.com/b", sampleRate: 24000 });
    expect(replaced.status).toBe(200);
    expect(replaced.body.audioStream).toEqual({
      url: "wss://agent.example.com/b",
      sampleRate: 24000,
      hasToken: false,
    });
    const refused = await patch({ url: "ws://192.168.1.5/" });
    expect(refused.status).toBe(422);
    expect(validationIssues(refused.body)[0]?.loc).toEqual(["body", "audioStream", "url"]);
    const removed = await patch(null);
    expect(removed.body.audioStream).toBeNull();
  });

  test("allows loopback agents where webhooks may reach them, and tells the runner so", async () => {
    const dev = await startTestServer({
      logLevel: "error",
      env: { MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1" },
    });
    try {
      const user = await registerUser(dev.api);
      const { config } = await deployedBot(dev, user, { audioStream: { url: "ws://127.0.0.1:9000/agent" } });
      expect(config.audioStream).toEqual({
        url: "ws://127.0.0.1:9000/agent",
        sampleRate: 16000,
        allowPrivateTargets: true,
      });
      // Without MEETBOT_SECRET_KEY a token cannot be stored: a 422 that says why.
      const res = await dev.api.post("/v1/bots", {
        token: user.token,
        body: { meetingInfo: TEST_MEETING, audioStream: { url: "ws://127.0.0.1:9000/", token: TOKEN } },
      });
      expect(res.status).toBe(422);
      expect(validationIssues(res.body)[0]).toMatchObject({ loc: ["body", "audioStream", "token"] });
      expect(validationIssues(res.body)[0]?.msg).toMatch(/MEETBOT_SECRET_KEY/);
    } finally {
      await dev.close();
    }
  });
});

describe("audio-stream tokens and MEETBOT_SECRET_KEY", () => {
  test("rotate like bot-account sessions: refused without their key, rewritten under the first", async () => {
    const K1 = randomBytes(32).toString("base64");
    const K2 = randomBytes(32).toString("base64");
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-stream-keys-"));
    const start = (key: string | undefined) =>
      startTestServer({
        dataDir,
        logLevel: "error",
        env: key === undefined ? {} : { MEETBOT_SECRET_KEY: key },
      });
    const keyIds = async (s: TestServer) => {
      const db = await openServerDatabase(s);
      try {
        const rows = await db.kysely.selectFrom("bots").select("audio_stream_token").execute();
        return rows.map((r) => (JSON.parse(r.audio_stream_token as string) as { keyId: string }).keyId);
      } finally {
        await db.close();
      }
    };
    try {
      const first = await start(`k1:${K1}`);
      const user = await registerUser(first.api);
      const created = await first.api.post("/v1/bots", {
        token: user.token,
        body: { meetingInfo: TEST_MEETING, audioStream: { url: "wss://agent.example.com/", token: TOKEN } },
      });
      expect(await keyIds(first)).toEqual(["k1"]);
      await first.close();

      const noKey = await start(undefined).catch((err: unknown) => err);
      expect(noKey).toBeInstanceOf(StartupError);
      expect((noKey as Error).message).toMatch(/MEETBOT_SECRET_KEY is not set, but 1 bot audio-stream token/);
      const wrongId = await start(`k2:${K2}`).catch((err: unknown) => err);
      expect(wrongId).toBeInstanceOf(StartupError);
      expect((wrongId as Error).message).toMatch(/no key with id "k1"/);

      const rotated = await start(`k2:${K2},k1:${K1}`);
      expect(await keyIds(rotated)).toEqual(["k2"]);
      await rotated.close();
      // The old key can go: the token opens under k2 alone and reaches the runner.
      const after = await start(`k2:${K2}`);
      try {
        const deployed = await after.api.post(`/v1/bots/${created.body.id}/deploy`, { token: user.token });
        expect(deployed.status).toBe(200);
        expect(after.launcher.configFor(created.body.id).audioStream?.token).toBe(TOKEN);
      } finally {
        await after.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await (await testDatabaseFor(dataDir))?.drop();
    }
  });
});
