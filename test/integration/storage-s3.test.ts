import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, beforeAll, describe } from "vitest";
import { resolveConfig } from "../../src/server/config.js";
import { startServer } from "../../src/server/main.js";
import { StartupError } from "../../src/server/startup-error.js";
import { RecordingTooLargeError } from "../../src/server/storage/recordings.js";
import { S3ArtifactStore } from "../../src/server/storage/s3-artifacts.js";
import { PART_BYTES, S3Bucket } from "../../src/server/storage/s3-bucket.js";
import { S3RecordingStore } from "../../src/server/storage/s3-recordings.js";
import type { S3Settings } from "../../src/server/storage/settings.js";
import { verifyStorage } from "../../src/server/storage/stores.js";
import { StorageUnavailableError } from "../../src/server/storage/unavailable.js";
import { type StandIn, startStandIn } from "../helpers/provider-stand-ins.js";
import { startS3Server, type S3Server } from "../helpers/s3-server.js";
import {
  deployedBot,
  makeTestMp4,
  registerUser,
  settledJob,
  startTestServer,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

const BUCKET = "meetbot-recordings";
/** What the Deepgram stand-in answers: its documented format, one utterance. */
const DEEPGRAM_ANSWER = {
  metadata: { request_id: "r1", duration: 2, channels: 1 },
  results: {
    channels: [
      {
        alternatives: [
          {
            transcript: "Hello there.",
            confidence: 0.98,
            words: [
              { word: "hello", punctuated_word: "Hello", start: 0.1, end: 0.48, confidence: 0.99 },
              { word: "there", punctuated_word: "there.", start: 0.48, end: 1.0, confidence: 0.97 },
            ],
          },
        ],
      },
    ],
  },
};
const MB = 1024 ** 2;

let s3: S3Server;
let deepgram: StandIn;
let scratch: string;
const opened: S3Bucket[] = [];
beforeAll(async () => {
  [s3, deepgram, scratch] = await Promise.all([
    startS3Server([BUCKET, "emptied-later"]),
    startStandIn(() => ({ json: DEEPGRAM_ANSWER })),
    mkdtemp(path.join(tmpdir(), "meetbot-s3-test-")),
  ]);
});
afterAll(async () => {
  for (const bucket of opened) bucket.close();
  await s3?.close();
  await deepgram?.close();
  await rm(scratch, { recursive: true, force: true });
});

function bucketWith(extra: Partial<S3Settings> = {}, name = BUCKET): S3Bucket {
  const bucket = new S3Bucket(s3.settings(name, extra));
  opened.push(bucket);
  return bucket;
}

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The requests s3rver got while `run` ran. */
async function requestsDuring(run: () => Promise<unknown>) {
  const from = s3.requests.length;
  await run();
  return s3.requests.slice(from);
}

/** A body that sends `bytes` in 1 MiB chunks, then fails as a dropped connection does. */
function interruptedAfter(bytes: number): Readable {
  async function* chunks() {
    for (let sent = 0; sent < bytes; sent += MB) yield randomBytes(MB);
    throw new Error("connection reset by the runner");
  }
  return Readable.from(chunks());
}

let nextBotId = 1000;
const freshBotId = () => nextBotId++;

describe("the S3 recording store against s3rver", () => {
  test("stores a small recording with one PutObject and reads back its size and any range", async () => {
    const store = new S3RecordingStore(bucketWith());
    const botId = freshBotId();
    const content = randomBytes(100_000);
    const seen = await requestsDuring(() => store.save(botId, Readable.from([content]), 10 * MB));
    expect(seen.map((r) => r.method)).toEqual(["PUT"]);
    expect(seen[0]?.url).toBe(`/${BUCKET}/recordings/${botId}.mp4?x-id=PutObject`);

    expect(await store.size(botId)).toBe(content.length);
    expect(await bytesOf(store.open(botId))).toEqual(content);
    // What parseRange hands the store for `bytes=0-99`, `bytes=5000-5999` and `bytes=-100`.
    expect(await bytesOf(store.open(botId, { start: 0, end: 99 }))).toEqual(content.subarray(0, 100));
    expect(await bytesOf(store.open(botId, { start: 5000, end: 5999 }))).toEqual(
      content.subarray(5000, 6000),
    );
    const tail = { start: content.length - 100, end: content.length - 1 };
    expect(await bytesOf(store.open(botId, tail))).toEqual(content.subarray(-100));
    expect(await store.size(freshBotId())).toBeNull();
  });

  test("uploads a large recording in parts and completes it as one object", async () => {
    const store = new S3RecordingStore(bucketWith());
    const botId = freshBotId();
    const content = randomBytes(2 * PART_BYTES + 3 * MB);
    // In 1 MiB chunks, as a request body arrives.
    const chunks = Array.from({ length: Math.ceil(content.length / MB) }, (_, i) =>
      content.subarray(i * MB, (i + 1) * MB),
    );
    const seen = await requestsDuring(async () => {
      expect(await store.save(botId, Readable.from(chunks), 64 * MB)).toEqual({ sizeBytes: content.length });
    });
    // Which S3 call each request was, by its query (s3rver, like S3, routes on it).
    const calls = seen.map(({ method, url }) => {
      const query = new URL(url, s3.endpoint).searchParams;
      if (query.has("partNumber")) return `${method} part ${query.get("partNumber")}`;
      if (query.has("uploadId")) return `${method} complete`;
      if (query.has("uploads")) return `${method} create`;
      return `${method} object`;
    });
    expect(calls).toEqual(["POST create", "PUT part 1", "PUT part 2", "PUT part 3", "POST complete"]);
    const partSizes = seen
      .filter((r) => r.url.includes("partNumber="))
      .map((r) => r.headers["content-length"]);
    expect(partSizes).toEqual([String(PART_BYTES), String(PART_BYTES), String(3 * MB)]);

    expect(await store.size(botId)).toBe(content.length);
    expect(sha256(await bytesOf(store.open(botId)))).toBe(sha256(content));
    const middle = { start: PART_BYTES - 10, end: PART_BYTES + 9 };
    expect(await bytesOf(store.open(botId, middle))).toEqual(content.subarray(middle.start, middle.end + 1));
  });

  test("refuses a recording past the limit, and an interrupted one, leaving the previous recording whole", async () => {
    const store = new S3RecordingStore(bucketWith());
    const botId = freshBotId();
    const previous = randomBytes(1000);
    await store.save(botId, Readable.from([previous]), 10 * MB);

    const tooLarge = store.save(botId, Readable.from([randomBytes(PART_BYTES), randomBytes(MB)]), PART_BYTES);
    await expect(tooLarge).rejects.toBeInstanceOf(RecordingTooLargeError);
    await expect(store.save(botId, interruptedAfter(PART_BYTES + MB), 64 * MB)).rejects.toThrow(
      "connection reset by the runner",
    );
    expect(await bytesOf(store.open(botId))).toEqual(previous);

    // A first upload that fails leaves no object at all.
    const fresh = freshBotId();
    await expect(store.save(fresh, interruptedAfter(3 * MB), 64 * MB)).rejects.toThrow();
    await expect(store.save(fresh, interruptedAfter(PART_BYTES + MB), 64 * MB)).rejects.toThrow();
    expect(await store.size(fresh)).toBeNull();
  });

  test("deletes a recording; deleting a missing one is no error", async () => {
    const store = new S3RecordingStore(bucketWith());
    const botId = freshBotId();
    await store.save(botId, Readable.from([randomBytes(10)]), MB);
    await store.remove(botId);
    expect(await store.size(botId)).toBeNull();
    await expect(store.remove(botId)).resolves.toBeUndefined();
  });

  test("hands ffmpeg a local copy, removed afterwards", async () => {
    const store = new S3RecordingStore(bucketWith());
    const botId = freshBotId();
    const content = randomBytes(50_000);
    await store.save(botId, Readable.from([content]), MB);
    const used = await store.withLocalFile(botId, async (file) => {
      expect(await readFile(file)).toEqual(content);
      return file;
    });
    await expect(readFile(used)).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("sends no checksums by default (when_required), and CRC32 ones when_supported", async () => {
    const content = randomBytes(1000);
    const checksumHeaders = (requests: { headers: Record<string, unknown> }[]) =>
      requests.flatMap((r) => Object.keys(r.headers).filter((name) => name.startsWith("x-amz-checksum-")));

    const quiet = new S3RecordingStore(bucketWith());
    const [quietId, largeId] = [freshBotId(), freshBotId()];
    const sentQuietly = await requestsDuring(async () => {
      await quiet.save(quietId, Readable.from([content]), MB);
      await bytesOf(quiet.open(quietId));
      // Every other call the store makes: multipart, head, list, delete.
      await quiet.save(largeId, Readable.from([randomBytes(PART_BYTES + 1)]), 2 * PART_BYTES);
      await quiet.size(quietId);
      await new S3ArtifactStore(quiet.bucket).removeAll(quietId);
      await quiet.remove(quietId);
    });
    expect(new Set(sentQuietly.map((r) => r.method))).toEqual(
      new Set(["PUT", "GET", "POST", "HEAD", "DELETE"]),
    );
    expect(checksumHeaders(sentQuietly)).toEqual([]);
    expect(sentQuietly.some((r) => "x-amz-sdk-checksum-algorithm" in r.headers)).toBe(false);

    const checked = new S3RecordingStore(bucketWith({ checksums: "when_supported" }));
    const checkedId = freshBotId();
    const sentChecked = await requestsDuring(async () => {
      await checked.save(checkedId, Readable.from([content]), MB);
      await bytesOf(checked.open(checkedId));
    });
    expect(checksumHeaders(sentChecked)).toEqual(["x-amz-checksum-crc32", "x-amz-checksum-mode"]);
    // The store kept the same bytes either way.
    expect(await bytesOf(checked.open(checkedId))).toEqual(content);
  });
});

describe("the S3 artifact store against s3rver", () => {
  test("saves, opens and removes all of a bot's artifacts", async () => {
    const store = new S3ArtifactStore(bucketWith());
    const botId = freshBotId();
    await store.save(botId, "failure.png", Readable.from([Buffer.from("png")]));
    await store.save(botId, "failure.html", Readable.from([Buffer.from("<html>")]));
    const other = freshBotId();
    await store.save(other, "failure.png", Readable.from([Buffer.from("other")]));

    const opened = await store.open(botId, "failure.html");
    expect(opened?.size).toBe(6);
    expect(await text(opened!.stream)).toBe("<html>");
    expect(await store.open(botId, "trace.zip")).toBeNull();

    await store.removeAll(botId);
    expect(await store.open(botId, "failure.png")).toBeNull();
    expect(await store.open(botId, "failure.html")).toBeNull();
    expect(await store.open(other, "failure.png")).not.toBeNull();
  });
});

describe("S3 storage settings", () => {
  const env = (extra: Record<string, string>) => resolveConfig({ dataDir: scratch, env: extra }).storage;

  test("stays local by default and reads every MEETBOT_S3_ variable", () => {
    expect(env({})).toEqual({ kind: "local" });
    expect(
      env({
        MEETBOT_STORAGE: "s3",
        MEETBOT_S3_BUCKET: "recordings",
        MEETBOT_S3_ENDPOINT: "http://minio:9000/",
        MEETBOT_S3_REGION: "eu-west-1",
        MEETBOT_S3_ACCESS_KEY_ID: "key",
        MEETBOT_S3_SECRET_ACCESS_KEY: "secret",
        MEETBOT_S3_FORCE_PATH_STYLE: "1",
        MEETBOT_S3_CHECKSUMS: "when_supported",
      }),
    ).toEqual({
      kind: "s3",
      s3: {
        bucket: "recordings",
        endpoint: "http://minio:9000",
        region: "eu-west-1",
        credentials: { accessKeyId: "key", secretAccessKey: "secret" },
        forcePathStyle: true,
        checksums: "when_supported",
      },
    });
    expect(env({ MEETBOT_STORAGE: "s3", MEETBOT_S3_BUCKET: "b" })).toEqual({
      kind: "s3",
      s3: {
        bucket: "b",
        endpoint: undefined,
        region: "us-east-1",
        credentials: undefined,
        forcePathStyle: false,
        checksums: "when_required",
      },
    });
  });

  test("stops startup with a line naming the variable", () => {
    const refused = (extra: Record<string, string>) => {
      try {
        env(extra);
      } catch (err) {
        expect(err).toBeInstanceOf(StartupError);
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    expect(refused({ MEETBOT_STORAGE: "s3" })).toBe("MEETBOT_S3_BUCKET: required when MEETBOT_STORAGE=s3");
    expect(refused({ MEETBOT_S3_BUCKET: "b" })).toMatch(
      /^MEETBOT_S3_BUCKET is set but MEETBOT_STORAGE is local/,
    );
    expect(refused({ MEETBOT_STORAGE: "S3" })).toBe('MEETBOT_STORAGE: must be one of local, s3 (got "S3")');
    expect(refused({ MEETBOT_STORAGE: "s3", MEETBOT_S3_BUCKET: "b", MEETBOT_S3_CHECKSUMS: "never" })).toBe(
      'MEETBOT_S3_CHECKSUMS: must be one of when_required, when_supported (got "never")',
    );
    expect(
      refused({ MEETBOT_STORAGE: "s3", MEETBOT_S3_BUCKET: "b", MEETBOT_S3_ENDPOINT: "minio:9000" }),
    ).toBe('MEETBOT_S3_ENDPOINT: must be an http(s) URL (got "minio:9000")');
    expect(refused({ MEETBOT_STORAGE: "s3", MEETBOT_S3_BUCKET: "b", MEETBOT_S3_ACCESS_KEY_ID: "k" })).toMatch(
      /^MEETBOT_S3_ACCESS_KEY_ID and MEETBOT_S3_SECRET_ACCESS_KEY: set both, or neither/,
    );
  });

  test("refuses at startup a bucket that does not exist, and a store that does not answer", async () => {
    const missing = verifyStorage({ kind: "s3", s3: s3.settings("no-such-bucket") });
    await expect(missing).rejects.toBeInstanceOf(StartupError);
    await expect(missing).rejects.toThrow(
      `MEETBOT_S3_BUCKET: bucket "no-such-bucket" does not exist at ${s3.endpoint}`,
    );
    // A port nothing listens on (the discard port).
    const nowhere = verifyStorage({
      kind: "s3",
      s3: s3.settings(BUCKET, { endpoint: "http://127.0.0.1:9" }),
    });
    await expect(nowhere).rejects.toThrow(
      /^MEETBOT_S3_ENDPOINT: could not reach bucket "meetbot-recordings" at http:\/\/127\.0\.0\.1:9: /,
    );
    await expect(verifyStorage({ kind: "s3", s3: s3.settings(BUCKET) })).resolves.toBeUndefined();

    // Before anything else: no data dir made, no database opened.
    const dataDir = path.join(scratch, "never-made");
    await expect(startServer({ port: 0, dataDir, env: s3.env("no-such-bucket") })).rejects.toThrow(
      `MEETBOT_S3_BUCKET: bucket "no-such-bucket" does not exist at ${s3.endpoint}`,
    );
    await expect(readdir(dataDir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("reports a store that stops answering as unavailable, not as the caller's fault", async () => {
    const store = new S3RecordingStore(bucketWith({ endpoint: "http://127.0.0.1:9" }));
    await expect(store.size(1)).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(store.save(1, Readable.from([Buffer.from("x")]), MB)).rejects.toBeInstanceOf(
      StorageUnavailableError,
    );
  });
});

// The server of the tests below: on the bucket, transcribing with the Deepgram stand-in.
test.override("serverOptions", { scope: "file" }, () => ({
  env: s3.env(BUCKET),
  jobs: {
    pollIntervalMs: 50,
    engines: {
      defaultTranscription: "pocketsphinx",
      defaultSummary: "extractive",
      pocketsphinxModelDir: "/usr/share/pocketsphinx/model/en-us",
      deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" },
    },
  },
}));

describe("the control plane with MEETBOT_STORAGE=s3", () => {
  let server: TestServer;
  let user: TestUser;
  let mp4: Uint8Array;
  /** The test's own view of the bucket the server uses. */
  let objects: S3Bucket;
  test.beforeAll(async ({ server: fileServer }) => {
    server = fileServer;
    objects = bucketWith();
    mp4 = await makeTestMp4(scratch);
    user = await registerUser(server.api);
  });

  /** A bot whose runner reported a call and uploaded `mp4`, then DONE. */
  async function recordedBot() {
    const { botId, runner } = await deployedBot(server, user);
    for (const status of ["JOINING_CALL", "IN_CALL", "CALL_ENDED"] as const) await runner.status(status);
    const upload = await runner.upload(mp4, 2000);
    expect(upload.status).toBe(201);
    expect(upload.body.sizeBytes).toBe(mp4.length);
    expect((await runner.status("DONE")).body.status).toBe("DONE");
    return { botId, runner };
  }

  const authorized = () => ({ authorization: `Bearer ${user.token}` });

  test("keeps the upload in the bucket and serves it: stream with Range, download link, share link", async () => {
    const { botId } = await recordedBot();
    const key = `recordings/${botId}.mp4`;
    expect(await objects.size(key)).toBe(mp4.length);
    expect(await bytesOf(objects.read(key))).toEqual(Buffer.from(mp4));
    expect(await readdir(path.join(server.dataDir, "recordings"))).toEqual([]);

    const stream = `${server.url}/v1/recordings/${botId}/stream`;
    const first = await fetch(stream, { headers: { ...authorized(), range: "bytes=0-99" } });
    expect(first.status).toBe(206);
    expect(first.headers.get("content-range")).toBe(`bytes 0-99/${mp4.length}`);
    expect(new Uint8Array(await first.arrayBuffer())).toEqual(mp4.subarray(0, 100));
    const suffix = await fetch(stream, { headers: { ...authorized(), range: "bytes=-500" } });
    expect(suffix.status).toBe(206);
    expect(new Uint8Array(await suffix.arrayBuffer())).toEqual(mp4.subarray(-500));
    const past = await fetch(stream, { headers: { ...authorized(), range: `bytes=${mp4.length}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${mp4.length}`);

    const link = await server.api.get(`/v1/recordings/${botId}/download`, { token: user.token });
    expect(link.body.url).toMatch(new RegExp(`^${server.url}/v1/recordings/${botId}/file\\?`));
    const download = await fetch(link.body.url);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(mp4);
    // What a <video src> on that link asks for when it seeks.
    const seek = await fetch(link.body.url, { headers: { range: `bytes=${mp4.length - 100}-` } });
    expect(seek.status).toBe(206);
    expect(new Uint8Array(await seek.arrayBuffer())).toEqual(mp4.subarray(-100));

    const share = await server.api.post(`/v1/recordings/${botId}/share`, { token: user.token, body: {} });
    expect(share.status).toBe(201);
    const page = await fetch(share.body.url, { headers: { accept: "application/json" } });
    const { streamUrl } = (await page.json()) as { streamUrl: string };
    const shared = await fetch(streamUrl, { headers: { range: "bytes=1000-1999" } });
    expect(shared.status).toBe(206);
    expect(new Uint8Array(await shared.arrayBuffer())).toEqual(mp4.subarray(1000, 2000));
  });

  test("removes the object when the recording is deleted, and recording and artifacts when the bot is", async () => {
    const { botId } = await recordedBot();
    expect((await server.api.delete(`/v1/recordings/${botId}`, { token: user.token })).status).toBe(204);
    expect(await objects.size(`recordings/${botId}.mp4`)).toBeNull();

    const { botId: failedId, config, runner } = await deployedBot(server, user);
    const artifact = await server.api.put(`/v1/bot-callbacks/${failedId}/artifacts/failure.html`, {
      rawBody: new TextEncoder().encode("<html>denied</html>"),
      token: config.callback.token,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(artifact.status).toBe(201);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await runner.status("CALL_ENDED");
    expect((await runner.upload(mp4, 2000)).status).toBe(201);
    await runner.status("FATAL", {
      subCode: "INTERNAL_ERROR",
      message: "crashed",
      artifacts: ["failure.html"],
    });
    const served = await fetch(`${server.url}/v1/bots/${failedId}/artifacts/failure.html`, {
      headers: authorized(),
    });
    expect(await served.text()).toBe("<html>denied</html>");
    const artifactKey = `bots/${failedId}/artifacts/failure.html`;
    expect(await objects.size(artifactKey)).not.toBeNull();

    expect((await server.api.delete(`/v1/bots/${failedId}`, { token: user.token })).status).toBe(204);
    expect(await objects.size(`recordings/${failedId}.mp4`)).toBeNull();
    expect(await objects.size(artifactKey)).toBeNull();
  });

  test("transcribes a recording kept in the bucket (the engine reads a local copy)", async () => {
    const { botId, runner } = await deployedBot(server, user);
    for (const status of ["JOINING_CALL", "IN_CALL", "CALL_ENDED"] as const) await runner.status(status);
    expect((await runner.upload(mp4, 2000)).status).toBe(201);
    const started = await server.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram", language: "en" },
    });
    expect(started.status).toBe(202);
    // Polled, as a client does, until the job has settled.
    const status = await settledJob(server.api, user.token, `/v1/transcripts/${botId}/status`);
    expect(status).toMatchObject({ status: "completed", error: null });
    // ffmpeg made the audio it sent from the copy of the object.
    expect(deepgram.requests).toHaveLength(1);
    expect(deepgram.requests[0]?.body.length).toBeGreaterThan(1000);
    const transcript = await server.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(transcript.body.text).toBe("Hello there.");
  });

  test("answers an upload the store refuses with a 503 the runner retries, keeping nothing", async () => {
    const gone = await startTestServer({ env: s3.env("emptied-later") });
    try {
      const owner = await registerUser(gone.api);
      const { botId, runner } = await deployedBot(gone, owner);
      await runner.status("JOINING_CALL");
      await runner.status("IN_CALL");
      await runner.status("CALL_ENDED");
      // The bucket disappears while the server runs (s3rver deletes an empty bucket).
      const admin = new S3Bucket(s3.settings("emptied-later"));
      const { DeleteBucketCommand } = await import("@aws-sdk/client-s3");
      await admin.client.send(new DeleteBucketCommand({ Bucket: "emptied-later" }));
      admin.close();

      const upload = await runner.upload(mp4, 2000);
      expect(upload.status).toBe(503);
      expect(upload.body).toEqual({ detail: "Recording storage is unavailable; try again later" });
      const bot = await gone.api.get(`/v1/bots/${botId}`, { token: owner.token });
      expect(bot.body.recording).toBeNull();
    } finally {
      await gone.close();
    }
  });
});
