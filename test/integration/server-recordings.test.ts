import { createHmac } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import { DownloadSigner } from "../../src/server/auth/signed-urls.js";
import { loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  deployedBot,
  makeTestMp4,
  registerUser,
  type TestServer,
  type TestUser,
  mp4Bytes,
  defined,
  type ErrorFields,
  validationIssues,
} from "../helpers/server-harness.js";

let server: TestServer;
let user: TestUser;
let mp4: Uint8Array;
let scratch: string;
test.beforeAll(async ({ server: fileServer }) => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-mp4-"));
  server = fileServer;
  mp4 = await makeTestMp4(scratch);
  user = await registerUser(server.api);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const get = <P extends string>(p: P, token = user.token) => server.api.get(p, { token });
const types = (list: { eventType: string }[]) => list.map((e) => e.eventType);

async function fetchBytes(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

describe("a bot's whole life, played by a fake runner", () => {
  test("goes from deploy to DONE with events, aggregated events, a recording and a download link", async () => {
    const { botId, runner } = await deployedBot(server, user, {
      botDisplayName: "Scribe",
      meetingTitle: "Retro",
    });
    expect((await get(`/v1/bots/${botId}`)).body.status).toBe("DEPLOYING");

    expect((await runner.status("JOINING_CALL")).body.status).toBe("JOINING_CALL");
    expect((await runner.status("IN_WAITING_ROOM")).body.status).toBe("IN_WAITING_ROOM");
    expect((await runner.status("IN_CALL")).body.status).toBe("IN_CALL");
    await runner.send({ type: "recording.started", data: { width: 1280, height: 720, frameRate: 25 } });
    await runner.send({
      type: "participant.joined",
      data: { participantId: "p-1", participantName: "Alice Liddell" },
    });
    await runner.send({ type: "heartbeat", data: {} });
    await runner.send({
      type: "participant.left",
      data: { participantId: "p-1", participantName: "Alice Liddell" },
    });
    await runner.send({ type: "recording.stopped", data: { durationMs: 2000, sizeBytes: mp4.length } });
    expect((await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" })).body.status).toBe("CALL_ENDED");

    const upload = await runner.upload(mp4, 2000);
    expect(upload.status).toBe(201);
    expect(upload.body).toEqual({
      botId,
      format: "mp4",
      mimeType: "video/mp4",
      sizeBytes: mp4.length,
      durationSeconds: 2,
      createdAt: expect.any(String),
    });
    expect((await runner.status("DONE")).body).toEqual({ applied: true, status: "DONE" });

    const bot = await get(`/v1/bots/${botId}`);
    expect(bot.body).toMatchObject({ status: "DONE", deploymentError: null, recording: upload.body });
    const listed = await get("/v1/bots?status=DONE");
    expect(
      defined(
        listed.body.bots.find((b) => b.id === botId),
        "listed bot",
      ).recording,
    ).toEqual(upload.body);

    const events = await get(`/v1/bots/${botId}/events`);
    expect(types(events.body)).toEqual([
      "BOT_JOINED",
      "RECORDING_STARTED",
      "PARTICIPANT_JOINED",
      "PARTICIPANT_LEFT",
      "RECORDING_STOPPED",
      "BOT_LEFT",
    ]);
    expect(events.body[2]?.data).toMatchObject({ participantName: "Alice Liddell" });
    expect(events.body[0]?.data).toEqual({ meetingTitle: "Retro", platform: "google" });

    const agg = await get(`/v1/events?bot_id=${botId}`);
    expect(agg.body.total).toBe(6);
    expect(types(agg.body.events)).toEqual([
      "DONE",
      "CALL_ENDED",
      "RECORDING",
      "IN_CALL",
      "IN_WAITING_ROOM",
      "JOINING_CALL",
    ]);
    expect(agg.body.events[0]).toMatchObject({ botId, botName: "Scribe", platform: "google" });
    const inCall = await get(`/v1/events?bot_id=${botId}&event_type=IN_CALL`);
    expect(inCall.body.total).toBe(1);
    expect(inCall.body.events[0]).toMatchObject({
      eventType: "IN_CALL",
      data: { meetingTitle: "Retro", platform: "google" },
    });

    const info = await get(`/v1/recordings/${botId}`);
    expect(info.status).toBe(200);
    // The recording info adds the speaker timeline (empty: this runner reported no speakers).
    expect(info.body).toEqual({
      ...upload.body,
      transcriptStatus: null,
      summaryStatus: null,
      speakerTimeline: [],
    });

    const link = await get(`/v1/recordings/${botId}/download`);
    expect(link.status).toBe(200);
    expect(link.body.url.startsWith(`${server.url}/v1/recordings/${botId}/file?`)).toBe(true);
    const expires = Number(new URL(link.body.url).searchParams.get("expires"));
    expect(new Date(link.body.expiresAt).getTime()).toBe(expires * 1000);

    const file = await fetchBytes(link.body.url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("video/mp4");
    expect(file.headers.get("content-length")).toBe(String(mp4.length));
    expect(Buffer.from(file.bytes).equals(Buffer.from(mp4))).toBe(true);

    const part = await fetchBytes(link.body.url, { range: "bytes=100-199" });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 100-199/${mp4.length}`);
    expect(part.headers.get("content-length")).toBe("100");
    expect(Buffer.from(part.bytes).equals(Buffer.from(mp4.subarray(100, 200)))).toBe(true);

    const tail = await fetchBytes(link.body.url, { range: "bytes=-10" });
    expect(tail.status).toBe(206);
    expect(Buffer.from(tail.bytes).equals(Buffer.from(mp4.subarray(mp4.length - 10)))).toBe(true);

    const beyond = await fetchBytes(link.body.url, { range: `bytes=${mp4.length}-` });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe(`bytes */${mp4.length}`);

    const tampered = new URL(link.body.url);
    const sig = tampered.searchParams.get("signature") as string;
    tampered.searchParams.set("signature", `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`);
    const refused = await server.api.request<ErrorFields>("GET", tampered.toString());
    expect(refused.status).toBe(403);
    expect(typeof refused.body.detail).toBe("string");

    const later = new URL(link.body.url);
    later.searchParams.set("expires", String(expires + 3600));
    expect((await server.api.get(later.toString())).status).toBe(403);
  });
});

describe("PUT /v1/bot-callbacks/:id/recording", () => {
  test("streams a body larger than the JSON limit to disk and replaces an earlier upload", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const big = mp4Bytes(3 * 1024 * 1024 + 7);
    const first = await runner.upload(big, 61_500);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ sizeBytes: big.length, durationSeconds: 61.5 });

    const second = await runner.upload(mp4, 2000);
    expect(second.body.sizeBytes).toBe(mp4.length);
    expect((await get(`/v1/recordings/${botId}`)).body.sizeBytes).toBe(mp4.length);
    const link = (await get(`/v1/recordings/${botId}/download`)).body.url;
    expect(Buffer.from((await fetchBytes(link)).bytes).equals(Buffer.from(mp4))).toBe(true);
    const files = await readdir(path.join(server.dataDir, "recordings"));
    expect(files).toContain(`${botId}.mp4`);
    expect(files.filter((f) => f.endsWith(".part"))).toEqual([]);
  });

  test("keeps one whole recording when two uploads for a bot run at once", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const a = mp4Bytes(2 * 1024 * 1024);
    const b = mp4Bytes(2 * 1024 * 1024 + 13);
    const [first, second] = await Promise.all([runner.upload(a, 1000), runner.upload(b, 1000)]);
    expect([first.status, second.status]).toEqual([201, 201]);
    const link = (await get(`/v1/recordings/${botId}/download`)).body.url;
    const stored = Buffer.from((await fetchBytes(link)).bytes);
    expect(stored.equals(Buffer.from(a)) || stored.equals(Buffer.from(b))).toBe(true);
    const files = await readdir(path.join(server.dataDir, "recordings"));
    expect(files.filter((f) => f.endsWith(".part"))).toEqual([]);
  });

  test("requires the bot's callback token, video/mp4 and the duration header", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const other = await deployedBot(server, user);
    expect((await runner.upload(mp4, 1, { token: other.config.callback.token })).status).toBe(401);
    expect((await runner.upload(mp4, 1, { token: user.token })).status).toBe(401);
    const json = await runner.upload(mp4, 1, { contentType: "application/json" });
    expect(json.status).toBe(415);
    expect(typeof json.body.detail).toBe("string");
    const noDuration = await server.api.put(runner.config.upload.url, {
      token: runner.config.callback.token,
      rawBody: mp4,
      headers: { "content-type": "video/mp4" },
    });
    expect(noDuration.status).toBe(422);
    expect(validationIssues(noDuration.body)).toEqual([
      { loc: ["header", "x-recording-duration-ms"], msg: "Field required", type: "missing" },
    ]);
    expect((await get(`/v1/recordings/${botId}`)).status).toBe(404);
  });
});

describe("GET /v1/recordings/:bot_id", () => {
  test("answers 404 {detail} while the bot has no recording", async () => {
    const { botId } = await deployedBot(server, user);
    const res = await get(`/v1/recordings/${botId}`);
    expect(res.status).toBe(404);
    expect(typeof res.body.detail).toBe("string");
    expect((await get(`/v1/recordings/${botId}/download`)).status).toBe(404);
  });

  test("hides another user's recording (404) on info and download", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.upload(mp4, 2000);
    const stranger = await registerUser(server.api);
    for (const p of [`/v1/recordings/${botId}`, `/v1/recordings/${botId}/download`]) {
      const res = await get(p, stranger.token);
      expect(res.status, p).toBe(404);
    }
  });
});

describe("GET /v1/recordings/:bot_id/file", () => {
  test("refuses a missing, malformed or expired signature with 403", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.upload(mp4, 2000);
    const signer = new DownloadSigner(await loadServerSecret(server.dataDir));
    const past = Math.floor(Date.now() / 1000) - 60;
    const expired = `/v1/recordings/${botId}/file?expires=${past}&signature=${signer.sign(botId, past)}`;
    const future = Math.floor(Date.now() / 1000) + 600;
    const plainHmac = createHmac("sha256", "wrong-key").update(`${botId}.${future}`).digest("hex");
    for (const p of [
      `/v1/recordings/${botId}/file`,
      `/v1/recordings/${botId}/file?expires=${future}&signature=zz`,
      `/v1/recordings/${botId}/file?expires=${future}&signature=${plainHmac}`,
      expired,
      // a valid signature for another bot's id
      `/v1/recordings/${botId + 1}/file?expires=${future}&signature=${signer.sign(botId, future)}`,
    ]) {
      const res = await server.api.get(p);
      expect(res.status, p).toBe(403);
    }
    const valid = `/v1/recordings/${botId}/file?expires=${future}&signature=${signer.sign(botId, future)}`;
    expect((await fetchBytes(`${server.url}${valid}`)).status).toBe(200);
  });
});
