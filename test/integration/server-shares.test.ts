import { createHash, randomBytes } from "node:crypto";
import { describe } from "vitest";
import type { Db } from "../../src/server/db/database.js";
import { startBuiltApp, TestClock } from "../helpers/built-app.js";
import {
  deployedBot,
  registerUser,
  type TestServer,
  type TestUser,
  mp4Bytes,
  validationIssues,
} from "../helpers/server-harness.js";
import { expect, recordedBot, test } from "../helpers/fixtures.js";

let server: TestServer;
let db: Db;
let user: TestUser;
const bytes = mp4Bytes(32 * 1024);
let botId: number;
test.beforeAll(async ({ server: fileServer, db: fileDb }) => {
  server = fileServer;
  db = fileDb;
  user = await registerUser(server.api);
  botId = await recorded(user, '<Retro> & "plans"');
});

/** A DONE bot of `owner` whose recording is `bytes`, 65 s long. */
const recorded = async (owner: TestUser, title: string) =>
  (await recordedBot(server, owner, { bytes, title, durationMs: 65_000 })).botId;

const share = (id = botId, body: unknown = {}, token = user.token) =>
  server.api.post(`/v1/recordings/${id}/share`, { token, body });
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const storedShares = (id: number) =>
  db.kysely.selectFrom("recording_shares").selectAll().where("bot_id", "=", id).execute();

/** A public request (no credential) for a share link, as JSON or as a browser would ask. */
const publicGet = (token: string, accept = "application/json") =>
  fetch(`${server.url}/v1/share/${token}`, { headers: { accept } });

async function expectGone(token: string) {
  for (const accept of ["application/json", "text/html"]) {
    const res = await publicGet(token, accept);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Share link not found" });
  }
  const stream = await fetch(`${server.url}/v1/share/${token}/stream`, { headers: { range: "bytes=0-9" } });
  expect(stream.status).toBe(404);
  expect(await stream.json()).toEqual({ detail: "Share link not found" });
}

describe("share links", () => {
  test("creates a link with a 256-bit URL-safe token of which only the hash is stored", async () => {
    const before = Date.now();
    const res = await share();
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      url: `${server.url}/v1/share/${res.body.token}`,
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
    });
    expect(Buffer.from(res.body.token, "base64url").length).toBe(32);
    const lifetime = Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt);
    expect(lifetime).toBe(7 * 24 * 3600 * 1000);
    expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 1000);

    const rows = await storedShares(botId);
    expect(rows).toEqual([
      {
        bot_id: botId,
        token_hash: sha256(res.body.token),
        expires_at: res.body.expiresAt,
        created_at: res.body.createdAt,
      },
    ]);
    const anywhere = JSON.stringify(await db.kysely.selectFrom("recording_shares").selectAll().execute());
    expect(anywhere).not.toContain(res.body.token);

    const current = await server.api.get(`/v1/recordings/${botId}/share`, { token: user.token });
    expect(current.status).toBe(200);
    expect(current.body).toEqual({ expiresAt: res.body.expiresAt, createdAt: res.body.createdAt });
  });

  test("takes expiresIn in seconds, up to 30 days, and refuses anything else with a 422", async () => {
    const res = await share(botId, { expiresIn: 3600 });
    expect(res.status).toBe(201);
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(3600 * 1000);
    expect((await share(botId, { expiresIn: 30 * 24 * 3600 })).status).toBe(201);
    for (const expiresIn of [30 * 24 * 3600 + 1, 0, -5, 1.5, "3600", null]) {
      const bad = await share(botId, { expiresIn });
      expect(bad.status, JSON.stringify(expiresIn)).toBe(422);
      expect(validationIssues(bad.body)[0]?.loc, JSON.stringify(expiresIn)).toEqual(["body", "expiresIn"]);
    }
    expect((await share(botId, { expiresIn: 60, extra: 1 })).status).toBe(422);
  });

  test("takes no body, an empty JSON body or JSON null like {}, as transcribe and summarize do", async () => {
    const post = (opts: { rawBody?: Uint8Array | string; headers?: Record<string, string> }) =>
      server.api.post(`/v1/recordings/${botId}/share`, { token: user.token, ...opts });
    const cases = {
      "no body, no Content-Type": await post({}),
      "an empty body, no Content-Type": await post({ rawBody: new Uint8Array(0) }),
      "an empty JSON body": await post({ rawBody: "", headers: { "content-type": "application/json" } }),
      "JSON null": await post({ rawBody: "null", headers: { "content-type": "application/json" } }),
    };
    for (const [what, res] of Object.entries(cases)) {
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(201);
      expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt), what).toBe(
        7 * 24 * 3600 * 1000,
      );
    }
    // The last one is the live link.
    expect((await publicGet(cases["JSON null"].body.token)).status).toBe(200);
  });

  test("keeps one live link per recording: a new one replaces the old", async () => {
    const first = (await share()).body;
    const second = (await share()).body;
    expect(second.token).not.toBe(first.token);
    await expectGone(first.token);
    expect((await publicGet(second.token)).status).toBe(200);
    expect(await storedShares(botId)).toHaveLength(1);
  });

  test("shows JSON, and nothing else of the owner, to anyone with the link", async () => {
    const { token } = (await share()).body;
    const res = await publicGet(token);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      meetingTitle: '<Retro> & "plans"',
      format: "mp4",
      platform: "google",
      durationMs: 65_000,
      createdAt: expect.any(String),
      streamUrl: `${server.url}/v1/share/${token}/stream`,
      transcript: null,
    });
    // No Accept at all, or */*: JSON too.
    expect((await fetch(`${server.url}/v1/share/${token}`)).headers.get("content-type")).toMatch(/json/);
  });

  test("shows a browser a self-contained page with a player that streams through the token", async () => {
    const { token } = (await share()).body;
    const res = await publicGet(token, "text/html,application/xhtml+xml,*/*;q=0.8");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("media-src 'self'");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    expect(html).toContain(`<video controls preload="metadata" src="${token}/stream">`);
    expect(html).toContain("<h1>&#60;Retro&#62; &#38; &#34;plans&#34;</h1>");
    expect(html).not.toContain("<Retro>");
    expect(html).toContain("1:05");
    expect(html).toContain('id="transcript"');
    expect(html).not.toMatch(/<script|https?:\/\//);

    const part = await fetch(`${server.url}/v1/share/${token}/stream`, { headers: { range: "bytes=-100" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-type")).toBe("video/mp4");
    expect(part.headers.get("content-range")).toBe(
      `bytes ${bytes.length - 100}-${bytes.length - 1}/${bytes.length}`,
    );
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(-100));
    // The validator is opaque: a public link's answer names no bot id, size or upload time.
    const etag = part.headers.get("etag") ?? "";
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    // (A random 27-character tag may well hold "1-" or a few digits: only the old
    // "<id>-<size>-<mtime>" shape is ruled out.)
    expect(etag.startsWith(`"${botId}-`)).toBe(false);
    expect(etag).not.toContain(`-${bytes.length}-`);
  });

  test("answers the same 404 for unknown, revoked and expired links", async () => {
    await expectGone(randomBytes(32).toString("base64url"));
    await expectGone("x");

    const revoked = (await share()).body.token;
    expect((await server.api.delete(`/v1/recordings/${botId}/share`, { token: user.token })).status).toBe(
      204,
    );
    await expectGone(revoked);
    expect((await server.api.get(`/v1/recordings/${botId}/share`, { token: user.token })).status).toBe(404);
    expect((await server.api.delete(`/v1/recordings/${botId}/share`, { token: user.token })).status).toBe(
      404,
    );

    const expired = (await share()).body.token;
    await db.kysely
      .updateTable("recording_shares")
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where("bot_id", "=", botId)
      .execute();
    await expectGone(expired);
    expect((await server.api.get(`/v1/recordings/${botId}/share`, { token: user.token })).status).toBe(404);
  });

  test("is the owner's only: another user gets a 404, a bot without a recording a 404", async () => {
    const stranger = await registerUser(server.api);
    expect((await share(botId, {}, stranger.token)).status).toBe(404);
    expect((await server.api.get(`/v1/recordings/${botId}/share`, { token: stranger.token })).status).toBe(
      404,
    );
    expect((await server.api.delete(`/v1/recordings/${botId}/share`, { token: stranger.token })).status).toBe(
      404,
    );
    const created = await server.api.post("/v1/bots", {
      token: user.token,
      body: { meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" } },
    });
    expect((await share(created.body.id)).status).toBe(404);
  });
});

describe("a deleted bot", () => {
  test("takes its share link with it", async () => {
    const id = await recorded(user, "Gone");
    const { token } = (await share(id)).body;
    expect((await server.api.delete(`/v1/bots/${id}`, { token: user.token })).status).toBe(204);
    expect(await storedShares(id)).toEqual([]);
    await expectGone(token);
  });
});

describe("share link rate limit", () => {
  test("limits the public routes per client address, on a budget of their own", async () => {
    const clock = new TestClock();
    clock.toNextHour(1_000); // no window ends during the test
    const limited = await startBuiltApp({ clock, rateLimit: { perMinute: 3, perHour: 0 } });
    try {
      const owner = await registerUser(limited.api);
      const bot = await deployedBot(limited, owner);
      await bot.runner.status("JOINING_CALL");
      await bot.runner.status("IN_CALL");
      await bot.runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
      expect((await bot.runner.upload(bytes, 1000)).status).toBe(201);
      expect((await bot.runner.status("DONE")).status).toBe(200);
      const created = await limited.api.post(`/v1/recordings/${bot.botId}/share`, {
        token: owner.token,
        body: {},
      });
      const { token } = created.body;
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${limited.url}/v1/share/${token}`)).status);
      expect(statuses).toEqual([200, 200, 200]);
      const over = await fetch(`${limited.url}/v1/share/${token}/stream`);
      expect(over.status).toBe(429);
      expect(over.headers.get("retry-after")).not.toBeNull();
      expect((await over.json()).detail).toMatch(/^Rate limit exceeded: 3 requests per minute/);
      // Unknown tokens count too: guessing is what the limit is for.
      expect((await fetch(`${limited.url}/v1/share/guess`)).status).toBe(429);
      // Sign-in's budget is separate: this address may still log in.
      const login = await limited.api.post("/v1/auth/login", {
        body: { email: owner.email, password: owner.password },
      });
      expect(login.status).toBe(200);
      clock.advance(60_000);
      expect((await fetch(`${limited.url}/v1/share/${token}`)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
