// Own server (startBuiltApp), not the fixture: TestClock moves check intervals; check service in hand.
import { randomBytes, randomUUID } from "node:crypto";
import { access, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { BotConfig, StorageState } from "../../src/core/index.js";
import type { Db } from "../../src/server/db/database.js";
import { scheduleDueChecks } from "../../src/server/services/account-checks.js";
import { type BuiltApp, startBuiltApp, TestClock } from "../helpers/built-app.js";
import { readRow } from "../helpers/fixtures.js";
import {
  RecordingApi,
  openServerDatabase,
  registerUser,
  TEST_MEETING,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";

/**
 * Bot account checks (POST /v1/bot-accounts/{id}/check): the check is queued, its runner launched
 * through the launcher with a check-only BotConfig; the test plays the runner, posting the result
 * with the token from that config. The scheduled checks are driven by the server's test clock.
 */

const markers: string[] = [];
function newSession(label: string): StorageState {
  const marker = `check-${label}-${randomUUID()}`;
  markers.push(marker);
  return {
    cookies: [
      {
        name: "SID",
        value: marker,
        domain: ".google.com",
        path: "/",
        expires: -1,
        httpOnly: true,
        secure: true,
        sameSite: "Lax",
      },
    ],
    origins: [
      { origin: "https://meet.google.com", localStorage: [{ name: "token", value: `${marker}-ls` }] },
    ],
  };
}

const KEY = randomBytes(32).toString("base64");
const INTERVAL_MS = 24 * 3_600_000;
const clock = new TestClock();
const logLines: string[] = [];
let server: BuiltApp;
let api: RecordingApi;
let owner: TestUser;
let stranger: TestUser;
let webhookId: number;
let db: Db;

beforeAll(async () => {
  server = await startBuiltApp({
    clock,
    env: {
      MEETBOT_SECRET_KEY: `k1:${KEY}`,
      MEETBOT_WEBHOOK_WORKER: "0",
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
      MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS: String(INTERVAL_MS),
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
const checks = () => server.core.services.accountChecks;

async function createAccount(body: Json = {}, user = owner): Promise<{ id: number; session: StorageState }> {
  const session = newSession("create");
  const res = await api.post("/v1/bot-accounts", {
    token: user.token,
    body: { platform: "google", name: "Notetaker", session, ...body },
  });
  if (res.status !== 201) throw new Error(`create account: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.id, session };
}

const getAccount = async (id: number) =>
  (await api.get(`/v1/bot-accounts/${id}`, { token: owner.token })).body;

const requestCheck = (id: number, body: Json = { meetingUrl: TEST_MEETING.meetingUrl }, user = owner) =>
  api.post(`/v1/bot-accounts/${id}/check`, { token: user.token, body });

/** The check's BotConfig, once the worker has launched its runner. */
function launchedCheck(checkId: number): Promise<BotConfig> {
  return vi.waitFor(
    async () => {
      await checks().runDue();
      const config = server.launcher.launched.find((c) => c.accountCheck?.checkId === checkId);
      if (!config) throw new Error(`check ${checkId} was never launched`);
      return config;
    },
    { timeout: 15_000, interval: 100 },
  );
}

/** Requests a check and plays its runner up to the launch. */
async function startCheck(accountId: number): Promise<{ checkId: number; config: BotConfig }> {
  const res = await requestCheck(accountId);
  expect(res.status).toBe(202);
  const checkId = res.body.checkId;
  return { checkId, config: await launchedCheck(checkId) };
}

const report = (config: BotConfig, body: Json, token = config.callback.token) =>
  api.post(`/v1/bot-account-checks/${config.accountCheck?.checkId}/result`, { token, body });

const checkState = async (checkId: number) =>
  defined(await readRow(db, "bot_account_checks", checkId), `check ${checkId}'s row`);

async function deliveries(accountId: number): Promise<{ event: string; data: Json }[]> {
  const rows = await db.kysely
    .selectFrom("webhook_deliveries")
    .select(["event", "payload"])
    .where("webhook_id", "=", webhookId)
    .orderBy("id")
    .execute();
  return rows
    .map((row) => ({ event: row.event, data: (JSON.parse(row.payload) as { data: Json }).data }))
    .filter((d) => d.data.accountId === accountId);
}

describe("bot account checks", () => {
  it("launch a check-only runner with the session; signed in, the account is active with its name, and checked goes out", async () => {
    const { id, session } = await createAccount();
    const res = await requestCheck(id);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accountId: id, checkId: expect.any(Number), status: "queued" });
    const config = await launchedCheck(res.body.checkId);
    expect(config.botId).toBe(res.body.checkId);
    expect(config.accountCheck?.resultUrl).toBe(
      `${server.url}/v1/bot-account-checks/${res.body.checkId}/result`,
    );
    expect(config.meetingInfo).toEqual(TEST_MEETING);
    expect(config.login).toMatchObject({ accountId: id, session });

    const rotated = newSession("rotated");
    const before = clock.now().getTime();
    const answer = await report(config, {
      signedIn: true,
      accountName: "Nora Notetaker",
      accountEmail: "nora@example.com",
      session: rotated,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: "active" });
    const account = await getAccount(id);
    expect(account).toMatchObject({
      status: "active",
      accountName: "Nora Notetaker",
      accountEmail: "nora@example.com",
    });
    // The server's (test) clock at the report.
    const checkedAt = Date.parse(defined(account.lastCheckedAt, "lastCheckedAt"));
    expect(checkedAt).toBeGreaterThanOrEqual(before - 1);
    expect(checkedAt).toBeLessThanOrEqual(clock.now().getTime());
    expect(await deliveries(id)).toEqual([
      { event: "bot_account.checked", data: { accountId: id, status: "active" } },
    ]);

    // The rotated session was kept: the next check gets it. The report cannot be repeated.
    expect((await report(config, { signedIn: true })).status).toBe(409);
    const next = await startCheck(id);
    expect(next.config.login?.session).toEqual(rotated);
    expect((await report(next.config, { signedIn: true })).status).toBe(200);
  });

  it("signed out: the account is expired, with checked and expired webhooks", async () => {
    const { id } = await createAccount();
    const { config } = await startCheck(id);
    const answer = await report(config, { signedIn: false, reason: "the meeting page asks for a sign-in" });
    expect(answer.body).toEqual({ status: "expired" });
    expect(await getAccount(id)).toMatchObject({ status: "expired", accountName: null });
    expect((await getAccount(id)).lastCheckedAt).not.toBeNull();
    expect(await deliveries(id)).toEqual([
      { event: "bot_account.checked", data: { accountId: id, status: "expired" } },
      { event: "bot_account.expired", data: { accountId: id, status: "expired" } },
    ]);
  });

  it("answer 409 for a disabled account and while a check runs; 404 for another user's; 422 with no meeting; 401 for a wrong token", async () => {
    const { id } = await createAccount();
    expect((await requestCheck(id, {})).status).toBe(422);
    expect((await requestCheck(id, {}, stranger)).status).toBe(404);
    expect((await requestCheck(id, { meetingUrl: TEST_MEETING.meetingUrl }, stranger)).status).toBe(404);
    expect((await requestCheck(id, { meetingUrl: "https://evil.example.com/meet/x" })).status).toBe(422);

    const first = await requestCheck(id);
    expect(first.status).toBe(202);
    const again = await requestCheck(id, {});
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/already running/);
    const config = await launchedCheck(first.body.checkId);
    expect((await requestCheck(id)).status).toBe(409); // running now
    expect((await report(config, { signedIn: true }, "x".repeat(43))).status).toBe(401);
    expect((await report(config, { signedIn: true })).status).toBe(200);
    // Done: the meeting given before is kept for the next check.
    const later = await requestCheck(id, {});
    expect(later.status).toBe(202);
    expect((await report(await launchedCheck(later.body.checkId), { signedIn: true })).status).toBe(200);

    const disabled = await api.patch(`/v1/bot-accounts/${id}`, {
      token: owner.token,
      body: { disabled: true },
    });
    expect(disabled.status).toBe(200);
    const refused = await requestCheck(id);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/disabled/);
  });

  it("fail when the runner never reports: the account stays as it was", async () => {
    const { id } = await createAccount();
    const { config } = await startCheck(id);
    clock.advance(180_001);
    await checks().runDue();
    const row = await checkState(config.accountCheck?.checkId as number);
    expect(row.state).toBe("failed");
    expect(await getAccount(id)).toMatchObject({ status: "unchecked", lastCheckedAt: null });
    expect((await report(config, { signedIn: true })).status).toBe(409);
    expect(await deliveries(id)).toEqual([]);
    // A runner that could not tell fails its check at once, the account untouched.
    const second = await startCheck(id);
    expect((await report(second.config, { signedIn: false, failure: "the page did not load" })).body).toEqual(
      {
        status: "failed",
      },
    );
    expect(await getAccount(id)).toMatchObject({ status: "unchecked", lastCheckedAt: null });
  });

  it("survive a process that died between claiming a check and launching it: the lease runs out, another launches it", async () => {
    const { id } = await createAccount();
    const now = clock.now().getTime();
    const { user_id } = defined(await readRow(db, "bot_accounts", id), `account ${id}'s row`);
    // As a process leaves it that claimed the check and died: queued, leased, never launched.
    const row = await db.kysely
      .insertInto("bot_account_checks")
      .values({
        account_id: id,
        user_id,
        state: "queued",
        origin: "request",
        meeting_url: TEST_MEETING.meetingUrl,
        attempts: 1,
        lease_until: new Date(now + 60_000).toISOString(),
        claim_token: "dead-process-claim",
        created_at: new Date(now).toISOString(),
        updated_at: new Date(now).toISOString(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await checks().runDue();
    expect(server.launcher.launched.some((c) => c.accountCheck?.checkId === row.id)).toBe(false);
    expect((await requestCheck(id)).status).toBe(409);
    clock.advance(60_001);
    const config = await launchedCheck(row.id);
    expect((await report(config, { signedIn: true, accountName: "Late" })).status).toBe(200);
    expect(await getAccount(id)).toMatchObject({ status: "active", accountName: "Late" });
  });

  it("are scheduled for due accounts only, once each, however many processes schedule at once", async () => {
    const user = await registerUser(api, "Scheduler");
    const make = async (set: Json) => {
      const { id } = await createAccount({}, user);
      await db.kysely.updateTable("bot_accounts").set(set).where("id", "=", id).execute();
      return id;
    };
    const now = clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    const url = TEST_MEETING.meetingUrl;
    const due = await make({
      state: "active",
      check_meeting_url: url,
      last_checked_at: iso(now - INTERVAL_MS - 60_000),
    });
    const fresh = await make({
      state: "active",
      check_meeting_url: url,
      last_checked_at: iso(now - 3_600_000),
    });
    const never = await make({ state: "unchecked", check_meeting_url: url });
    const noMeeting = await make({ state: "unchecked" });
    const disabled = await make({ disabled: 1, state: "active", check_meeting_url: url });
    const expired = await make({ state: "expired", check_meeting_url: url });
    const inUse = await make({ state: "active", check_meeting_url: url, in_use: 1 });
    const ids = [due, fresh, never, noMeeting, disabled, expired, inUse];

    // Two more connection pools to the same database, as two other server processes would have.
    const others = [await openServerDatabase(server), await openServerDatabase(server)];
    try {
      await Promise.all([
        ...others.flatMap((other) =>
          Array.from({ length: 5 }, () => scheduleDueChecks(other.kysely, clock.now(), INTERVAL_MS)),
        ),
        checks().runDue(),
      ]);
    } finally {
      await Promise.all(others.map((other) => other.close()));
    }
    const rows = await db.kysely
      .selectFrom("bot_account_checks")
      .select(["account_id", "origin"])
      .where("account_id", "in", ids)
      .execute();
    expect(rows.map((r) => r.account_id).sort((a, b) => a - b)).toEqual([due, never].sort((a, b) => a - b));
    expect(rows.every((r) => r.origin === "schedule")).toBe(true);

    // Answered, they are not due again until the interval has passed once more.
    for (const accountId of [due, never]) {
      const check = await db.kysely
        .selectFrom("bot_account_checks")
        .select("id")
        .where("account_id", "=", accountId)
        .executeTakeFirstOrThrow();
      expect((await report(await launchedCheck(check.id), { signedIn: true })).status).toBe(200);
    }
    await checks().runDue();
    const count = async () =>
      (await db.kysely.selectFrom("bot_account_checks").select("id").where("account_id", "in", ids).execute())
        .length;
    expect(await count()).toBe(2);
    clock.advance(INTERVAL_MS + 1_000);
    await checks().runDue();
    const after = await db.kysely
      .selectFrom("bot_account_checks")
      .select(["account_id"])
      .where("account_id", "in", ids)
      .execute();
    // due, never and fresh are due now; noMeeting, disabled, expired and the one in use never.
    expect(after.map((r) => r.account_id).sort((a, b) => a - b)).toEqual(
      [due, due, never, never, fresh].sort((a, b) => a - b),
    );
  });

  it("leave no folder behind: a completed check's goes after 10 minutes, a failed one's after a day, a deleted account's at once", async () => {
    const folder = (checkId: number) => path.join(server.dataDir, "account-checks", String(checkId));
    const exists = (checkId: number) =>
      access(folder(checkId)).then(
        () => true,
        () => false,
      );
    // As the local launcher leaves them: the runner's work dir and its log.
    const layOut = async (config: BotConfig) => {
      expect(config.workDir).toBe(path.join(folder(config.botId), "work"));
      await mkdir(config.workDir as string, { recursive: true });
      await writeFile(path.join(folder(config.botId), "runner.log"), '{"msg":"account check done"}\n');
    };
    const completed = await startCheck((await createAccount()).id);
    const overdue = await startCheck((await createAccount()).id);
    const deletedAccount = await createAccount();
    const deleted = await startCheck(deletedAccount.id);
    for (const { config } of [completed, overdue, deleted]) await layOut(config);
    expect((await report(completed.config, { signedIn: true })).status).toBe(200);
    expect((await api.delete(`/v1/bot-accounts/${deletedAccount.id}`, { token: owner.token })).status).toBe(
      204,
    );

    await checks().runDue();
    expect(await exists(deleted.checkId)).toBe(false); // its check went with the account
    expect(await exists(completed.checkId)).toBe(true); // its runner may still be exiting
    expect(await exists(overdue.checkId)).toBe(true); // running

    clock.advance(180_001); // past the overdue check's deadline: it fails
    await checks().runDue();
    expect((await checkState(overdue.checkId)).state).toBe("failed");
    expect(await exists(overdue.checkId)).toBe(true);

    clock.advance(10 * 60_000);
    await checks().runDue();
    expect(await exists(completed.checkId)).toBe(false);
    expect(await exists(overdue.checkId)).toBe(true); // its log says why, for a day

    clock.advance(24 * 3_600_000);
    await checks().runDue();
    expect(await exists(overdue.checkId)).toBe(false);
  });

  it("never carry the session in an answer, a log line or a webhook", async () => {
    expect(markers.length).toBeGreaterThan(5);
    const payloads = (await db.kysely.selectFrom("webhook_deliveries").select("payload").execute()).map(
      (row) => row.payload,
    );
    expect(payloads.length).toBeGreaterThan(2);
    expect(logLines.some((line) => line.includes("bot account check launched"))).toBe(true);
    const leaks = (texts: string[]) =>
      texts.filter((text) => markers.some((marker) => text.includes(marker)));
    expect(leaks(api.answers)).toEqual([]);
    expect(leaks(logLines)).toEqual([]);
    expect(leaks(payloads)).toEqual([]);
  });
});
