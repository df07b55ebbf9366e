import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, vi } from "vitest";
import { SegmentUploader } from "../../src/runner/segment-upload.js";
import { uploadRecording } from "../../src/runner/upload.js";
import {
  deployedBot,
  probeMedia,
  registerUser,
  startTestServer,
  type TestServer,
} from "../helpers/server-harness.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import { expect, test } from "../helpers/fixtures.js";

const log = pino({ level: "silent" });
let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-runner-segments-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** ffmpeg writing a live fragmented MP4 the way the recorder does (1 s fragments, flushed), in real time. */
function liveRecording(
  file: string,
  seconds: number,
): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(
    "ffmpeg",
    [
      ...["-hide_banner", "-loglevel", "error", "-y", "-re"],
      ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440"],
      ...["-t", String(seconds), "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-c:a", "aac"],
      ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
      ...["-frag_duration", "1000000", "-flush_packets", "1", file],
    ],
    { stdio: "ignore" },
  );
  return { child, exited: new Promise((resolve) => child.once("exit", resolve)) };
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  await vi.waitFor(
    () => {
      if (!check()) throw new Error(`still waiting for ${what}`);
    },
    { timeout: timeoutMs },
  );
}

const storedSegments = (server: TestServer, botId: number) => {
  const dir = path.join(server.dataDir, "recordings", "segments", String(botId));
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".m4s")).length : 0;
};

describe("SegmentUploader against the control plane", () => {
  test("uploads while ffmpeg writes, then the recording is completed from its segments", async ({
    server,
    user,
  }) => {
    const { botId, config } = await deployedBot(server, user);
    const file = path.join(scratch, "live.mp4");
    const ffmpeg = liveRecording(file, 5);
    await until(() => existsSync(file) && statSync(file).size > 0, "ffmpeg's first bytes");
    const uploader = new SegmentUploader(config, file, 1_000, log);
    await uploader.start();
    // Segments arrive while the recording is still being written.
    await until(() => storedSegments(server, botId) >= 2, "two segments during the recording");
    expect(ffmpeg.child.exitCode).toBeNull();
    expect(await ffmpeg.exited).toBe(0);

    const segments = await uploader.finish();
    expect(segments).toBeGreaterThanOrEqual(3);
    expect(uploader.uploadedBytes).toBe(statSync(file).size);
    const local = await probeMedia(file);
    await uploadRecording(config, { path: file, durationMs: 0, uploadedSegments: segments as number }, log);
    // Delivered: the local copy is gone, the server has one recording and no segments.
    expect(existsSync(file)).toBe(false);
    const recording = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
    expect(recording.status).toBe(200);
    expect(recording.body.durationSeconds).toBeCloseTo(local.durationSeconds, 1);
    expect(storedSegments(server, botId)).toBe(0);
  });
});

// A server restarted mid-test on its data dir and port: its own, not the fixture.
describe("SegmentUploader across a control-plane outage", () => {
  test("sends the backlog once the control plane is back, and nothing is missing", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-segments-outage-"));
    let server = await startTestServer({ dataDir });
    const port = Number(new URL(server.url).port);
    const user = await registerUser(server.api);
    const { botId, config } = await deployedBot(server, user);
    const file = path.join(scratch, "outage.mp4");
    const ffmpeg = liveRecording(file, 6);
    try {
      await until(() => existsSync(file) && statSync(file).size > 0, "ffmpeg's first bytes");
      const uploader = new SegmentUploader(config, file, 1_000, log);
      await uploader.start();
      await until(() => storedSegments(server, botId) >= 1, "the first segment");
      await server.close();
      // Down while a good part of the recording is written.
      const sizeWhenDown = statSync(file).size;
      await until(() => statSync(file).size > sizeWhenDown * 2, "more recording during the outage");
      server = await startTestServer({ dataDir, port });
      expect(await ffmpeg.exited).toBe(0);
      const segments = await uploader.finish();
      expect(segments).not.toBeNull();
      const local = await probeMedia(file);
      await uploadRecording(config, { path: file, durationMs: 0, uploadedSegments: segments as number }, log);
      const recording = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
      expect(recording.status).toBe(200);
      expect(recording.body.durationSeconds).toBeCloseTo(local.durationSeconds, 1);
    } finally {
      ffmpeg.child.kill("SIGKILL");
      await server.close();
      await (await testDatabaseFor(dataDir))?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
