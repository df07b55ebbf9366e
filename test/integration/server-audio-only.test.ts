import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import type { Db } from "../../src/server/db/database.js";
import {
  deployedBot,
  mp4Bytes,
  registerUser,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";

/**
 * The bot option `recording: {video: false}` (an audio-only bot): its validation, how it is
 * stored and handed to the runner, and how its recording is described and served (format m4a,
 * audio/mp4, an audio player on the share page) beside a video bot's.
 */

// The file's helpers read these: the file's server and database, and each test's own fresh user.
let server: TestServer;
let db: Db;
let user: TestUser;
test.beforeAll(({ server: fileServer, db: fileDb }) => {
  server = fileServer;
  db = fileDb;
});
test.beforeEach(({ user: testUser }) => {
  user = testUser;
});

const createBot = (body: Record<string, unknown>) =>
  server.api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, botDisplayName: "Notetaker", ...body },
  });

/** A deployed bot that delivered a recording of 65 s, then ended DONE. */
async function recordedBot(body: Record<string, unknown>): Promise<number> {
  const bot = await deployedBot(server, user, body);
  await bot.runner.status("JOINING_CALL");
  await bot.runner.status("IN_CALL");
  await bot.runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
  expect((await bot.runner.upload(mp4Bytes(16 * 1024), 65_000)).status).toBe(201);
  expect((await bot.runner.status("DONE")).status).toBe(200);
  return bot.botId;
}

describe("the recording option", () => {
  test("answers 422 at body.recording for anything but {video: boolean}", async () => {
    for (const [recording, loc] of [
      [{ video: "no" }, "body.recording.video"],
      [{ video: null }, "body.recording.video"],
      [{ video: false, width: 640 }, "body.recording"],
      ["audio", "body.recording"],
    ] as const) {
      const res = await createBot({ recording });
      expect(res.status, JSON.stringify(recording)).toBe(422);
      const issues = validationIssues(res.body);
      expect(issues.map((d) => d.loc.join("."))).toContain(loc);
      for (const d of issues) expect(typeof d.msg).toBe("string");
    }
  });

  test("is stored as created, answered as recordingOptions, and changed by PATCH before deployment", async () => {
    const video = await createBot({});
    expect(video.body.recordingOptions).toEqual({ video: true });
    const audio = await createBot({ recording: { video: false } });
    expect(audio.status).toBe(201);
    expect(audio.body.recordingOptions).toEqual({ video: false });
    const rows = await db.kysely
      .selectFrom("bots")
      .select(["id", "recording_options"])
      .where("id", "in", [video.body.id, audio.body.id])
      .orderBy("id")
      .execute();
    expect(rows.map((row) => row.recording_options)).toEqual([null, '{"video":false}']);

    const patched = await server.api.patch(`/v1/bots/${video.body.id}`, {
      token: user.token,
      body: { recording: { video: false } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.recordingOptions).toEqual({ video: false });
    const back = await server.api.patch(`/v1/bots/${video.body.id}`, {
      token: user.token,
      body: { recording: { video: true } },
    });
    expect(back.body.recordingOptions).toEqual({ video: true });
  });

  test("reaches the runner in its BotConfig; a video bot's config records video", async () => {
    const audio = await deployedBot(server, user, { recording: { video: false } });
    expect(audio.config.recording).toEqual({ width: 1280, height: 720, frameRate: 25, video: false });
    const video = await deployedBot(server, user, {});
    expect(video.config.recording.video).toBe(true);
  });
});

describe("an audio-only bot's recording", () => {
  let audioBot: number;
  let videoBot: number;
  // These tests share two recorded bots, so they share their owner too.
  let owner: TestUser;
  test.beforeAll(async () => {
    owner = await registerUser(server.api);
    user = owner;
    audioBot = await recordedBot({ recording: { video: false }, meetingTitle: "Audio standup" });
    videoBot = await recordedBot({ meetingTitle: "Video standup" });
  });
  test.beforeEach(() => {
    user = owner;
  });

  test("is format m4a, audio/mp4, in the bot, the recording and the list; a video bot's stays mp4", async () => {
    const get = <P extends string>(path: P) => server.api.get(path, { token: user.token });
    expect((await get(`/v1/recordings/${audioBot}`)).body).toMatchObject({
      format: "m4a",
      mimeType: "audio/mp4",
    });
    expect((await get(`/v1/bots/${audioBot}`)).body.recording).toMatchObject({
      format: "m4a",
      mimeType: "audio/mp4",
    });
    expect((await get(`/v1/recordings/${videoBot}`)).body).toMatchObject({
      format: "mp4",
      mimeType: "video/mp4",
    });
    const listed = (await get("/v1/recordings?page_size=100")).body.recordings;
    expect(listed.find((r) => r.botId === audioBot)?.format).toBe("m4a");
    expect(listed.find((r) => r.botId === videoBot)?.format).toBe("mp4");
    const stored = await db.kysely
      .selectFrom("recordings")
      .select("format")
      .where("bot_id", "=", audioBot)
      .executeTakeFirstOrThrow();
    expect(stored.format).toBe("m4a");
  });

  test("is served as audio/mp4 by the stream route and the signed link, with ranges", async () => {
    const headers = { authorization: `Bearer ${user.token}`, range: "bytes=0-9" };
    const stream = await fetch(`${server.url}/v1/recordings/${audioBot}/stream`, { headers });
    expect(stream.status).toBe(206);
    expect(stream.headers.get("content-type")).toBe("audio/mp4");
    expect((await stream.arrayBuffer()).byteLength).toBe(10);
    const link = await server.api.get(`/v1/recordings/${audioBot}/download`, { token: user.token });
    const file = await fetch(link.body.url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("audio/mp4");
    await file.arrayBuffer();
    const video = await fetch(`${server.url}/v1/recordings/${videoBot}/stream`, { headers });
    expect(video.headers.get("content-type")).toBe("video/mp4");
    await video.arrayBuffer();
  });

  test("is shared with an audio player, and its JSON says m4a", async () => {
    const shared = await server.api.post(`/v1/recordings/${audioBot}/share`, { token: user.token, body: {} });
    expect(shared.status).toBe(201);
    const { token } = shared.body as { token: string };
    const json = await (await fetch(`${server.url}/v1/share/${token}`)).json();
    expect(json).toMatchObject({ meetingTitle: "Audio standup", format: "m4a" });
    const html = await (
      await fetch(`${server.url}/v1/share/${token}`, { headers: { accept: "text/html" } })
    ).text();
    expect(html).toContain(`<audio controls preload="metadata" src="${token}/stream"></audio>`);
    expect(html).not.toContain("<video");
    const stream = await fetch(`${server.url}/v1/share/${token}/stream`, { headers: { range: "bytes=0-3" } });
    expect(stream.headers.get("content-type")).toBe("audio/mp4");
    await stream.arrayBuffer();
  });
});
