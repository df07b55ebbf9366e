import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processTree } from "../../bench/process-tree.js";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import type { BotConfig, LoginSessionWriteBack, RunnerLogin, StorageState } from "../../src/core/index.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Signed-in bots end to end: real runners (Chromium, ffmpeg) against the mock platforms of 2026.
 * The server half that picks a bot account is not here yet, so the test plays it: it puts a
 * `login` (a session minted by the mock host) and a Teams bot token in the BotConfig the server
 * launches, and points the runner's callbacks at a pass-through that keeps the session the runner
 * writes back (PUT /v1/bot-callbacks/{id}/login-session) and forwards everything else to the server.
 */

/** What each bot is given beyond the server's config, by bot id. */
const extras = new Map<number, Partial<Pick<BotConfig, "login" | "teamsBotToken">>>();
/** The sessions written back, by bot id. */
const writtenBack = new Map<number, LoginSessionWriteBack[]>();
let proxy: Server;
let stack: Awaited<ReturnType<typeof startStack>>;

beforeAll(async () => {
  proxy = createServer((req, res) => {
    const match = /^\/v1\/bot-callbacks\/(\d+)\/login-session$/.exec(req.url ?? "");
    if (req.method === "PUT" && match) {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const botId = Number(match[1]);
        writtenBack.set(botId, [
          ...(writtenBack.get(botId) ?? []),
          JSON.parse(Buffer.concat(chunks).toString()),
        ]);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ kept: true }));
      });
      return;
    }
    const target = new URL(stack.api.baseUrl);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  stack = await startStack({
    editConfig: (config) => ({
      ...config,
      ...extras.get(config.botId),
      callback: { ...config.callback, baseUrl: proxyUrl },
    }),
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => proxy?.close(resolve));
});

const FINAL = ["DONE", "FATAL"] as const;
const BOT_TIMEOUT = { timeoutMs: 90_000 };

async function mock(method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.mock.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

/** A bot account on the mock platform and a session for it, as the server would hand it out. */
async function accountWithSession(platform: string, login: string, name: string): Promise<StorageState> {
  await mock("PUT", `/control/accounts/${platform}/${login}`, { name });
  return (await mock("POST", `/control/accounts/${platform}/${login}/sessions`)) as StorageState;
}

const runnerLogin = (mode: RunnerLogin["mode"], session: StorageState): RunnerLogin => ({
  mode,
  accountId: 42,
  accountName: null,
  session,
});

/** Creates and deploys a bot, with `extra` in its BotConfig. */
async function deploy(
  meetingInfo: Record<string, string>,
  extra: Partial<Pick<BotConfig, "login" | "teamsBotToken">> = {},
  body: Record<string, unknown> = {},
) {
  // Audio-only: these tests are about getting in, and fourteen of them run side by side.
  const bot = await stack.api.createBot({
    meetingInfo: meetingInfo as never,
    botDisplayName: "Meetbot",
    recording: { video: false },
    ...body,
  });
  extras.set(bot.id, extra);
  await stack.api.deploy(bot.id);
  return bot.id;
}

const botEvents = (botId: number) => stack.api.botEvents(botId);
const meetingState = (platform: string, id: string) =>
  mock("GET", `/control/meetings/${platform}/${id}`) as Promise<MeetingState>;

/** Every string a session holds that is worth keeping secret (its cookie values). */
const secretsOf = (session: StorageState) => session.cookies.map((c) => c.value).filter((v) => v.length >= 8);

async function runnerLogText(botId: number) {
  return readFile(stack.launcher.logFile(botId), "utf8");
}

/** Every file the runner left in its work dir (spool, artifacts), as text. */
async function workDirText(botId: number): Promise<string> {
  const dir = join(stack.dataDir, "bots", String(botId));
  const texts: string[] = [];
  const walk = async (path: string): Promise<void> => {
    for (const entry of await readdir(path, { withFileTypes: true }).catch(() => [])) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (!entry.name.endsWith(".mp4")) texts.push(await readFile(full, "latin1").catch(() => ""));
    }
  };
  await walk(dir);
  return texts.join("\n");
}

function environOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return "";
  }
}

// Side by side: each test has its own meeting and account, and most bots never record.
describe.concurrent("signed-in bots", { timeout: 150_000 }, () => {
  it("Meet, only_if_required, a meeting that refuses guests: refused anonymously, then in the call signed in under the account's name; the rotated session is written back; the session is in no child's environment, log or event", async () => {
    const code = "sig-nedi-nmt";
    await mock("PUT", `/control/meetings/google/${code}`, {
      admit: "open",
      participants: 1,
      anonymous: "refused",
    });
    const session = await accountWithSession("google", "meet-bot-1", "Grace Account");
    const botId = await deploy(
      { platform: "google", meetingUrl: `${stack.mock.url}/meet/${code}` },
      { login: runnerLogin("only_if_required", session) },
    );
    await eventually(
      async () =>
        (await botEvents(botId)).some((e) => e.eventType === "RECORDING_STARTED") ? true : undefined,
      "the bot to record",
      60_000,
    );
    // While recording: no process under the runner but the runner itself holds the session.
    const runnerPid = stack.launcher.pid(botId) as number;
    for (const pid of processTree(runnerPid)) {
      if (pid === runnerPid) continue;
      const environ = environOf(pid);
      for (const secret of secretsOf(session)) expect(environ, `pid ${pid}`).not.toContain(secret);
    }
    const state = await meetingState("google", code);
    expect(state.attendees).toMatchObject([
      { name: "Grace Account", account: "meet-bot-1", state: "in_call" },
    ]);

    await mock("POST", `/control/meetings/google/${code}/end`);
    const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(final.status, JSON.stringify(final.deploymentError)).toBe("DONE");
    const events = await botEvents(botId);
    expect(events.find((e) => e.eventType === "BOT_JOINED")?.data).toMatchObject({
      joinedAs: "Grace Account",
    });

    // Written back once, rotated (the SID the page set on this visit), with the account shown.
    const back = writtenBack.get(botId) ?? [];
    expect(back).toHaveLength(1);
    expect(back[0]).toMatchObject({ accountName: "Grace Account", accountEmail: "meet-bot-1@example.com" });
    const sid = (s: StorageState) => s.cookies.find((c) => c.name === "SID")?.value;
    expect(sid(back[0]?.session as StorageState)).toBeDefined();
    expect(sid(back[0]?.session as StorageState)).not.toBe(sid(session));

    // It said why it signed in; the session is nowhere in its log, events or work dir.
    const logs = await stack.api.botLogs(botId);
    expect(JSON.stringify(logs)).toContain("trying again signed in");
    const everything = [
      await runnerLogText(botId),
      JSON.stringify(events),
      JSON.stringify(logs),
      await workDirText(botId),
    ].join("\n");
    for (const secret of [...secretsOf(session), ...secretsOf(back[0]?.session as StorageState)]) {
      expect(everything).not.toContain(secret);
    }
  });

  it("Meet, anonymous, a meeting that refuses guests: FATAL SIGN_IN_REQUIRED (on bot.error and in the events)", async () => {
    const code = "sig-nedi-nmu";
    await mock("PUT", `/control/meetings/google/${code}`, { anonymous: "refused" });
    const botId = await deploy({ platform: "google", meetingUrl: `${stack.mock.url}/meet/${code}` });
    const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(final.status).toBe("FATAL");
    const error = (await botEvents(botId)).find((e) => e.eventType === "ERROR");
    expect(error?.data).toMatchObject({ code: "SIGN_IN_REQUIRED" });
    expect((await meetingState("google", code)).attendees).toEqual([]);
  });

  it("Zoom, always, an expired session: FATAL SESSION_EXPIRED, no join and nothing written back", async () => {
    const id = "84400000001";
    await mock("PUT", `/control/meetings/zoom/${id}`, { admit: "open" });
    const session = await accountWithSession("zoom", "zoom-bot-1", "Zed Account");
    await mock("POST", `/control/accounts/zoom/zoom-bot-1/expire`);
    const botId = await deploy(
      { platform: "zoom", meetingId: id },
      { login: runnerLogin("always", session) },
    );
    const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(final.status).toBe("FATAL");
    const error = (await botEvents(botId)).find((e) => e.eventType === "ERROR");
    expect(error?.data).toMatchObject({ code: "SESSION_EXPIRED" });
    expect((await meetingState("zoom", id)).attendees).toEqual([]);
    expect(writtenBack.get(botId)).toBeUndefined();
  });

  it("Zoom's bot wall: FATAL BOT_BLOCKED, the wall never answered", async () => {
    const id = "84400000002";
    await mock("PUT", `/control/meetings/zoom/${id}`, { admit: "open", botWall: "captcha-curly" });
    const botId = await deploy({ platform: "zoom", meetingId: id });
    const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(final.status).toBe("FATAL");
    const error = (await botEvents(botId)).find((e) => e.eventType === "ERROR");
    expect(error?.data).toMatchObject({ code: "BOT_BLOCKED" });
    expect((await meetingState("zoom", id)).attendees).toEqual([]);
  });

  it("Teams: the bot token reaches the page (#token=) and skips the lobby for unidentified bots; never in the logs", async () => {
    const id = "SignedInTeams0001";
    const token = "eyJ0eXAiOiJKV1Qi.teams-bot-token.e2e";
    await mock("PUT", `/control/meetings/teams/${id}`, {
      admit: "open",
      participants: 1,
      botLobby: true,
      botToken: token,
    });
    const botId = await deploy(
      { platform: "teams", meetingId: id, tenantId: "tenant-1", organizerId: "organizer-1" },
      { teamsBotToken: token },
    );
    await eventually(
      async () =>
        (await botEvents(botId)).some((e) => e.eventType === "RECORDING_STARTED") ? true : undefined,
      "the bot to record",
      60_000,
    );
    expect((await meetingState("teams", id)).attendees).toMatchObject([
      { state: "in_call", identified: true },
    ]);
    await mock("POST", `/control/meetings/teams/${id}/end`);
    const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(final.status).toBe("DONE");
    const statuses = (await stack.api.events({ bot_id: botId, page_size: 100 })).events.map(
      (e) => e.eventType,
    );
    expect(statuses).not.toContain("IN_WAITING_ROOM");
    expect(await runnerLogText(botId)).not.toContain(token);
  });

  /** Each platform's meeting info for a meeting id of the mock. */
  const infoFor = (platform: string, id: string): Record<string, string> =>
    platform === "google"
      ? { platform, meetingUrl: `${stack.mock.url}/meet/${id}` }
      : platform === "zoom"
        ? { platform, meetingId: id }
        : { platform, meetingId: id, tenantId: "tenant-1", organizerId: "organizer-1" };
  const ids = {
    google: ["sig-zoom-aaa", "sig-zoom-aab", "sig-zoom-aac"],
    zoom: ["84400000011", "84400000012", "84400000013"],
    teams: ["SignedInTeams0011", "SignedInTeams0012", "SignedInTeams0013"],
  };
  const errorCode = async (botId: number) =>
    (await botEvents(botId)).find((e) => e.eventType === "ERROR")?.data?.code;

  for (const platform of ["zoom", "teams"] as const) {
    it(`${platform}, only_if_required, a meeting that refuses guests: in the call signed in, under the account's name`, async () => {
      const [id] = ids[platform] as [string];
      await mock("PUT", `/control/meetings/${platform}/${id}`, {
        admit: "open",
        participants: 1,
        anonymous: "refused",
        endAfterMs: 2500,
      });
      const session = await accountWithSession(platform, `${platform}-signed`, `${platform} Account`);
      const botId = await deploy(infoFor(platform, id), { login: runnerLogin("only_if_required", session) });
      const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
      expect(final.status, JSON.stringify(final.deploymentError)).toBe("DONE");
      expect((await meetingState(platform, id)).attendees).toMatchObject([
        { name: `${platform} Account`, account: `${platform}-signed` },
      ]);
      const joined = (await botEvents(botId)).find((e) => e.eventType === "BOT_JOINED");
      expect(joined?.data).toMatchObject({ joinedAs: `${platform} Account` });
      expect(writtenBack.get(botId)).toHaveLength(1);
    });

    it(`${platform}, anonymous, a meeting that refuses guests: FATAL SIGN_IN_REQUIRED`, async () => {
      const id = ids[platform][1] as string;
      await mock("PUT", `/control/meetings/${platform}/${id}`, { anonymous: "refused" });
      const botId = await deploy(infoFor(platform, id));
      await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
      expect(await errorCode(botId)).toBe("SIGN_IN_REQUIRED");
    });
  }

  for (const platform of ["google", "teams"] as const) {
    it(`${platform}, always, an expired session: FATAL SESSION_EXPIRED and no join`, async () => {
      const id = ids[platform][2] as string;
      await mock("PUT", `/control/meetings/${platform}/${id}`, { admit: "open" });
      const session = await accountWithSession(platform, `${platform}-expired`, "Old Account");
      await mock("POST", `/control/accounts/${platform}/${platform}-expired/expire`);
      const botId = await deploy(infoFor(platform, id), { login: runnerLogin("always", session) });
      await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
      expect(await errorCode(botId)).toBe("SESSION_EXPIRED");
      expect((await meetingState(platform, id)).attendees).toEqual([]);
    });
  }

  it("Teams' captcha: FATAL BOT_BLOCKED", async () => {
    const id = "SignedInTeams0021";
    await mock("PUT", `/control/meetings/teams/${id}`, { admit: "open", botWall: "captcha" });
    const botId = await deploy(infoFor("teams", id));
    await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(await errorCode(botId)).toBe("BOT_BLOCKED");
  });

  it('Meet, the account already in the call and only "Switch here" offered: FATAL LOGIN_UNAVAILABLE, the other session untouched', async () => {
    const code = "sig-swit-chh";
    await mock("PUT", `/control/meetings/google/${code}`, { admit: "open", joinHereToo: false });
    const session = await accountWithSession("google", "busy-bot", "Busy Account");
    await mock("POST", `/control/meetings/google/${code}/participants`, {
      name: "Busy Account",
      account: "busy-bot",
    });
    const botId = await deploy(infoFor("google", code), { login: runnerLogin("always", session) });
    await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
    expect(await errorCode(botId)).toBe("LOGIN_UNAVAILABLE");
    const state = await meetingState("google", code);
    expect(state.participants.map((p) => p.name)).toContain("Busy Account");
    expect(state.attendees).toEqual([]);
  });

  it("three meetings in a row on one rotating session: with a write-back each time all three get in; the session never written back is refused the third time", async () => {
    const session = await accountWithSession("google", "rotating-bot", "Rota Account");
    const meet = async (code: string, used: StorageState) => {
      await mock("PUT", `/control/meetings/google/${code}`, { admit: "open", participants: 1 });
      const botId = await deploy(infoFor("google", code), { login: runnerLogin("always", used) });
      // The host ends the call once the bot is in it: a fixed 1.5 s of call was once over before a
      // starved bot's page showed it in (JOIN_FAILED, "the call ended before the bot got in").
      const reached = await stack.api.waitForStatus(botId, ["IN_CALL", ...FINAL], BOT_TIMEOUT);
      if (reached.status === "IN_CALL") await stack.control.end("google", code);
      const final = await stack.api.waitForStatus(botId, [...FINAL], BOT_TIMEOUT);
      return { final, botId, back: writtenBack.get(botId)?.[0]?.session };
    };
    let current = session;
    for (const code of ["rot-aaaa-aaa", "rot-aaaa-aab", "rot-aaaa-aac"]) {
      const { final, back } = await meet(code, current);
      expect(final.status, `${code}: ${JSON.stringify(final.deploymentError)}`).toBe("DONE");
      expect(back).toBeDefined();
      current = back as StorageState;
    }
    // The first session, never written back over: used once above, good once more, then refused.
    expect((await meet("rot-aaaa-aad", session)).final.status).toBe("DONE");
    const third = await meet("rot-aaaa-aae", session);
    expect(third.final.status).toBe("FATAL");
    expect(await errorCode(third.botId)).toBe("SESSION_EXPIRED");
  });
});
