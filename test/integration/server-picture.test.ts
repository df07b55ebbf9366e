import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { crc32 } from "node:zlib";
import { afterAll, describe } from "vitest";
import { type BotConfig, COMMAND_DEADLINE_MS, ShowImagePayload } from "../../src/core/index.js";
import { MAX_OUTPUT_IMAGE_BYTES } from "../../src/server/schemas/picture.js";
import { expectUploadLimit } from "../helpers/uploads.js";
import {
  Api,
  deployedBot,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
  defined,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The bot's camera: POST /v1/bots/{id}/output-image makes the user's PNG or JPEG
 * into the server's PNG (at most 1280x720) and queues a show_image command; DELETE queues
 * hide_image; the bot option output.image (a data URL) is made into the same kind of picture at
 * create and handed to the runner in its BotConfig. The runner (played here by its own requests)
 * fetches the picture with its callback token; the picture is checked as it will get it.
 */

const run = promisify(execFile);

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
let scratch: string;
/** Pictures made with ffmpeg: a wide blue PNG (2000x1000), a small red JPEG (320x180), a green PNG. */
let bluePng: Uint8Array;
let redJpeg: Uint8Array;
let greenPng: Uint8Array;

test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  webhooks: { worker: false },
  watchdog: { intervalMs: 3_600_000 },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-picture-test-"));
  bluePng = await picture("blue", "2000x1000", "blue.png");
  redJpeg = await picture("red", "320x180", "red.jpg");
  greenPng = await picture("0x00ff00", "640x360", "green.png");
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function picture(colour: string, size: string, name: string): Promise<Uint8Array> {
  const file = path.join(scratch, name);
  await run("ffmpeg", [
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `color=c=${colour}:s=${size}`,
    "-frames:v",
    "1",
    file,
  ]);
  return new Uint8Array(await readFile(file));
}

/** A picture's average colour, as ffmpeg reads it (the PNG scaled to one pixel). */
async function averageColour(png: Buffer): Promise<[number, number, number]> {
  const file = path.join(scratch, `check-${Math.random().toString(36).slice(2)}.png`);
  await writeFile(file, png);
  const { stdout } = await run(
    "ffmpeg",
    [
      "-loglevel",
      "error",
      "-f",
      "png_pipe",
      "-i",
      file,
      "-vf",
      "scale=1:1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-",
    ],
    { encoding: "buffer" },
  );
  return [stdout[0] ?? -1, stdout[1] ?? -1, stdout[2] ?? -1];
}

/** A PNG whose header declares `width` x `height` (its CRC fixed) over a tiny picture: a decompression bomb. */
function declaring(png: Uint8Array, width: number, height: number): Uint8Array {
  const bytes = Buffer.from(png);
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  bytes.writeUInt32BE(crc32(bytes.subarray(12, 29)), 29);
  return new Uint8Array(bytes);
}

/** A bot whose (fake) runner has reported it into the call. */
async function botInCall(body: Record<string, unknown> = {}, on: TestServer = server, user = owner) {
  const bot = await deployedBot(on, user, body);
  for (const status of ["JOINING_CALL", "IN_CALL"] as const) {
    expect((await bot.runner.status(status)).status).toBe(200);
  }
  return bot;
}

const show = (botId: number, bytes: Uint8Array, contentType: string | undefined, user = owner) =>
  server.api.post(`/v1/bots/${botId}/output-image`, {
    token: user.token,
    rawBody: bytes,
    headers: contentType === undefined ? {} : { "content-type": contentType },
  });
const hide = (botId: number, user = owner) =>
  server.api.delete(`/v1/bots/${botId}/output-image`, { token: user.token });

async function pollNow(config: BotConfig) {
  const res = await new Api(server.url).get(`/v1/bot-callbacks/${config.botId}/commands?wait=0`, {
    token: config.callback.token,
  });
  expect(res.status).toBe(200);
  return res.body.commands as { commandId: number; kind: string; payload: Record<string, unknown> }[];
}

/** A picture as the runner fetches it, with its callback token (or another). */
async function fetchImage(config: BotConfig, imageId: string, token = config.callback.token) {
  const response = await fetch(
    new URL(`/v1/bot-callbacks/${config.botId}/output-images/${imageId}`, server.url),
    { headers: { authorization: `Bearer ${token}` } },
  );
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** The server's PNG: its signature, and the size its header declares. */
function pngSize(bytes: Buffer) {
  expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

const storedFiles = (botId: number) =>
  readdir(path.join(server.dataDir, "outputs", String(botId))).catch(() => [] as string[]);
const dataUrl = (type: string, bytes: Uint8Array) =>
  `data:${type};base64,${Buffer.from(bytes).toString("base64")}`;

describe("POST /v1/bots/{id}/output-image", () => {
  test("queues show_image with a PNG of at most 1280x720 that the runner fetches, of the picture's colour", async () => {
    const { botId, config } = await botInCall();
    const res = await show(botId, bluePng, "image/png");
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      botId,
      kind: "show_image",
      status: "queued",
      error: null,
      result: null,
    });
    expect(Date.parse(res.body.deadlineAt) - Date.parse(res.body.createdAt)).toBe(
      COMMAND_DEADLINE_MS.show_image,
    );
    const jpeg = await show(botId, redJpeg, "image/jpeg; charset=binary");
    expect(jpeg.status).toBe(202);

    const commands = await pollNow(config);
    expect(commands.map((c) => c.kind)).toEqual(["show_image", "show_image"]);
    // Scaled down to fit 1280x720, its proportions kept; a small picture keeps its size.
    const wide = ShowImagePayload.parse(commands[0]?.payload);
    expect(wide).toMatchObject({ width: 1280, height: 640 });
    expect(ShowImagePayload.parse(commands[1]?.payload)).toMatchObject({ width: 320, height: 180 });
    const image = await fetchImage(config, wide.imageId);
    expect(image.status).toBe(200);
    expect(image.type).toBe("image/png");
    expect(pngSize(image.bytes)).toEqual({ width: 1280, height: 640 });
    const [r, g, b] = await averageColour(image.bytes);
    expect(r).toBeLessThan(10);
    expect(g).toBeLessThan(10);
    expect(b).toBeGreaterThan(245);
    const red = await fetchImage(config, ShowImagePayload.parse(commands[1]?.payload).imageId);
    expect((await averageColour(red.bytes))[0]).toBeGreaterThan(240);
    expect((await storedFiles(botId)).sort()).toHaveLength(2);
  });

  test("refuses what it cannot show with 422 saying why, and keeps and queues nothing", async () => {
    const { botId, config } = await botInCall();
    const text = new TextEncoder().encode("this is not a picture at all. ".repeat(50));
    const truncated = bluePng.subarray(0, 200);
    const cases: [Uint8Array, string, RegExp][] = [
      [
        text,
        "image/png",
        /^Cannot show this picture: the file is not a PNG \(its first bytes are neither a PNG's nor a JPEG's\)$/,
      ],
      [
        redJpeg,
        "image/png",
        /^Cannot show this picture: the file is not a PNG \(its first bytes are a JPEG's\)$/,
      ],
      [
        bluePng,
        "image/jpeg",
        /^Cannot show this picture: the file is not a JPEG \(its first bytes are a PNG's\)$/,
      ],
      [truncated, "image/png", /^Cannot show this picture: the PNG does not decode: /],
      [
        declaring(greenPng, 9_000, 5_000),
        "image/png",
        /^Cannot show this picture: the PNG does not decode: .*exceeds specified max pixel count/,
      ],
      [new Uint8Array(0), "image/png", /^The upload is empty$/],
    ];
    for (const [bytes, type, why] of cases) {
      const res = await show(botId, bytes, type);
      expect(res.status, `${type} ${why}`).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ["body"], msg: expect.stringMatching(why), type: "value_error" },
      ]);
      expect(validationIssues(res.body)[0]?.msg).not.toContain(tmpdir());
    }
    expect(await pollNow(config)).toEqual([]);
    expect(await storedFiles(botId)).toEqual([]);
  });

  test("is 415 for any other content type, and 413 past 5 MiB: declared, or as it streams in", async () => {
    const { botId, config } = await botInCall();
    for (const type of ["image/gif", "image/webp", "application/json", "text/plain", undefined]) {
      const res = await show(botId, bluePng, type);
      expect(res.status, String(type)).toBe(415);
      expect(res.body).toEqual({ detail: "Content-Type must be one of image/png, image/jpeg" });
    }

    await expectUploadLimit({
      baseUrl: server.url,
      path: `/v1/bots/${botId}/output-image`,
      token: owner.token,
      contentType: "image/png",
      limit: MAX_OUTPUT_IMAGE_BYTES,
      head: "\x89PNG",
    });
    expect(await pollNow(config)).toEqual([]);
    expect(await storedFiles(botId)).toEqual([]);
  });
});

describe("DELETE /v1/bots/{id}/output-image", () => {
  test("queues hide_image behind the picture shown", async () => {
    const { botId, config } = await botInCall();
    await show(botId, greenPng, "image/png");
    const res = await hide(botId);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ botId, kind: "hide_image", status: "queued" });
    const commands = await pollNow(config);
    expect(commands.map((c) => c.kind)).toEqual(["show_image", "hide_image"]);
    expect(commands[1]).toEqual({ commandId: res.body.commandId, kind: "hide_image", payload: {} });
  });
});

describe("who may ask, and when", () => {
  test("is 409 unless the bot is in a call, 404 for another user's bot; a picture goes to its own bot's runner only", async () => {
    const { botId, runner, config } = await deployedBot(server, owner);
    const asks = (user: TestUser) => [
      () => show(botId, greenPng, "image/png", user),
      () => hide(botId, user),
    ];
    for (const ask of asks(owner)) {
      const res = await ask();
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: "Bot is not in a call (status is DEPLOYING)" });
    }
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    for (const ask of asks(stranger)) {
      const res = await ask();
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: "Bot not found" });
    }
    expect((await show(botId, greenPng, "image/png")).status).toBe(202);
    const [command] = await pollNow(config);
    const { imageId } = ShowImagePayload.parse(command?.payload);
    const other = await botInCall();
    expect((await fetchImage(config, imageId, other.config.callback.token)).status).toBe(401);
    const elsewhere = await fetchImage(other.config, imageId);
    expect(elsewhere.status).toBe(404);
    expect(JSON.parse(elsewhere.bytes.toString())).toEqual({ detail: "Image not found" });
    expect((await fetchImage(config, "../../x")).status).toBe(404);

    await runner.status("CALL_ENDED", { subCode: "EVERYONE_LEFT" });
    for (const ask of asks(owner)) expect((await ask()).status).toBe(409);
  });
});

describe("the bot option output.image", () => {
  test("is made into the server's PNG at create, named in the answer and in the runner's BotConfig", async () => {
    const { botId, config } = await deployedBot(server, owner, {
      output: { keepMicOn: true, image: dataUrl("image/png", bluePng) },
    });
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body.output).toEqual({
      keepMicOn: true,
      image: { imageId: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), width: 1280, height: 640 },
    });
    expect(config.output).toEqual(bot.body.output);
    const image = await fetchImage(config, defined(bot.body.output.image, "output.image").imageId);
    expect(image.status).toBe(200);
    expect(pngSize(image.bytes)).toEqual({ width: 1280, height: 640 });
  });

  test("takes a JPEG; a PATCH replaces it; a picture that is no data URL or does not decode is 422 and no bot", async () => {
    const created = await server.api.post("/v1/bots", {
      token: owner.token,
      body: {
        meetingInfo: { platform: "zoom", meetingId: "81234567890", meetingPassword: "x" },
        output: { image: dataUrl("image/jpeg", redJpeg) },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.output.image).toMatchObject({ width: 320, height: 180 });
    const botId = created.body.id;
    const patched = await server.api.patch(`/v1/bots/${botId}`, {
      token: owner.token,
      body: { output: { image: dataUrl("image/png", greenPng) } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.output).toEqual({ image: { imageId: expect.any(String), width: 640, height: 360 } });
    expect(patched.body.output.image?.imageId).not.toBe(created.body.output.image?.imageId);
    // The picture replaced is gone; then none at all.
    expect(await storedFiles(botId)).toEqual([`${patched.body.output.image?.imageId}.png`]);
    const cleared = await server.api.patch(`/v1/bots/${botId}`, { token: owner.token, body: { output: {} } });
    expect(cleared.body.output).toEqual({});
    expect(await storedFiles(botId)).toEqual([]);

    const before = (await server.api.get("/v1/bots?limit=100", { token: owner.token })).body.bots.length;
    const bad: [string, RegExp][] = [
      ["https://example.com/logo.png", /^must be a data URL of a PNG or a JPEG/],
      ["data:image/gif;base64,R0lGODlh", /^must be a data URL of a PNG or a JPEG/],
      ["data:image/png;base64,not base64!", /^must be a data URL of a PNG or a JPEG/],
      [dataUrl("image/png", redJpeg), /^Cannot show this picture: the file is not a PNG/],
      [dataUrl("image/png", bluePng.subarray(0, 200)), /^Cannot show this picture: the PNG does not decode/],
    ];
    for (const [image, why] of bad) {
      const res = await server.api.post("/v1/bots", {
        token: owner.token,
        body: { meetingInfo: { platform: "zoom", meetingId: "81234567890" }, output: { image } },
      });
      expect(res.status, image.slice(0, 40)).toBe(422);
      expect(res.body.detail).toEqual([
        expect.objectContaining({ loc: ["body", "output", "image"], msg: expect.stringMatching(why) }),
      ]);
    }
    expect((await server.api.get("/v1/bots?limit=100", { token: owner.token })).body.bots).toHaveLength(
      before,
    );
  });

  test("takes a data URL of nearly 5 MiB (past the 1 MiB of other JSON bodies, which the rest still keeps), and its pictures go with a deleted bot", async () => {
    // Noise does not compress: a PNG of about 4.5 MB.
    const file = path.join(scratch, "noise.png");
    await run("ffmpeg", [
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "nullsrc=s=1400x1100,geq=random(1)*255:128:128",
      "-frames:v",
      "1",
      file,
    ]);
    const noise = new Uint8Array(await readFile(file));
    expect(noise.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(noise.length).toBeLessThan(MAX_OUTPUT_IMAGE_BYTES);
    const created = await server.api.post("/v1/bots", {
      token: owner.token,
      body: {
        meetingInfo: { platform: "zoom", meetingId: "81234567890" },
        output: { image: dataUrl("image/png", noise) },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.output.image).toMatchObject({ width: 916, height: 720 });
    const botId = created.body.id;
    expect(await storedFiles(botId)).toEqual([`${created.body.output.image?.imageId}.png`]);
    // Only the picture may take a body past 1 MiB.
    const padded = await server.api.post("/v1/bots", {
      token: owner.token,
      body: {
        meetingInfo: { platform: "zoom", meetingId: "81234567890" },
        meetingTitle: "x".repeat(1024 * 1024),
        output: { image: dataUrl("image/png", greenPng) },
      },
    });
    expect(padded.status).toBe(413);
    expect(padded.body.detail).toMatch(/^Request body is larger than 1048576 bytes \(besides output.image/);
    expect((await server.api.delete(`/v1/bots/${botId}`, { token: owner.token })).status).toBe(204);
    expect(await storedFiles(botId)).toEqual([]);
  });
});
