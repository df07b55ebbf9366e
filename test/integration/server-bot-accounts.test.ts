// Own server (startBuiltApp), not the fixture: its TestClock moves the sessions' times.
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BotConfig, StorageState } from "../../src/core/index.js";
import type { Db } from "../../src/server/db/database.js";
import { StartupError } from "../../src/server/startup-error.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import { testDatabaseFor, testDialect } from "../helpers/postgres.js";
import {
  RecordingApi,
  FakeRunner,
  openServerDatabase,
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
  errorDetail,
  defined,
} from "../helpers/server-harness.js";

/**
 * Bot accounts (/v1/bot-accounts) and bots that sign in with them: the accounts' CRUD and
 * ownership, how deploys hold them (and never double-book one), their release, expiry and the
 * runner's session write-back; and that the session goes nowhere but into the BotConfig: not in
 * an answer, a log line, a webhook, or the database in clear.
 */

/** Every cookie and localStorage value of every session this test made contains one of these. */
const markers: string[] = [];

function newSession(label: string): StorageState {
  const marker = `cookie-${label}-${randomUUID()}`;
  markers.push(marker);
  const cookie = (name: string, value: string) => ({
    name,
    value,
    domain: ".google.com",
    path: "/",
    expires: -1,
    httpOnly: true,
    secure: true,
    sameSite: "Lax" as const,
  });
  return {
    cookies: [cookie("SID", marker), cookie("__Secure-1PSID", `${marker}-1p`)],
    origins: [
      { origin: "https://meet.google.com", localStorage: [{ name: "token", value: `${marker}-ls` }] },
    ],
  };
}

const KEY = randomBytes(32).toString("base64");
const clock = new TestClock();
const logLines: string[] = [];
let server: BuiltApp;
let api: RecordingApi;
let owner: TestUser;
let stranger: TestUser;
let webhookId: number;
/** A connection of the test's own to the server's database. */
let db: Db;

beforeAll(async () => {
  server = await startBuiltApp({
    clock,
    env: {
      MEETBOT_SECRET_KEY: `k1:${KEY}`,
      // Deliveries stay queued, to be read back; their target may be a local address.
      MEETBOT_WEBHOOK_WORKER: "0",
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
    },
    logLevel: "trace",
    logStream: { write: (line) => void logLines.push(line) },
  });
  api = new RecordingApi(server.url);
  owner = await registerUser(api, "Owner");
  stranger = await registerUser(api, "Stranger");
  const hook = await api.post("/v1/webhooks", {
    token: owner.token,
    body: { name: "all", url: "http://127.0.0.1:9/hook", events: ["*"] },
  });
  expect(hook.status).toBe(201);
  webhookId = hook.body.id;
  db = await openServerDatabase(server);
});
afterAll(async () => {
  await db?.close();
  await server?.close();
});

type Json = Record<string, unknown>;

async function createAccount(body: Json = {}, user = owner) {
  const res = await api.post("/v1/bot-accounts", {
    token: user.token,
    body: { platform: "google", name: "Notetaker", session: newSession("create"), ...body },
  });
  if (res.status !== 201) throw new Error(`create account: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const getAccount = async (id: number) =>
  (await api.get(`/v1/bot-accounts/${id}`, { token: owner.token })).body;

async function createBot(login: Json | undefined, user = owner): Promise<number> {
  const res = await api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, meetingTitle: "Weekly sync", ...(login ? { login } : {}) },
  });
  if (res.status !== 201) throw new Error(`create bot: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** Deploys a bot; its BotConfig (and a runner to play) when it went. */
async function deploy(botId: number, user = owner) {
  const res = await api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
  const config = res.status === 200 ? server.launcher.configFor(botId) : undefined;
  return { res, config, runner: config ? new FakeRunner(config) : undefined };
}

async function deployed(login: Json) {
  const botId = await createBot(login);
  const { res, config, runner } = await deploy(botId);
  if (!config || !runner) throw new Error(`deploy: ${res.status} ${JSON.stringify(res.body)}`);
  return { botId, config, runner, login: config.login as NonNullable<BotConfig["login"]> };
}

const kill = (botId: number) => api.post(`/v1/bots/${botId}/kill`, { token: owner.token });

/** The deliveries queued for the owner's webhook (the worker is off: they stay). */
async function deliveries(): Promise<{ event: string; botId: number | null; payload: string }[]> {
  const rows = await db.kysely
    .selectFrom("webhook_deliveries")
    .select(["event", "bot_id", "payload"])
    .where("webhook_id", "=", webhookId)
    .orderBy("id")
    .execute();
  return rows.map((row) => ({ event: row.event, botId: row.bot_id, payload: row.payload }));
}

/** The runner's session write-back. */
function writeBack(config: BotConfig, body: Json, token = config.callback.token) {
  return api.put(`/v1/bot-callbacks/${config.botId}/login-session`, { token, body });
}

const ACCOUNT_FIELDS = [
  "id",
  "platform",
  "name",
  "group",
  "maxConcurrent",
  "status",
  "inUse",
  "accountName",
  "accountEmail",
  "lastUsedAt",
  "lastCheckedAt",
  "sessionUpdatedAt",
  "createdAt",
].sort();

describe("bot accounts", () => {
  it("are created with their defaults and answered without their session", async () => {
    const session = newSession("crud");
    const res = await api.post("/v1/bot-accounts", {
      token: owner.token,
      body: { platform: "zoom", name: "  Sales bot ", session },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(ACCOUNT_FIELDS);
    expect(res.body).toMatchObject({
      platform: "zoom",
      name: "Sales bot",
      group: "default",
      maxConcurrent: 1,
      status: "unchecked",
      inUse: 0,
      accountName: null,
      accountEmail: null,
      lastUsedAt: null,
      lastCheckedAt: null,
    });
    expect(res.body.sessionUpdatedAt).toBe(res.body.createdAt);
    expect(await getAccount(res.body.id)).toEqual(res.body);
  });

  it("refuse a bad body with the spec's validation shape", async () => {
    const post = (body: Json) => api.post("/v1/bot-accounts", { token: owner.token, body });
    const valid = { platform: "google", name: "n", session: newSession("bad") };
    const locs = async (body: Json) => {
      const res = await post(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      return (res.body.detail as { loc: unknown[]; type: string }[]).map((d) => [d.loc.join("."), d.type]);
    };
    expect(await locs({ platform: "google", name: "n" })).toEqual([["body.session", "missing"]]);
    expect(await locs({ ...valid, platform: "skype" })).toEqual([["body.platform", "invalid_value"]]);
    expect(await locs({ ...valid, maxConcurrent: 51 })).toEqual([["body.maxConcurrent", "too_big"]]);
    expect(await locs({ ...valid, maxConcurrent: 0 })).toEqual([["body.maxConcurrent", "too_small"]]);
    expect(await locs({ ...valid, group: " " })).toEqual([["body.group", "too_small"]]);
    expect(await locs({ ...valid, session: { cookies: [], origins: [] } })).toEqual([
      ["body.session.cookies", "too_small"],
    ]);
    const badCookie = { ...valid.session.cookies[0], sameSite: "lax" };
    expect(await locs({ ...valid, session: { ...valid.session, cookies: [badCookie] } })).toEqual([
      ["body.session.cookies.0.sameSite", "invalid_value"],
    ]);
    // A validation answer names where, never the value.
    const res = await post({ ...valid, session: { ...valid.session, cookies: [badCookie] } });
    expect(JSON.stringify(res.body)).not.toContain(badCookie.value);
    // Over 1 MiB of JSON.
    const huge = {
      ...valid,
      session: {
        ...valid.session,
        origins: [{ origin: "https://x", localStorage: [{ name: "a", value: "x".repeat(1_100_000) }] }],
      },
    };
    expect((await post(huge)).status).toBe(413);
  });

  it("are listed newest first, filtered by platform, group and status, paginated like bots", async () => {
    const user = await registerUser(api);
    const a = await createAccount({ platform: "teams", group: "sales" }, user);
    const b = await createAccount({ platform: "teams", group: "support" }, user);
    const c = await createAccount({ platform: "zoom", group: "sales" }, user);
    await api.patch(`/v1/bot-accounts/${c.id}`, { token: user.token, body: { disabled: true } });
    const ids = async (query: `?${string}` | "") => {
      const res = await api.get(`/v1/bot-accounts${query}`, { token: user.token });
      expect(res.status, query).toBe(200);
      return { ids: res.body.botAccounts.map((x: { id: number }) => x.id), total: res.body.total };
    };
    expect(await ids("")).toEqual({ ids: [c.id, b.id, a.id], total: 3 });
    expect(await ids("?platform=teams")).toEqual({ ids: [b.id, a.id], total: 2 });
    expect(await ids("?group=sales")).toEqual({ ids: [c.id, a.id], total: 2 });
    expect(await ids("?status=disabled")).toEqual({ ids: [c.id], total: 1 });
    expect(await ids("?status=unchecked&group=sales")).toEqual({ ids: [a.id], total: 1 });
    expect(await ids("?page=2&page_size=2")).toEqual({ ids: [a.id], total: 3 });
    const bad = await api.get("/v1/bot-accounts?page_size=101&status=gone", { token: user.token });
    expect(bad.status).toBe(422);
    expect(validationIssues(bad.body).map((d) => d.loc.join("."))).toEqual([
      "query.page_size",
      "query.status",
    ]);
  });

  it("are changed by PATCH: name, group, maxConcurrent, disabled; a new session makes them unchecked", async () => {
    const account = await createAccount();
    const patch = (body: Json) => api.patch(`/v1/bot-accounts/${account.id}`, { token: owner.token, body });
    const renamed = await patch({ name: "Renamed", group: "night", maxConcurrent: 3 });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      name: "Renamed",
      group: "night",
      maxConcurrent: 3,
      status: "unchecked",
    });
    expect((await patch({ disabled: true })).body.status).toBe("disabled");
    expect((await patch({ disabled: false })).body.status).toBe("unchecked");
    expect((await patch({ status: "active" })).status).toBe(422);
    expect((await patch({ maxConcurrent: 51 })).status).toBe(422);
    clock.advance(1000);
    const replaced = await patch({ session: newSession("patch") });
    expect(replaced.status).toBe(200);
    expect(replaced.body.sessionUpdatedAt > account.sessionUpdatedAt!).toBe(true);
    expect(Object.keys(replaced.body).sort()).toEqual(ACCOUNT_FIELDS);
  });

  it("are deleted with 204, and then gone", async () => {
    const account = await createAccount();
    const res = await api.delete(`/v1/bot-accounts/${account.id}`, { token: owner.token });
    expect(res.status).toBe(204);
    expect(res.body).toBe("");
    expect((await api.get(`/v1/bot-accounts/${account.id}`, { token: owner.token })).status).toBe(404);
  });

  it("belong to their user: another user's is a 404 exactly like a missing one, and stays as it was", async () => {
    const account = await createAccount({ name: "Mine" });
    for (const [method, body] of [
      ["GET", undefined],
      ["PATCH", { name: "hijacked" }],
      ["DELETE", undefined],
    ] as const) {
      const foreign = await api.request(method, `/v1/bot-accounts/${account.id}`, {
        token: stranger.token,
        ...(body ? { body } : {}),
      });
      const missing = await api.request(method, "/v1/bot-accounts/999999", {
        token: stranger.token,
        ...(body ? { body } : {}),
      });
      expect(foreign.status, method).toBe(404);
      expect(foreign.body).toEqual(missing.body);
      expect(foreign.body).toEqual({ detail: "Bot account not found" });
    }
    expect(await getAccount(account.id)).toMatchObject({ name: "Mine" });
    // The owner's API key reaches it as the owner's access token does.
    const key = await api.post("/v1/api-keys", { token: owner.token, body: { name: "accounts" } });
    const byKey = await api.get(`/v1/bot-accounts/${account.id}`, { token: key.body.key });
    expect(byKey.status).toBe(200);
    expect(byKey.body).toEqual(await getAccount(account.id));
    const listed = await api.get("/v1/bot-accounts", { token: stranger.token });
    expect(listed.body.botAccounts.map((a: { id: number }) => a.id)).not.toContain(account.id);
    // Nor can another user's bot sign in with it.
    const bot = await api.post("/v1/bots", {
      token: stranger.token,
      body: { meetingInfo: TEST_MEETING, login: { mode: "always", accountId: account.id } },
    });
    expect(bot.status).toBe(422);
    expect(bot.body.detail).toEqual([
      {
        loc: ["body", "login", "accountId"],
        msg: `no bot account ${account.id} of yours`,
        type: "value_error",
      },
    ]);
  });
});

describe("a bot's login option", () => {
  it("is shown on every bot answer, checked against the bot's platform, and changed by PATCH", async () => {
    const zoom = await createAccount({ platform: "zoom" });
    const google = await createAccount({ group: "opts" });
    const refused = await api.post("/v1/bots", {
      token: owner.token,
      body: { meetingInfo: TEST_MEETING, login: { mode: "always", accountId: zoom.id } },
    });
    expect(refused.status).toBe(422);
    expect(validationIssues(refused.body)[0]?.msg).toBe(`bot account ${zoom.id} is for zoom, not google`);
    const both = await api.post("/v1/bots", {
      token: owner.token,
      body: { meetingInfo: TEST_MEETING, login: { mode: "always", accountId: google.id, group: "x" } },
    });
    expect(both.status).toBe(422);
    expect(validationIssues(both.body)[0]?.loc).toEqual(["body", "login", "group"]);
    const badMode = await api.post("/v1/bots", {
      token: owner.token,
      body: { meetingInfo: TEST_MEETING, login: { mode: "sometimes" } },
    });
    expect(validationIssues(badMode.body)[0]?.loc).toEqual(["body", "login", "mode"]);

    const botId = await createBot({ mode: "only_if_required" });
    const shown = await api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(shown.body.login).toEqual({
      mode: "only_if_required",
      accountId: null,
      group: "default",
      assignedAccountId: null,
    });
    const anonymous = await createBot(undefined);
    expect((await api.get(`/v1/bots/${anonymous}`, { token: owner.token })).body.login).toBeNull();

    const patch = (body: Json) => api.patch(`/v1/bots/${botId}`, { token: owner.token, body });
    expect((await patch({ login: { mode: "always", accountId: google.id } })).body.login).toEqual({
      mode: "always",
      accountId: google.id,
      group: null,
      assignedAccountId: null,
    });
    // The platform it would join on no longer fits the account.
    const moved = await patch({ meetingInfo: { platform: "zoom", meetingId: "123" } });
    expect(moved.status).toBe(422);
    expect(validationIssues(moved.body)[0]?.loc).toEqual(["body", "login", "accountId"]);
    expect((await patch({ login: null })).body.login).toBeNull();
    const listed = await api.get("/v1/bots", { token: owner.token });
    expect(listed.body.bots.every((b: Json) => "login" in b)).toBe(true);
  });
});

describe("deploying a bot with a login", () => {
  it("gives the runner the account's session in its BotConfig, and only there", async () => {
    const session = newSession("config");
    const account = await createAccount({ group: "config", session });
    clock.advance(1000);
    const { botId, config, login } = await deployed({ mode: "always", group: "config" });
    expect(login).toEqual({ mode: "always", accountId: account.id, accountName: null, session });
    const bot = await api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body.login).toEqual({
      mode: "always",
      accountId: null,
      group: "config",
      assignedAccountId: account.id,
    });
    const held = await getAccount(account.id);
    expect(held.inUse).toBe(1);
    expect(defined(held.lastUsedAt, "lastUsedAt") > held.createdAt).toBe(true);
    // An anonymous bot's config has none.
    const plain = await createBot(undefined);
    expect((await deploy(plain)).config?.login).toBeUndefined();
    await kill(botId);
    expect(config.login?.session).toEqual(session);
  });

  it("gives each bot its own account of a group; the next one is FATAL LOGIN_UNAVAILABLE at once", async () => {
    const a = await createAccount({ group: "pair" });
    const b = await createAccount({ group: "pair" });
    const first = await deployed({ mode: "always", group: "pair" });
    const second = await deployed({ mode: "always", group: "pair" });
    expect([first.login.accountId, second.login.accountId].sort()).toEqual([a.id, b.id].sort());
    expect(await getAccount(a.id)).toMatchObject({ inUse: 1 });
    expect(await getAccount(b.id)).toMatchObject({ inUse: 1 });

    const third = await createBot({ mode: "always", group: "pair" });
    const { res } = await deploy(third);
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(
      /^Bot could not be deployed: No google bot account of group "pair" is free/,
    );
    expect(server.launcher.launched.some((c) => c.botId === third)).toBe(false);
    const failed = await api.get(`/v1/bots/${third}`, { token: owner.token });
    expect(failed.body).toMatchObject({ status: "FATAL", deploymentError: { code: "LOGIN_UNAVAILABLE" } });
    expect(defined(failed.body.deploymentError, "deploymentError").message).toContain('group "pair"');
    // Its runner never ran: bot.ended goes out now, not an hour later.
    const sent = (await deliveries()).filter((d) => d.botId === third).map((d) => d.event);
    expect(sent).toEqual(expect.arrayContaining(["bot.deploying", "bot.error", "bot.ended"]));
    // A group with no account at all says so.
    const none = await createBot({ mode: "always", group: "nobody" });
    expect((await deploy(none)).res.body.detail).toBe(
      'Bot could not be deployed: No google bot account in group "nobody"',
    );
    await kill(first.botId);
    await kill(second.botId);
  });

  it("frees the account when the runner reports DONE or its own FATAL, or the server ends the bot", async () => {
    const account = await createAccount({ group: "release" });
    const login = { mode: "always", group: "release" };
    const inUse = async () => (await getAccount(account.id)).inUse;

    const done = await deployed(login);
    expect(await inUse()).toBe(1);
    expect((await deploy(await createBot(login))).res.status).toBe(503);
    for (const status of ["JOINING_CALL", "IN_CALL", "CALL_ENDED"] as const) await done.runner.status(status);
    expect(await inUse()).toBe(1);
    await done.runner.status("DONE");
    expect(await inUse()).toBe(0);

    const fatal = await deployed(login);
    expect(await inUse()).toBe(1);
    await fatal.runner.status("FATAL", { subCode: "JOIN_FAILED", message: "no join button" });
    expect(await inUse()).toBe(0);

    const killed = await deployed(login);
    expect((await kill(killed.botId)).status).toBe(200);
    expect(await inUse()).toBe(0);
    // Its runner's own last report after the kill releases nothing twice.
    await killed.runner.status("CALL_ENDED", { subCode: "LEFT_ON_REQUEST" });
    await killed.runner.status("DONE");
    expect(await inUse()).toBe(0);

    server.launcher.failNextLaunch();
    const launch = await deploy(await createBot(login));
    expect(launch.res.status).toBe(503);
    expect(await inUse()).toBe(0);
    expect((await deployed(login)).login.accountId).toBe(account.id);
  });

  it("picks the least recently used free account of the group", async () => {
    const [x, y, z] = [
      await createAccount({ group: "lru", name: "x" }),
      await createAccount({ group: "lru", name: "y" }),
      await createAccount({ group: "lru", name: "z" }),
    ];
    const picks: number[] = [];
    const use = async (login: Json) => {
      clock.advance(1000);
      const bot = await deployed(login);
      picks.push(bot.login.accountId);
      await kill(bot.botId);
    };
    const group = { mode: "always", group: "lru" };
    // Never used ones first, by id; then the oldest use.
    await use(group);
    await use(group);
    await use(group);
    await use({ mode: "always", accountId: x.id });
    await use(group);
    await use(group);
    expect(picks).toEqual([x.id, y.id, z.id, x.id, y.id, z.id]);
    // Disabled and expired accounts are skipped.
    await api.patch(`/v1/bot-accounts/${x.id}`, { token: owner.token, body: { disabled: true } });
    await use(group);
    expect(picks.at(-1)).toBe(y.id);
  });

  it("never gives one account to more bots than its maxConcurrent, however many deploy at once", async () => {
    const accounts = [
      await createAccount({ group: "race", maxConcurrent: 2 }),
      await createAccount({ group: "race", maxConcurrent: 1 }),
      await createAccount({ group: "race", maxConcurrent: 2 }),
    ];
    const bots = await Promise.all(
      Array.from({ length: 12 }, () => createBot({ mode: "always", group: "race" })),
    );
    const results = await Promise.all(bots.map((botId) => deploy(botId)));
    const went = results.filter((r) => r.res.status === 200);
    expect(went).toHaveLength(5);
    expect(results.filter((r) => r.res.status === 503)).toHaveLength(7);
    const given = went.map((r) => r.config?.login?.accountId);
    for (const account of accounts) {
      const holders = given.filter((id) => id === account.id).length;
      expect(holders, `account ${account.id}`).toBe(account.maxConcurrent);
      expect(await getAccount(account.id)).toMatchObject({ inUse: account.maxConcurrent });
    }
    await Promise.all(went.map((r) => kill(r.config!.botId)));
    for (const account of accounts) expect(await getAccount(account.id)).toMatchObject({ inUse: 0 });
  });

  it("refuses to delete an account a bot holds (409); once free it goes, and the bot forgets it", async () => {
    const account = await createAccount({ group: "del" });
    const bot = await deployed({ mode: "always", group: "del" });
    const busy = await api.delete(`/v1/bot-accounts/${account.id}`, { token: owner.token });
    expect(busy.status).toBe(409);
    expect(errorDetail(busy.body)).toMatch(/in use by 1 bot/);
    await kill(bot.botId);
    expect((await api.delete(`/v1/bot-accounts/${account.id}`, { token: owner.token })).status).toBe(204);
    const shown = await api.get(`/v1/bots/${bot.botId}`, { token: owner.token });
    expect(shown.body.login).toMatchObject({ group: "del", assignedAccountId: null });
    // A bot asking for the deleted account by id cannot go.
    const gone = await api.post("/v1/bots", {
      token: owner.token,
      body: { meetingInfo: TEST_MEETING, login: { mode: "always", accountId: account.id } },
    });
    expect(gone.status).toBe(422);
  });
});

describe("a session that no longer signs in", () => {
  it("makes its account expired, with bot_account.expired to the owner's webhooks", async () => {
    const account = await createAccount({ group: "expiry" });
    const bot = await deployed({ mode: "always", group: "expiry" });
    await bot.runner.status("JOINING_CALL");
    const res = await bot.runner.status("FATAL", { subCode: "SESSION_EXPIRED", message: "sign-in page" });
    expect(res.status).toBe(200);
    expect(await getAccount(account.id)).toMatchObject({ status: "expired", inUse: 0 });
    const sent = (await deliveries()).filter((d) => d.event === "bot_account.expired");
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.payload)).toMatchObject({
      event: "bot_account.expired",
      botId: bot.botId,
      data: { accountId: account.id, status: "expired" },
    });
    // An expired account is never picked; by id, the deploy says why.
    const byId = await deploy(await createBot({ mode: "always", accountId: account.id }));
    expect(byId.res.body.detail).toBe(
      `Bot could not be deployed: Bot account ${account.id} is expired: upload a new session`,
    );
    // A new session makes it usable again.
    await api.patch(`/v1/bot-accounts/${account.id}`, {
      token: owner.token,
      body: { session: newSession("renewed") },
    });
    expect(await getAccount(account.id)).toMatchObject({ status: "unchecked" });
  });

  it("says nothing about a newer session stored since the bot's deploy", async () => {
    const account = await createAccount({ group: "stale-expiry" });
    const bot = await deployed({ mode: "always", group: "stale-expiry" });
    await api.patch(`/v1/bot-accounts/${account.id}`, {
      token: owner.token,
      body: { session: newSession("newer") },
    });
    await bot.runner.status("FATAL", { subCode: "SESSION_EXPIRED" });
    expect(await getAccount(account.id)).toMatchObject({ status: "unchecked", inUse: 0 });
    const sent = (await deliveries()).filter(
      (d) => d.event === "bot_account.expired" && d.botId === bot.botId,
    );
    expect(sent).toEqual([]);
  });
});

describe("the runner's session write-back", () => {
  it("is kept while the account still has the session the bot was given; a newer one wins", async () => {
    const account = await createAccount({ group: "wb", maxConcurrent: 2 });
    const a = await deployed({ mode: "always", group: "wb" });
    const b = await deployed({ mode: "always", group: "wb" });

    clock.advance(1000);
    const fromB = newSession("from-b");
    const kept = await writeBack(b.config, {
      session: fromB,
      accountName: "Meet Notetaker",
      accountEmail: "bot@example.com",
    });
    expect(kept.status).toBe(200);
    expect(kept.body).toEqual({ kept: true });
    const after = await getAccount(account.id);
    expect(after).toMatchObject({
      status: "active",
      accountName: "Meet Notetaker",
      accountEmail: "bot@example.com",
    });
    expect(after.sessionUpdatedAt > after.createdAt).toBe(true);

    // A was given the older session: B's newer one wins.
    expect((await writeBack(a.config, { session: newSession("from-a") })).body).toEqual({ kept: false });
    // B's own next one follows its first (a retry whose answer was lost, too); null changes no name.
    const fromB2 = newSession("from-b2");
    expect((await writeBack(b.config, { session: fromB2, accountName: null })).body).toEqual({ kept: true });
    expect(await getAccount(account.id)).toMatchObject({ accountName: "Meet Notetaker" });

    // An upload by the owner wins over any bot deployed before it.
    const uploaded = newSession("uploaded");
    await api.patch(`/v1/bot-accounts/${account.id}`, { token: owner.token, body: { session: uploaded } });
    expect((await writeBack(b.config, { session: newSession("late-b") })).body).toEqual({ kept: false });
    await kill(a.botId);
    await kill(b.botId);

    // The next bot gets what was kept last: the upload.
    expect((await deployed({ mode: "always", group: "wb" })).login.session).toEqual(uploaded);
  });

  it("hands a kept session to the next bot, and takes only a bot with a login and its own token", async () => {
    const account = await createAccount({ group: "wb2" });
    const first = await deployed({ mode: "always", group: "wb2" });
    const fresh = newSession("fresh");
    expect((await writeBack(first.config, { session: fresh })).body).toEqual({ kept: true });
    await first.runner.status("FATAL", { subCode: "JOIN_FAILED" });
    // Its token died with its last report.
    expect((await writeBack(first.config, { session: fresh })).status).toBe(401);
    const second = await deployed({ mode: "always", accountId: account.id });
    expect(second.login.session).toEqual(fresh);

    const anonymous = await deploy(await createBot(undefined));
    const refused = await writeBack(anonymous.config!, { session: fresh });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ detail: "The bot holds no login" });
    expect((await writeBack(second.config, { session: fresh }, "not-the-token")).status).toBe(401);
    expect((await writeBack(second.config, { session: { cookies: [], origins: [] } })).status).toBe(422);
    // Another bot's token does not write this one's session.
    const other = await writeBack(
      { ...second.config, callback: anonymous.config!.callback },
      { session: fresh },
    );
    expect(other.status).toBe(401);
    await kill(second.botId);
  });
});

describe("the session goes nowhere else", () => {
  // Last in this file: it reads what every test above made the server say and store.
  it("is in no answer, no log line, no webhook delivery, and not in clear in the database", async () => {
    expect(markers.length).toBeGreaterThan(20);
    expect(api.answers.length).toBeGreaterThan(100);
    expect(logLines.length).toBeGreaterThan(100);
    const leaks = (texts: string[]) =>
      texts.filter((text) => markers.some((marker) => text.includes(marker))).map((t) => t.slice(0, 200));
    expect(leaks(api.answers)).toEqual([]);
    expect(leaks(logLines)).toEqual([]);

    const payloads = await db.kysely.selectFrom("webhook_deliveries").select("payload").execute();
    expect(payloads.length).toBeGreaterThan(20);
    expect(leaks(payloads.map((p) => p.payload))).toEqual([]);
    const rows = await db.kysely.selectFrom("bot_accounts").selectAll().execute();
    expect(rows.length).toBeGreaterThan(10);
    expect(leaks(rows.map((row) => JSON.stringify(row)))).toEqual([]);
    expect(leaks([JSON.stringify(await db.kysely.selectFrom("bots").selectAll().execute())])).toEqual([]);
    if (testDialect === "sqlite") {
      // The file itself, and its write-ahead log, byte for byte.
      const file = `${server.dataDir}/meetbot.sqlite`;
      const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1"));
      expect(bytes.join("").length).toBeGreaterThan(10_000);
      expect(leaks(bytes)).toEqual([]);
    }
  });
});

describe("MEETBOT_SECRET_KEY", () => {
  const K1 = randomBytes(32).toString("base64");
  const K2 = randomBytes(32).toString("base64");

  it("is needed to store an account: without it, 503 and nothing stored", async () => {
    const bare = await startTestServer({ env: {} });
    try {
      const user = await registerUser(bare.api);
      const res = await bare.api.post("/v1/bot-accounts", {
        token: user.token,
        body: { platform: "google", name: "n", session: newSession("no-key") },
      });
      expect(res.status).toBe(503);
      expect(res.body.detail).toMatch(/MEETBOT_SECRET_KEY/);
      expect((await bare.api.get("/v1/bot-accounts", { token: user.token })).body.total).toBe(0);
    } finally {
      await bare.close();
    }
  });

  it("rotates: a session stored under k1 opens once k2 is put first, and is rewritten under k2", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-keys-"));
    const start = (key: string | undefined) =>
      startTestServer({ dataDir, env: key === undefined ? {} : { MEETBOT_SECRET_KEY: key } });
    /** Deploys a bot signed in with `accountId` on `s`; the session its runner got. */
    const sessionGiven = async (s: TestServer, user: TestUser, accountId: number) => {
      const bot = await s.api.post("/v1/bots", {
        token: user.token,
        body: { meetingInfo: TEST_MEETING, login: { mode: "always", accountId } },
      });
      const res = await s.api.post(`/v1/bots/${bot.body.id}/deploy`, { token: user.token });
      if (res.status !== 200) return res.body.detail;
      await s.api.post(`/v1/bots/${bot.body.id}/kill`, { token: user.token });
      return s.launcher.configFor(bot.body.id).login?.session;
    };
    const keyIds = async (s: TestServer) => {
      const db = await openServerDatabase(s);
      try {
        return (await db.kysely.selectFrom("bot_accounts").select("session_key_id").execute()).map(
          (r) => r.session_key_id,
        );
      } finally {
        await db.close();
      }
    };
    const session = newSession("rotated");
    try {
      const first = await start(`k1:${K1}`);
      const user = await registerUser(first.api);
      const created = await first.api.post("/v1/bot-accounts", {
        token: user.token,
        body: { platform: "google", name: "n", session },
      });
      const accountId = created.body.id;
      expect(await keyIds(first)).toEqual(["k1"]);
      await first.close();

      // Refused, in one line each: no key at all, or none with the stored key's id.
      const noKey = await start(undefined).catch((err: unknown) => err);
      expect(noKey).toBeInstanceOf(StartupError);
      expect((noKey as Error).message).toBe(
        "MEETBOT_SECRET_KEY is not set, but 1 bot account session(s) are stored encrypted: set the key they were stored with",
      );
      const wrongId = await start(`k2:${K2}`).catch((err: unknown) => err);
      expect(wrongId).toBeInstanceOf(StartupError);
      expect((wrongId as Error).message).toBe(
        'MEETBOT_SECRET_KEY has no key with id "k1" (1 session(s)), which stored bot account sessions are encrypted with: add it as <id>:<base64>',
      );
      expect((wrongId as Error).message).not.toContain(K2);

      const rotated = await start(`k2:${K2},k1:${K1}`);
      expect(await keyIds(rotated)).toEqual(["k2"]);
      expect(await sessionGiven(rotated, user, accountId)).toEqual(session);
      await rotated.close();

      // k1 can go now.
      const k2Only = await start(`k2:${K2}`);
      expect(await sessionGiven(k2Only, user, accountId)).toEqual(session);
      await k2Only.close();

      // Other bytes under the same id: the server starts, but the session does not open.
      const otherBytes = await start(`k2:${randomBytes(32).toString("base64")}`);
      expect(await sessionGiven(otherBytes, user, accountId)).toBe(
        `Bot could not be deployed: the session of bot account ${accountId} could not be decrypted (the server log says why)`,
      );
      await otherBytes.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await (await testDatabaseFor(dataDir))?.drop();
    }
  });
});
