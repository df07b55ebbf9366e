import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccountState } from "../../fixtures/host/accounts.js";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { ApiError } from "../../src/client/api-client.js";
import type { StorageState } from "../../src/core/index.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Bot accounts through the real server, nothing injected: an account created with the API from a
 * session the mock platform issued, bots created with `login` and deployed through the API. The
 * server holds an account at deploy, puts its session in the BotConfig, and keeps what the runner
 * writes back; the mock rotates sessions (a token is good for two visits), so only the kept
 * write-backs let a third meeting in. And a group of two accounts of maxConcurrent 1 serves two
 * bots at once, each its own account, and no third.
 */

let stack: Awaited<ReturnType<typeof startStack>>;

beforeAll(async () => {
  stack = await startStack({ env: { MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") } });
}, 60_000);
afterAll(async () => {
  await stack?.close();
});

async function mock(method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.mock.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/** A mock-platform account, signed in once; stored on the server as a bot account. */
async function botAccount(login: string, name: string, group: string) {
  await mock("PUT", `/control/accounts/google/${login}`, { name });
  const session = (await mock("POST", `/control/accounts/google/${login}/sessions`)) as StorageState;
  return stack.api.createBotAccount({ platform: "google", name: `bot ${login}`, group, session });
}

const meetingUrl = (code: string) => `${stack.mock.url}/meet/${code}`;
const meetingState = (code: string) =>
  mock("GET", `/control/meetings/google/${code}`) as Promise<MeetingState>;
const accountState = (login: string) =>
  mock("GET", `/control/accounts/google/${login}`) as Promise<AccountState>;

async function deployBot(code: string, group: string) {
  const bot = await stack.api.createBot({
    meetingInfo: { platform: "google", meetingUrl: meetingUrl(code) },
    botDisplayName: "Meetbot",
    login: { mode: "always", group },
    // Audio-only: the accounts are under test, not the picture, and it costs a fraction of a core.
    recording: { video: false },
  });
  await stack.api.deploy(bot.id);
  return bot.id;
}

describe("bot accounts deployed through the server", { timeout: 120_000 }, () => {
  it("three meetings in a row on one account: each signed in under the account's name, the third too, thanks to the write-backs the server kept", async () => {
    const account = await botAccount("srv-rota", "Rota Server", "rota");
    for (const code of ["srv-rota-aaa", "srv-rota-aab", "srv-rota-aac"]) {
      await mock("PUT", `/control/meetings/google/${code}`, {
        admit: "open",
        participants: 1,
        anonymous: "refused",
        endAfterMs: 1500,
      });
      const botId = await deployBot(code, "rota");
      const final = await stack.api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 60_000 });
      expect(final.status, `${code}: ${JSON.stringify(final.deploymentError)}`).toBe("DONE");
      expect((await meetingState(code)).attendees).toMatchObject([
        { name: "Rota Server", account: "srv-rota" },
      ]);
      const joined = (await stack.api.botEvents(botId)).find((e) => e.eventType === "BOT_JOINED");
      expect(joined?.data).toMatchObject({ joinedAs: "Rota Server" });
    }
    // Three signed-in visits and none refused: the first session alone is good for two.
    expect(await accountState("srv-rota")).toMatchObject({ signedInVisits: 3, refusedVisits: 0 });
    const stored = (await stack.api.botAccounts()).botAccounts.find((a) => a.id === account.id);
    expect(stored).toMatchObject({
      status: "active",
      inUse: 0,
      accountName: "Rota Server",
      accountEmail: "srv-rota@example.com",
    });
  });

  it("a group of two accounts of maxConcurrent 1: two bots at once get one each; a third is FATAL LOGIN_UNAVAILABLE", async () => {
    await botAccount("srv-pair-1", "Pair One", "pair");
    await botAccount("srv-pair-2", "Pair Two", "pair");
    const codes = ["srv-pair-aaa", "srv-pair-aab", "srv-pair-aac"] as const;
    for (const code of codes) {
      await mock("PUT", `/control/meetings/google/${code}`, { admit: "open", participants: 1 });
    }
    const bots = [await deployBot(codes[0], "pair"), await deployBot(codes[1], "pair")];
    for (const botId of bots) {
      await stack.api.waitForStatus(botId, ["IN_CALL", "DONE", "FATAL"], { timeoutMs: 60_000 });
    }
    const inCall = await Promise.all(codes.slice(0, 2).map((code) => meetingState(code)));
    const accounts = inCall.map((state) => state.attendees[0]?.account);
    expect(new Set(accounts)).toEqual(new Set(["srv-pair-1", "srv-pair-2"]));

    const third = await stack.api.createBot({
      meetingInfo: { platform: "google", meetingUrl: meetingUrl(codes[2]) },
      botDisplayName: "Meetbot",
      login: { mode: "always", group: "pair" },
    });
    const refused = await stack.api.deploy(third.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(503);
    const after = await stack.api.bot(third.id);
    expect(after.status).toBe("FATAL");
    expect(after.deploymentError).toMatchObject({ code: "LOGIN_UNAVAILABLE" });
    expect(after.deploymentError?.message).toContain('group "pair"');
    expect((await meetingState(codes[2])).attendees).toEqual([]);

    for (const code of codes.slice(0, 2)) await mock("POST", `/control/meetings/google/${code}/end`);
    for (const botId of bots) {
      const final = await stack.api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 60_000 });
      expect(final.status).toBe("DONE");
    }
    // Both accounts free again once their bots ended.
    await eventually(
      async () =>
        (await stack.api.botAccounts()).botAccounts
          .filter((a) => a.group === "pair")
          .every((a) => a.inUse === 0)
          ? true
          : undefined,
      "both accounts to be free",
    );
  });
});
