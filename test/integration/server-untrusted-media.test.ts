import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import { extractAudio } from "../../src/intelligence/audio.js";
import { prepareUploadAudio } from "../../src/intelligence/provider-audio.js";
import { probeDurationMs } from "../../src/media/untrusted-input.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import {
  deployedBot,
  makeSegmentedMp4,
  makeTestMp4,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
  settledJob,
} from "../helpers/server-harness.js";

/**
 * A runner's bytes are untrusted: whoever holds one bot's callback token must not get ffmpeg on
 * the server to read another tenant's recording into theirs. The probe's attack: a "recording"
 * that is an HLS playlist or DASH manifest naming that recording's file.
 */

const run = promisify(execFile);

let scratch: string;
let server: TestServer;
let victim: TestUser;
let attacker: TestUser;
let mp4: Uint8Array;
let victimBot: number;

const playlist = (target: string) =>
  `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:2.0,\n${target}\n#EXT-X-ENDLIST\n`;
const manifest = (target: string) =>
  `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2S">` +
  `<Period><AdaptationSet><Representation id="1" bandwidth="1"><BaseURL>${target}</BaseURL>` +
  `</Representation></AdaptationSet></Period></MPD>`;

test.beforeAll(async ({ server: fileServer }) => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-untrusted-"));
  mp4 = await makeTestMp4(scratch);
  server = fileServer;
  victim = await registerUser(server.api);
  attacker = await registerUser(server.api);
  victimBot = await recordMeeting(server, victim, { recording: mp4 });
}, 60_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function victimFile(): string {
  return path.join(server.dataDir, "recordings", `${victimBot}.mp4`);
}

describe("a playlist uploaded as a recording", () => {
  test("is a readable attack: ffmpeg left to guess follows it to the file it names", async () => {
    // The control: without the server's forced input format this file is 2 s of someone's media.
    const evil = path.join(scratch, "evil.mp4");
    await writeFile(evil, playlist(victimFile()));
    const { stdout } = await run("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "format=duration",
      "-of",
      "csv=p=0",
      evil,
    ]);
    expect(Number(stdout.trim())).toBeGreaterThan(1);
  });

  test("is refused (422) as a whole upload, storing nothing", async () => {
    for (const body of [playlist(victimFile()), manifest(victimFile()), "", "ftyp"]) {
      const { botId, runner } = await deployedBot(server, attacker);
      const res = await runner.upload(new TextEncoder().encode(body), 2000);
      expect(res.status).toBe(422);
      expect(validationIssues(res.body)[0]).toMatchObject({ loc: ["body"], type: "value_error" });
      expect(validationIssues(res.body)[0]?.msg).toContain("ftyp");
      expect((await server.api.get(`/v1/recordings/${botId}`, { token: attacker.token })).status).toBe(404);
      const stored = await readdir(path.join(server.dataDir, "recordings"));
      expect(stored.filter((name) => name.startsWith(`${botId}.`))).toEqual([]);
    }
  });

  test("is refused (422) as a segment, first or later, and cannot be completed", async () => {
    const media = await makeSegmentedMp4(scratch, 3, 3);
    const { botId, runner } = await deployedBot(server, attacker);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    const relative = path.relative(
      path.join(server.dataDir, "recordings", "segments", String(botId)),
      victimFile(),
    );
    for (const target of [victimFile(), relative]) {
      expect((await runner.uploadSegment(0, new TextEncoder().encode(playlist(target)))).status).toBe(422);
      expect((await runner.uploadSegment(0, new TextEncoder().encode(manifest(target)))).status).toBe(422);
    }
    // A real first segment, then a later one that is a playlist or opens a new file: refused.
    expect((await runner.uploadSegment(0, media.segments[0]!)).status).toBe(201);
    const later = await runner.uploadSegment(1, new TextEncoder().encode(playlist(victimFile())));
    expect(later.status).toBe(422);
    expect(validationIssues(later.body)[0]?.msg).toContain("moof");
    expect((await runner.uploadSegment(1, media.segments[0]!)).status).toBe(422);
    expect((await runner.completeRecording(2)).status).toBe(409);
    // The real fragments are taken.
    expect((await runner.uploadSegment(1, media.segments[1]!)).status).toBe(201);
    expect((await runner.uploadSegment(2, media.segments[2]!)).status).toBe(201);
    const completed = await runner.completeRecording(3);
    expect(completed.status).toBe(201);
    expect(completed.body.durationSeconds).toBeGreaterThan(2);
  });
});

describe("a playlist already stored as a recording (before uploads were checked)", () => {
  test("is never read by a transcript job: the job fails as unreadable media", async () => {
    const botId = await recordMeeting(server, attacker, { recording: mp4 });
    // The file on disk becomes the playlist, naming the other tenant's recording beside it.
    await writeFile(path.join(server.dataDir, "recordings", `${botId}.mp4`), playlist(`${victimBot}.mp4`));
    const started = await server.api.post(`/v1/transcripts/${botId}/transcribe`, { token: attacker.token });
    expect(started.status).toBe(202);
    const status = await settledJob(server.api, attacker.token, `/v1/transcripts/${botId}/status`);
    expect(status).toMatchObject({ status: "failed" });
    expect(status.error?.code).toBe("media_unreadable");
  });

  test("is read by no server-side ffmpeg or ffprobe: audio extraction, provider audio, the probe", async () => {
    const dir = await mkdtemp(path.join(scratch, "beside-"));
    await writeFile(path.join(dir, "1.mp4"), mp4);
    for (const body of [playlist("1.mp4"), manifest("1.mp4")]) {
      const evil = path.join(dir, "evil.mp4");
      await writeFile(evil, body);
      await expect(extractAudio(evil, { tmpDir: dir })).rejects.toMatchObject({ code: "media_unreadable" });
      await expect(prepareUploadAudio(evil, dir)).rejects.toMatchObject({ code: "media_unreadable" });
      await expect(probeDurationMs(evil)).rejects.toThrow();
    }
    // The same calls read the real file.
    expect(await probeDurationMs(path.join(dir, "1.mp4"))).toBeGreaterThan(1500);
    const audio = await extractAudio(path.join(dir, "1.mp4"), { tmpDir: dir });
    expect(audio.durationMs).toBeGreaterThan(1500);
    await audio.dispose();
  });
});
