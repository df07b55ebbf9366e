import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import { deployedBot, makeSegmentedMp4, probeMedia, type TestServer } from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/** Segments on MEETBOT_STORAGE=s3: objects under recordings/segments/<bot id>/, against s3rver. */
const BUCKET = "segments";
let s3: S3Server;
let server: TestServer;
let scratch: string;
let media: { whole: Uint8Array; segments: Uint8Array[] };
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-s3-segments-"));
  [s3, media] = await Promise.all([startS3Server([BUCKET]), makeSegmentedMp4(scratch, 4, 4)]);
});
// Stores in the bucket of the S3 server started above.
test.override("serverOptions", { scope: "file" }, () => ({ env: s3.env(BUCKET) }));
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});
afterAll(async () => {
  await s3?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** The keys of the bucket under `prefix`, from the store's own listing (GET ?list-type=2). */
async function keysUnder(prefix: string): Promise<string[]> {
  const response = await fetch(`${s3.endpoint}/${BUCKET}?list-type=2&prefix=${encodeURIComponent(prefix)}`);
  const xml = await response.text();
  return [...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1] as string).sort();
}

describe("segments on S3", () => {
  test("keeps segments as objects, completes them into the recording object and deletes them", async ({
    user,
  }) => {
    const { botId, runner } = await deployedBot(server, user);
    for (const seq of [3, 1, 0, 2, 1]) {
      expect((await runner.uploadSegment(seq, media.segments[seq] as Uint8Array)).status).toBe(201);
    }
    expect(await keysUnder(`recordings/segments/${botId}/`)).toEqual(
      [0, 1, 2, 3].map((seq) => `recordings/segments/${botId}/${seq}.m4s`),
    );
    const completed = await runner.completeRecording(4);
    expect(completed.status).toBe(201);
    expect(await keysUnder(`recordings/segments/${botId}/`)).toEqual([]);
    expect(await keysUnder(`recordings/${botId}.mp4`)).toEqual([`recordings/${botId}.mp4`]);

    const res = await fetch(`${server.url}/v1/recordings/${botId}/stream`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(res.status).toBe(200);
    const file = path.join(scratch, "from-s3.mp4");
    await writeFile(file, new Uint8Array(await res.arrayBuffer()));
    const whole = path.join(scratch, "whole.mp4");
    await writeFile(whole, media.whole);
    const stored = await probeMedia(file);
    expect(stored.durationSeconds).toBeCloseTo((await probeMedia(whole)).durationSeconds, 1);
    expect(stored.streams.sort()).toEqual(["audio", "video"]);
  });
});
