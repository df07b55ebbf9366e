import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { prepareUploadAudio } from "../../src/intelligence/provider-audio.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import {
  deployedBot,
  makeSegmentedMp4,
  makeTestMp4,
  registerUser,
  settledJob,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The server's helper programs (ffmpeg and ffprobe at the end of a call and in content jobs,
 * pocketsphinx) read bytes from runners and meetings: none of them may hold the server's secrets.
 * A canary is put in this process's environment (which is the in-process server's), and each
 * program is reached through a stand-in on PATH that writes down the environment it was given
 * (what /proc/<pid>/environ shows, caught without racing a short-lived process) and then runs the
 * real program.
 */

const PROGRAMS = ["ffmpeg", "ffprobe", "pocketsphinx_continuous"];
const CANARY = `canary-${randomBytes(12).toString("hex")}`;

let scratch: string;
let dumps: string;
let server: TestServer;
let user: TestUser;
let mp4: Uint8Array;
let media: { segments: Uint8Array[] };
const SAVED = ["PATH", "MEETBOT_CANARY_SECRET", "MEETBOT_JWT_SECRET"].map(
  (name) => [name, process.env[name]] as const,
);

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-child-env-"));
  // The test's own media, made before the stand-ins are on PATH: only the server's programs count.
  mp4 = await makeTestMp4(scratch);
  media = await makeSegmentedMp4(scratch, 2, 2);
  dumps = path.join(scratch, "environments");
  const bin = path.join(scratch, "bin");
  await mkdir(dumps);
  await mkdir(bin);
  for (const program of PROGRAMS) {
    const stand = path.join(bin, program);
    await writeFile(stand, `#!/bin/sh\nenv > "${dumps}/${program}.$$"\nexec /usr/bin/${program} "$@"\n`);
    await chmod(stand, 0o755);
  }
  process.env.PATH = `${bin}:${process.env.PATH}`;
  process.env.MEETBOT_CANARY_SECRET = CANARY;
  // The server's own secret, read from this environment as in production.
  process.env.MEETBOT_JWT_SECRET = `${CANARY}-${randomBytes(16).toString("hex")}`;
}, 60_000);
// The file's server starts after the hook above: it reads that environment.
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  user = await registerUser(server.api);
});

afterAll(async () => {
  for (const [name, value] of SAVED) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await rm(scratch, { recursive: true, force: true });
});

async function environments(): Promise<Array<{ program: string; env: string }>> {
  const names = await readdir(dumps);
  return Promise.all(
    names.map(async (name) => ({
      program: name.split(".")[0]!,
      env: await readFile(path.join(dumps, name), "utf8"),
    })),
  );
}

describe("the server's helper programs", () => {
  test("get the allowlisted environment, never the server's secrets", async () => {
    // A call's segments completed into the recording: ffmpeg (remux) and ffprobe.
    const { runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    for (const [seq, segment] of media.segments.entries()) {
      expect((await runner.uploadSegment(seq, segment)).status).toBe(201);
    }
    expect((await runner.completeRecording(media.segments.length)).status).toBe(201);

    // A transcript with the embedded engine: ffmpeg (audio) and pocketsphinx.
    const botId = await recordMeeting(server, user, { recording: mp4 });
    expect((await server.api.post(`/v1/transcripts/${botId}/transcribe`, { token: user.token })).status).toBe(
      202,
    );
    const settled = await settledJob(server.api, user.token, `/v1/transcripts/${botId}/status`);
    expect(settled.status).toBe("completed");

    // The provider engines' audio: ffprobe and ffmpeg.
    const work = await mkdtemp(path.join(scratch, "provider-"));
    const mp4Path = path.join(work, "recording.mp4");
    await writeFile(mp4Path, mp4);
    await prepareUploadAudio(mp4Path, work);

    const seen = await environments();
    expect(new Set(seen.map((s) => s.program))).toEqual(new Set(PROGRAMS));
    for (const { program, env } of seen) {
      expect(env, program).not.toContain(CANARY);
      expect(env, program).not.toMatch(/^MEETBOT_/m);
      expect(env, program).toMatch(/^PATH=/m);
    }
  });
});
