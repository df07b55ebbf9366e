import { access } from "node:fs/promises";
import path from "node:path";
import { describe } from "vitest";
import { expect, recordedBot, test } from "../helpers/fixtures.js";
import { errorDetail, mp4Bytes, registerUser, type TestUser } from "../helpers/server-harness.js";

async function fetchBytes(url: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

describe("GET /v1/recordings", () => {
  test("lists the user's recordings newest first, paginated, and nobody else's", async ({ server }) => {
    const owner = await registerUser(server.api);
    const other = await registerUser(server.api);
    const a = await recordedBot(server, owner, { bytes: mp4Bytes(1000), title: "First", durationMs: 1500 });
    const b = await recordedBot(server, owner, { bytes: mp4Bytes(2000), title: "Second" });
    const c = await recordedBot(server, owner, { bytes: mp4Bytes(3000), title: "Third" });
    await recordedBot(server, other, { bytes: mp4Bytes(10) });
    // A bot without a recording is not listed.
    expect(
      (
        await server.api.post("/v1/bots", {
          token: owner.token,
          body: { meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" } },
        })
      ).status,
    ).toBe(201);

    const all = await server.api.get("/v1/recordings", { token: owner.token });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, page: 1, page_size: 20 });
    expect(all.body.recordings.map((r: { botId: number }) => r.botId)).toEqual([c.botId, b.botId, a.botId]);
    expect(all.body.recordings[2]).toEqual({
      botId: a.botId,
      botDisplayName: "Notetaker",
      meetingTitle: "First",
      platform: "google",
      durationMs: 1500,
      sizeBytes: 1000,
      format: "mp4",
      createdAt: expect.any(String),
      transcriptStatus: null,
      summaryStatus: null,
    });

    const page2 = await server.api.get("/v1/recordings?page=2&page_size=2", { token: owner.token });
    expect(page2.body).toMatchObject({ total: 3, page: 2, page_size: 2 });
    expect(page2.body.recordings.map((r: { botId: number }) => r.botId)).toEqual([a.botId]);

    const theirs = await server.api.get("/v1/recordings", { token: other.token });
    expect(theirs.body.total).toBe(1);
    expect((await server.api.get("/v1/recordings?page_size=101", { token: owner.token })).status).toBe(422);
  });
});

describe("GET /v1/recordings/{bot_id}/stream", () => {
  const bytes = mp4Bytes(64 * 1024);
  const size = bytes.length;
  let url: string;
  let auth: Record<string, string>;
  let etag: string;
  // One recording for the describe's tests (its owner too: users are per test otherwise).
  let owner: TestUser;
  test.beforeAll(async ({ server }) => {
    owner = await registerUser(server.api);
    const { botId } = await recordedBot(server, owner, { bytes });
    url = `${server.url}/v1/recordings/${botId}/stream`;
    auth = { authorization: `Bearer ${owner.token}` };
  });

  test("serves the whole file with the headers a player needs", async () => {
    const whole = await fetchBytes(url, { headers: auth });
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-type")).toBe("video/mp4");
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    expect(whole.headers.get("content-length")).toBe(String(size));
    etag = whole.headers.get("etag") ?? "";
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(whole.bytes).toEqual(bytes);
  });

  test("answers a HEAD with the headers only", async () => {
    const head = await fetchBytes(url, { method: "HEAD", headers: { ...auth, range: "bytes=10-19" } });
    expect(head.status).toBe(206);
    expect(head.headers.get("content-range")).toBe(`bytes 10-19/${size}`);
    expect(head.headers.get("content-length")).toBe("10");
    expect(head.bytes.length).toBe(0);
  });

  test("serves one range as a 206, in each of its forms", async () => {
    const cases: [string, number, number][] = [
      ["bytes=100-199", 100, 199],
      ["bytes=-10", size - 10, size - 1],
      [`bytes=${size - 5}-`, size - 5, size - 1],
      [`bytes=0-${size * 2}`, 0, size - 1],
      [`bytes=-${size * 2}`, 0, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const part = await fetchBytes(url, { headers: { ...auth, range } });
      expect(part.status, range).toBe(206);
      expect(part.headers.get("content-range"), range).toBe(`bytes ${start}-${end}/${size}`);
      expect(part.headers.get("content-length"), range).toBe(String(end - start + 1));
      expect(part.headers.get("etag"), range).toBe(etag);
      expect(part.bytes, range).toEqual(bytes.slice(start, end + 1));
    }
  });

  test("answers 416 with bytes */size for a start past the end", async () => {
    for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, "bytes=-0"]) {
      const res = await fetch(url, { headers: { ...auth, range } });
      expect(res.status, range).toBe(416);
      expect(res.headers.get("content-range"), range).toBe(`bytes */${size}`);
      expect(await res.json(), range).toEqual({ detail: "Range not satisfiable" });
    }
  });

  test("serves the whole file for several ranges and for a malformed Range", async () => {
    for (const range of ["bytes=0-9,20-29", "bytes=abc", "items=0-9", "bytes=9-0", "bytes=-"]) {
      const res = await fetchBytes(url, { headers: { ...auth, range } });
      expect(res.status, range).toBe(200);
      expect(res.headers.get("content-range"), range).toBeNull();
      expect(res.bytes.length, range).toBe(size);
    }
  });

  test("honours If-Range only when it matches the current ETag", async () => {
    const matching = await fetchBytes(url, { headers: { ...auth, range: "bytes=0-9", "if-range": etag } });
    expect(matching.status).toBe(206);
    expect(matching.bytes).toEqual(bytes.slice(0, 10));
    for (const stale of ['"stale"', `W/${etag}`, "Mon, 23 Nov 2026 10:00:00 GMT"]) {
      const res = await fetchBytes(url, { headers: { ...auth, range: "bytes=0-9", "if-range": stale } });
      expect(res.status, stale).toBe(200);
      expect(res.bytes, stale).toEqual(bytes);
    }
  });

  test("changes the ETag when the recording is uploaded again", async ({ server }) => {
    const { botId, runner } = await recordedBot(server, owner, { bytes, done: false });
    const first = (await fetch(`${server.url}/v1/recordings/${botId}/stream`, { headers: auth })).headers;
    const again = mp4Bytes(100);
    expect((await runner.upload(again, 1000)).status).toBe(201);
    const res = await fetchBytes(`${server.url}/v1/recordings/${botId}/stream`, {
      headers: { ...auth, range: "bytes=0-9", "if-range": first.get("etag") ?? "" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).not.toBe(first.get("etag"));
    expect(res.bytes).toEqual(again);
  });

  test("is a 404 for another user's recording and a 401 without a credential", async ({ server }) => {
    const stranger = await registerUser(server.api);
    const res = await fetch(url, { headers: { authorization: `Bearer ${stranger.token}` } });
    expect(res.status).toBe(404);
    expect((await fetch(url)).status).toBe(401);
  });

  test("serves the signed download link the same way (the URL for a <video> element)", async ({ server }) => {
    const botId = url.split("/").at(-2);
    const link = await server.api.get(`/v1/recordings/${botId}/download`, { token: owner.token });
    const part = await fetchBytes(link.body.url, { headers: { range: "bytes=5-9", "if-range": etag } });
    expect(part.status).toBe(206);
    expect(part.headers.get("etag")).toBe(etag);
    expect(part.bytes).toEqual(bytes.slice(5, 10));
  });
});

describe("DELETE /v1/recordings/{bot_id}", () => {
  test("is a 409 while the bot runs, then deletes the file, its share link and nothing else of the bot", async ({
    server,
    user,
    db,
  }) => {
    const bytes = mp4Bytes(4096);
    const { botId, runner } = await recordedBot(server, user, { bytes, done: false });
    const base = `/v1/recordings/${botId}` as const;
    const running = await server.api.delete(base, { token: user.token });
    expect(running.status).toBe(409);
    expect(errorDetail(running.body)).toContain("CALL_ENDED");
    expect((await server.api.post(`${base}/share`, { token: user.token, body: {} })).status).toBe(201);
    expect((await runner.status("DONE")).status).toBe(200);

    const file = path.join(server.dataDir, "recordings", `${botId}.mp4`);
    await access(file);
    const link = await server.api.get(`${base}/download`, { token: user.token });

    const stranger = await registerUser(server.api);
    expect((await server.api.delete(base, { token: stranger.token })).status).toBe(404);

    const deleted = await server.api.delete(base, { token: user.token });
    expect(deleted.status).toBe(204);
    await expect(access(file)).rejects.toThrow();
    expect((await server.api.get(base, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`${base}/download`, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`${base}/stream`, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`${base}/share`, { token: user.token })).status).toBe(404);
    expect((await fetch(link.body.url)).status).toBe(404);
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
    expect(bot.body).toMatchObject({ status: "DONE", recording: null });
    const shares = await db.kysely
      .selectFrom("recording_shares")
      .selectAll()
      .where("bot_id", "=", botId)
      .execute();
    expect(shares).toEqual([]);
    expect((await server.api.delete(base, { token: user.token })).status).toBe(404);
  });
});
