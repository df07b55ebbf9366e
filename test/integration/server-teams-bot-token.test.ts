// Own server (startBuiltApp), not the fixture: its TestClock moves past the tokens' expiry.
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  REFRESH_BEFORE_EXPIRY_MS,
  TEAMS_BOT_TOKEN_SCOPE,
  TeamsBotTokens,
} from "../../src/server/auth/teams-bot-token.js";
import { resolveConfig } from "../../src/server/config.js";
import type { Db } from "../../src/server/db/database.js";
import { StartupError } from "../../src/server/startup-error.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import { testDialect } from "../helpers/postgres.js";
import {
  Api,
  type ApiResponse,
  openServerDatabase,
  registerUser,
  type RequestOptions,
  TEST_MEETING,
  type TestUser,
} from "../helpers/server-harness.js";

/**
 * Teams bot identification (MEETBOT_TEAMS_BOT_*): the server mints a client-credentials token
 * from a stand-in of Microsoft's token endpoint (real HTTP on 127.0.0.1), shares it between the
 * Teams bots it deploys until 5 minutes before it expires, puts it in their BotConfig only, and
 * deploys without it when the endpoint fails. The token and the client secret are in no answer,
 * log line, webhook or stored row.
 */

/** One request the stand-in got. */
interface TokenRequest {
  method: string;
  path: string;
  contentType: string;
  form: Record<string, string>;
}

type Answer =
  | { kind: "token"; expiresIn: number | string }
  | { kind: "raw"; status: number; contentType: string; body: string }
  | { kind: "hangUp" }
  | { kind: "hold" };

/** Microsoft's token endpoint, as far as the client-credentials flow goes. */
class TokenEndpoint {
  readonly requests: TokenRequest[] = [];
  /** Every token it handed out, in order. */
  readonly issued: string[] = [];
  answer: Answer = { kind: "token", expiresIn: 3599 };
  private readonly held: Array<() => void> = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/tenant-1/oauth2/v2.0/token`;
  }

  async close(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Answers every held request with a token. */
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.requests.push({
      method: req.method ?? "",
      path: req.url ?? "",
      contentType: req.headers["content-type"] ?? "",
      form: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString())),
    });
    const answer = this.answer;
    if (answer.kind === "hangUp") return void req.socket.destroy();
    if (answer.kind === "raw") {
      res.writeHead(answer.status, { "content-type": answer.contentType }).end(answer.body);
      return;
    }
    const send = (expiresIn: number | string) => {
      const token = `eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.teams-${this.issued.length}-${randomUUID()}.sig`;
      this.issued.push(token);
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(
        JSON.stringify({
          token_type: "Bearer",
          expires_in: expiresIn,
          ext_expires_in: expiresIn,
          access_token: token,
        }),
      );
    };
    if (answer.kind === "hold") this.held.push(() => send(3599));
    else send(answer.expiresIn);
  }
}

/** Every answer this test got, as text, to look for a secret in. */
class RecordingApi extends Api {
  readonly answers: string[] = [];
  override async request<T>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const res = await super.request<T>(method, path, opts);
    this.answers.push(`${method} ${path} ${res.status} ${JSON.stringify(res.body)}`);
    return res;
  }
}

const TENANT = "tenant-1.onmicrosoft.com";
const CLIENT_ID = "00000000-aaaa-bbbb-cccc-000000000001";
const CLIENT_SECRET = `secret~${randomBytes(18).toString("base64url")}`;
const TEAMS_MEETING = {
  platform: "teams",
  meetingId: "19:meeting_token@thread.v2",
  tenantId: "tenant-1",
  organizerId: "organizer-1",
};

const endpoint = new TokenEndpoint();
const clock = new TestClock();
const logLines: string[] = [];
let server: BuiltApp;
let api: RecordingApi;
let user: TestUser;
let db: Db;

beforeAll(async () => {
  await endpoint.start();
  server = await startBuiltApp({
    clock,
    env: {
      MEETBOT_TEAMS_BOT_TENANT_ID: TENANT,
      MEETBOT_TEAMS_BOT_CLIENT_ID: CLIENT_ID,
      MEETBOT_TEAMS_BOT_CLIENT_SECRET: CLIENT_SECRET,
      MEETBOT_TEAMS_TOKEN_URL: endpoint.url,
      // Deliveries stay queued, to be read back; their target may be a local address.
      MEETBOT_WEBHOOK_WORKER: "0",
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
    },
    logLevel: "trace",
    logStream: { write: (line) => void logLines.push(line) },
  });
  api = new RecordingApi(server.url);
  user = await registerUser(api);
  const hook = await api.post("/v1/webhooks", {
    token: user.token,
    body: { name: "all", url: "http://127.0.0.1:9/hook", events: ["*"] },
  });
  expect(hook.status).toBe(201);
  db = await openServerDatabase(server);
});
afterAll(async () => {
  await db?.close();
  await server?.close();
  await endpoint.close();
});
beforeEach(() => {
  endpoint.answer = { kind: "token", expiresIn: 3599 };
});

async function createBot(meetingInfo: object = TEAMS_MEETING): Promise<number> {
  const res = await api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo, meetingTitle: "Weekly sync", botDisplayName: "Notetaker" },
  });
  if (res.status !== 201) throw new Error(`create bot: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** Deploys the bot; answers the deploy and the BotConfig its runner got. */
async function deploy(botId: number) {
  const res = await api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ message: "Deployment started", botId, status: "DEPLOYING" });
  return server.launcher.configFor(botId);
}

const deployNew = async (meetingInfo: object = TEAMS_MEETING) => deploy(await createBot(meetingInfo));

async function logsOf(botId: number): Promise<Array<{ level: string; message: string }>> {
  const res = await api.get(`/v1/bots/${botId}/logs`, { token: user.token });
  expect(res.status).toBe(200);
  return res.body;
}

describe("a Teams bot's BotConfig", () => {
  it("carries the token minted with the app's client credentials; a Google bot's carries none", async () => {
    const before = endpoint.requests.length;
    const teams = await deployNew();
    expect(endpoint.requests.length).toBe(before + 1);
    expect(endpoint.requests.at(-1)).toEqual({
      method: "POST",
      path: "/tenant-1/oauth2/v2.0/token",
      contentType: "application/x-www-form-urlencoded",
      form: {
        grant_type: "client_credentials",
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        scope: "https://ic3.teams.office.com/.default",
      },
    });
    expect(teams.teamsBotToken).toBe(endpoint.issued.at(-1));

    const google = await deployNew(TEST_MEETING);
    expect(google.teamsBotToken).toBeUndefined();
    expect(JSON.stringify(google)).not.toContain(endpoint.issued.at(-1));
    expect(endpoint.requests.length).toBe(before + 1);
  });

  it("shares one token between deploys, one after another and at once, until 5 minutes before it expires", async () => {
    clock.advance(24 * 60 * 60 * 1000); // past any token minted before
    const first = await deployNew();
    const minted = endpoint.requests.length;
    const second = await deployNew();
    const [third, fourth] = await Promise.all([deployNew(), deployNew()]);
    expect(endpoint.requests.length).toBe(minted);
    for (const config of [second, third, fourth]) expect(config.teamsBotToken).toBe(first.teamsBotToken);

    // 3599 s: still good a minute before the last 5 minutes (counted from when it was asked for) ...
    clock.advance(3599_000 - REFRESH_BEFORE_EXPIRY_MS - 60_000);
    expect((await deployNew()).teamsBotToken).toBe(first.teamsBotToken);
    expect(endpoint.requests.length).toBe(minted);
    // ... and minted again once fewer than 5 minutes are left.
    clock.advance(60_000);
    const renewed = await deployNew();
    expect(endpoint.requests.length).toBe(minted + 1);
    expect(renewed.teamsBotToken).toBe(endpoint.issued.at(-1));
    expect(renewed.teamsBotToken).not.toBe(first.teamsBotToken);
  });

  it("waits for the one mint in flight: bots deploying together send one request", async () => {
    clock.advance(24 * 60 * 60 * 1000);
    endpoint.answer = { kind: "hold" };
    const before = endpoint.requests.length;
    const ids = await Promise.all([createBot(), createBot(), createBot()]);
    const deploys = ids.map((id) => api.post(`/v1/bots/${id}/deploy`, { token: user.token }));
    // Every bot is DEPLOYING (its transaction is done) before the one request is answered.
    for (const id of ids) {
      for (;;) {
        const bot = await api.get(`/v1/bots/${id}`, { token: user.token });
        if (bot.body.status === "DEPLOYING" && endpoint.requests.length > before) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    endpoint.release();
    expect((await Promise.all(deploys)).map((res) => res.status)).toEqual([200, 200, 200]);
    expect(endpoint.requests.length).toBe(before + 1);
    for (const id of ids) expect(server.launcher.configFor(id).teamsBotToken).toBe(endpoint.issued.at(-1));
  });

  it("mints at every deploy a token that expires in under 5 minutes (expires_in as a string too)", async () => {
    clock.advance(24 * 60 * 60 * 1000);
    endpoint.answer = { kind: "token", expiresIn: 240 };
    const before = endpoint.requests.length;
    const first = await deployNew();
    endpoint.answer = { kind: "token", expiresIn: "120" };
    const second = await deployNew();
    expect(endpoint.requests.length).toBe(before + 2);
    expect([first.teamsBotToken, second.teamsBotToken]).toEqual(endpoint.issued.slice(-2));
    expect(first.teamsBotToken).not.toBe(second.teamsBotToken);
  });
});

describe("a mint that fails", () => {
  const failures: Array<[string, Answer, string]> = [
    [
      "a 401 that echoes the request",
      {
        kind: "raw",
        status: 401,
        contentType: "application/json",
        body: JSON.stringify({
          error: "invalid_client",
          error_description: `AADSTS7000215: Invalid client secret provided: ${CLIENT_SECRET}`,
          error_codes: [7000215],
        }),
      },
      "the token endpoint answered HTTP 401: invalid_client, AADSTS7000215",
    ],
    [
      "a 503 page",
      { kind: "raw", status: 503, contentType: "text/html", body: `<h1>down</h1>${CLIENT_SECRET}` },
      "the token endpoint answered HTTP 503",
    ],
    [
      "a 200 that is not JSON",
      {
        kind: "raw",
        status: 200,
        contentType: "application/json",
        body: `{"access_token": "${CLIENT_SECRET}`,
      },
      "the token endpoint's answer is not JSON",
    ],
    [
      "a 200 without a token",
      {
        kind: "raw",
        status: 200,
        contentType: "application/json",
        body: JSON.stringify({ token_type: "Bearer", expires_in: 3599 }),
      },
      "the token endpoint's answer has no usable token",
    ],
    ["a connection closed unanswered", { kind: "hangUp" }, "the token endpoint could not be reached ("],
  ];
  for (const [what, answer, reason] of failures) {
    it(`${what}: the bot deploys without a token, its log says why, the next deploy mints again`, async () => {
      clock.advance(24 * 60 * 60 * 1000);
      endpoint.answer = answer;
      const before = endpoint.requests.length;
      const botId = await createBot();
      const config = await deploy(botId);
      expect(endpoint.requests.length).toBe(before + 1);
      expect(config.teamsBotToken).toBeUndefined();
      expect(config.meetingInfo).toMatchObject({ platform: "teams" });
      const warnings = (await logsOf(botId)).filter((line) => line.level === "warn");
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toContain(`Teams bot identification unavailable: ${reason}`);
      expect(warnings[0]!.message).toContain("the next deploy tries again");
      expect(warnings[0]!.message).not.toContain(CLIENT_SECRET);
      const bot = await api.get(`/v1/bots/${botId}`, { token: user.token });
      expect(bot.body.status).toBe("DEPLOYING");

      endpoint.answer = { kind: "token", expiresIn: 3599 };
      const next = await deployNew();
      expect(endpoint.requests.length).toBe(before + 2);
      expect(next.teamsBotToken).toBe(endpoint.issued.at(-1));
    });
  }

  it("is shared by the bots that waited for it, and not remembered", async () => {
    clock.advance(24 * 60 * 60 * 1000);
    endpoint.answer = { kind: "raw", status: 500, contentType: "text/plain", body: "oops" };
    const before = endpoint.requests.length;
    const tokens = new TeamsBotTokens({
      tenantId: TENANT,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      tokenUrl: endpoint.url,
    });
    const both = await Promise.allSettled([tokens.token(), tokens.token()]);
    expect(both.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(endpoint.requests.length).toBe(before + 1);
    endpoint.answer = { kind: "token", expiresIn: 3599 };
    expect(await tokens.token()).toBe(endpoint.issued.at(-1));
    expect(endpoint.requests.at(-1)?.form.scope).toBe(TEAMS_BOT_TOKEN_SCOPE);
  });
});

describe("the settings", () => {
  const resolve = (env: NodeJS.ProcessEnv) => resolveConfig({ dataDir: "/tmp/meetbot-config-test", env });
  const full = {
    MEETBOT_TEAMS_BOT_TENANT_ID: "72f988bf-86f1-41af-91ab-2d7cd011db47",
    MEETBOT_TEAMS_BOT_CLIENT_ID: CLIENT_ID,
    MEETBOT_TEAMS_BOT_CLIENT_SECRET: CLIENT_SECRET,
  };
  const refusal = (env: NodeJS.ProcessEnv): string => {
    try {
      resolve(env);
    } catch (err) {
      expect(err).toBeInstanceOf(StartupError);
      return (err as Error).message;
    }
    throw new Error("accepted");
  };

  it("are off when none is set, and Microsoft's endpoint for the tenant by default", () => {
    expect(resolve({}).teamsBotIdentity).toBeUndefined();
    expect(resolve(full).teamsBotIdentity).toEqual({
      tenantId: "72f988bf-86f1-41af-91ab-2d7cd011db47",
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      tokenUrl: "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token",
    });
  });

  it("are all three or none: one line naming what is missing, never the secret", () => {
    const { MEETBOT_TEAMS_BOT_CLIENT_ID: _, ...noClientId } = full;
    expect(refusal(noClientId)).toBe(
      "MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID and MEETBOT_TEAMS_BOT_CLIENT_SECRET: set all three, or none (missing MEETBOT_TEAMS_BOT_CLIENT_ID)",
    );
    expect(refusal({ MEETBOT_TEAMS_BOT_CLIENT_SECRET: CLIENT_SECRET })).toBe(
      "MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID and MEETBOT_TEAMS_BOT_CLIENT_SECRET: set all three, or none (missing MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID)",
    );
    const { MEETBOT_TEAMS_BOT_CLIENT_SECRET: __, ...noSecret } = full;
    expect(refusal({ ...noSecret, MEETBOT_TEAMS_BOT_CLIENT_SECRET: "  " })).toContain(
      "(missing MEETBOT_TEAMS_BOT_CLIENT_SECRET)",
    );
    expect(refusal({ MEETBOT_TEAMS_TOKEN_URL: "https://login.example/token" })).toMatch(
      /^MEETBOT_TEAMS_TOKEN_URL is set but /,
    );
  });

  it("take a token URL that is https, or http only on loopback", () => {
    expect(resolve({ ...full, MEETBOT_TEAMS_TOKEN_URL: endpoint.url }).teamsBotIdentity?.tokenUrl).toBe(
      endpoint.url,
    );
    expect(
      resolve({ ...full, MEETBOT_TEAMS_TOKEN_URL: "https://login.proxy.example/t/token" }).teamsBotIdentity
        ?.tokenUrl,
    ).toBe("https://login.proxy.example/t/token");
    const plain = refusal({ ...full, MEETBOT_TEAMS_TOKEN_URL: "http://login.proxy.example/t/token" });
    expect(plain).toMatch(/^MEETBOT_TEAMS_TOKEN_URL must be an https URL/);
    expect(plain).not.toContain(CLIENT_SECRET);
    expect(refusal({ ...full, MEETBOT_TEAMS_TOKEN_URL: "not a url" })).toMatch(/is not a URL/);
    expect(refusal({ ...full, MEETBOT_TEAMS_BOT_TENANT_ID: "a/b?c" })).toMatch(
      /^MEETBOT_TEAMS_BOT_TENANT_ID must be a tenant id/,
    );
  });
});

describe("the token and the client secret go nowhere else", () => {
  // Last in this file: it reads what every test above made the server say and store.
  it("are in no answer, no log line, no webhook delivery and no stored row", async () => {
    const secrets = [CLIENT_SECRET, ...endpoint.issued];
    expect(endpoint.issued.length).toBeGreaterThan(8);
    expect(api.answers.length).toBeGreaterThan(40);
    expect(logLines.length).toBeGreaterThan(40);
    // The failures were logged by the server too, with their reason.
    expect(logLines.filter((line) => line.includes("no Teams bot-identification token")).length).toBe(5);
    const leaks = (texts: string[]) =>
      texts.filter((text) => secrets.some((secret) => text.includes(secret))).map((t) => t.slice(0, 200));
    expect(leaks(api.answers)).toEqual([]);
    expect(leaks(logLines)).toEqual([]);

    const payloads = await db.kysely.selectFrom("webhook_deliveries").select("payload").execute();
    expect(payloads.length).toBeGreaterThan(10);
    expect(leaks(payloads.map((p) => p.payload))).toEqual([]);
    const stored: unknown[] = [];
    for (const table of ["bots", "bot_logs", "bot_events", "aggregated_events"] as const)
      stored.push(...(await db.kysely.selectFrom(table).selectAll().execute()));
    expect(stored.length).toBeGreaterThan(40);
    expect(leaks(stored.map((row) => JSON.stringify(row)))).toEqual([]);
    if (testDialect === "sqlite") {
      const file = `${server.dataDir}/meetbot.sqlite`;
      const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1"));
      expect(leaks(bytes)).toEqual([]);
    }
  });
});
