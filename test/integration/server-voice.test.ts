// Own server (startBuiltApp), not the fixture: the tests sweep its watchdog by hand (core).
import { execFile } from "node:child_process";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BotConfig,
  COMMAND_DEADLINE_MS,
  outputDeadlineMs,
  PlayAudioPayload,
} from "../../src/core/index.js";
import { embeddedTranscriber, wordAccuracy } from "../../src/intelligence/index.js";
import { MAX_OUTPUT_AUDIO_BYTES } from "../../src/server/services/voice.js";
import { type BuiltApp, startBuiltApp } from "../helpers/built-app.js";
import { expectUploadLimit } from "../helpers/uploads.js";
import {
  Api,
  deployedBot,
  RecordingApi,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";

/**
 * A bot that speaks: POST /v1/bots/{id}/speak and /output-audio render a clip and queue
 * a play_audio command; the runner (played here by its own requests, with its BotConfig) polls
 * for it and fetches the clip with its callback token. The clips are checked as the runner will
 * get them: the format, the length the command says, and, for speech, what pocketsphinx hears.
 */

const run = promisify(execFile);
/** Said with flite's default voice, pocketsphinx hears every word of it (src/voice/flite.ts). */
const SENTENCE =
  "The quarterly budget review is scheduled for Friday afternoon. Please send your slides before noon.";

let server: BuiltApp;
let owner: TestUser;
let stranger: TestUser;
let scratch: string;
/** 2-second files made with ffmpeg, by their content type. */
const files: Record<string, Uint8Array> = {};

beforeAll(async () => {
  // The watchdog never sweeps by itself here: the tests sweep when they mean to.
  server = await startBuiltApp({
    env: { MEETBOT_WEBHOOK_WORKER: "0", MEETBOT_WATCHDOG_INTERVAL_MS: "3600000" },
  });
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api, "Someone Else");
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-voice-test-"));
  for (const [type, encoding] of [
    ["audio/wav", ["-c:a", "pcm_s16le", "-f", "wav"]],
    ["audio/mpeg", ["-c:a", "libmp3lame", "-f", "mp3"]],
    ["audio/ogg", ["-c:a", "libvorbis", "-f", "ogg"]],
  ] as const) {
    const file = path.join(scratch, `tone.${encoding[3]}`);
    await ffmpeg(
      ["-f", "lavfi", "-i", "sine=frequency=440:duration=2:sample_rate=44100", "-ac", "2"],
      [...encoding, file],
    );
    files[type] = new Uint8Array(await readFile(file));
  }
});
afterAll(async () => {
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function ffmpeg(input: string[], output: string[]) {
  return run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...input, ...output]);
}

/** A bot whose (fake) runner has reported it into the call. */
async function botInCall(on: TestServer = server, user = owner) {
  const bot = await deployedBot(on, user);
  for (const status of ["JOINING_CALL", "IN_CALL"] as const) {
    expect((await bot.runner.status(status)).status).toBe(200);
  }
  return bot;
}

const speak = (botId: number, body: unknown, user = owner, on: TestServer = server) =>
  on.api.post(`/v1/bots/${botId}/speak`, { token: user.token, body });
const upload = (botId: number, bytes: Uint8Array, contentType: string | undefined, user = owner) =>
  server.api.post(`/v1/bots/${botId}/output-audio`, {
    token: user.token,
    rawBody: bytes,
    headers: contentType === undefined ? {} : { "content-type": contentType },
  });
const stop = (botId: number, user = owner) =>
  server.api.delete(`/v1/bots/${botId}/output-audio`, { token: user.token });

/** The bot's open commands, as its runner's poll gets them. */
async function pollNow(config: BotConfig, on: TestServer = server) {
  const res = await new Api(on.url).get(`/v1/bot-callbacks/${config.botId}/commands?wait=0`, {
    token: config.callback.token,
  });
  expect(res.status).toBe(200);
  return res.body.commands as { commandId: number; kind: string; payload: Record<string, unknown> }[];
}

/** A clip as the runner fetches it: with its callback token (or another). */
async function fetchClip(config: BotConfig, clipId: string, token = config.callback.token, on = server) {
  const response = await fetch(new URL(`/v1/bot-callbacks/${config.botId}/output-clips/${clipId}`, on.url), {
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** The format chunk and PCM length of a WAV file, read from its own chunks. */
function wavInfo(bytes: Buffer) {
  expect(bytes.toString("latin1", 0, 4)).toBe("RIFF");
  expect(bytes.toString("latin1", 8, 12)).toBe("WAVE");
  let format: { codec: number; channels: number; sampleRate: number; bits: number } | undefined;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = bytes.toString("latin1", at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === "fmt ") {
      format = {
        codec: bytes.readUInt16LE(at + 8),
        channels: bytes.readUInt16LE(at + 10),
        sampleRate: bytes.readUInt32LE(at + 12),
        bits: bytes.readUInt16LE(at + 22),
      };
    }
    if (id === "data" && format) {
      const bytesPerMs = (format.sampleRate * format.channels * format.bits) / 8 / 1000;
      return { ...format, durationMs: Math.round(size / bytesPerMs), dataBytes: size };
    }
    at += 8 + size + (size % 2);
  }
  throw new Error("no fmt and data chunks");
}

/** The one clip format (core PlayAudioPayload): PCM, 48 kHz, mono, 16-bit, `durationMs` long. */
function expectClip(bytes: Buffer, durationMs: number) {
  expect(wavInfo(bytes)).toMatchObject({ codec: 1, channels: 1, sampleRate: 48_000, bits: 16, durationMs });
}

/** A well-formed WAV of no samples at all: a header and an empty data chunk. */
function silence(): Uint8Array {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(36, 4);
  header.write("WAVEfmt ", 8, "latin1");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(48_000, 24);
  header.writeUInt32LE(96_000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "latin1");
  header.writeUInt32LE(0, 40);
  return new Uint8Array(header);
}

/** The clip files the server keeps for a bot. */
async function storedClips(botId: number): Promise<string[]> {
  return readdir(path.join(server.dataDir, "outputs", String(botId))).catch(() => []);
}

const ms = (iso: string) => Date.parse(iso);

describe("POST /v1/bots/{id}/speak", () => {
  it("queues a play_audio command whose clip the runner fetches: 48 kHz mono s16, durationMs long, saying the text", async () => {
    const { botId, config } = await botInCall();
    const res = await speak(botId, { text: `  ${SENTENCE}\n` });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      botId,
      kind: "play_audio",
      status: "queued",
      error: null,
      result: null,
    });

    const [command, ...others] = await pollNow(config);
    expect(others).toEqual([]);
    expect(command?.commandId).toBe(res.body.commandId);
    expect(command?.kind).toBe("play_audio");
    // The contract's payload, the text trimmed.
    const payload = PlayAudioPayload.parse(command?.payload);
    expect(payload).toMatchObject({ source: "speak", text: SENTENCE });
    expect(Object.keys(command?.payload ?? {}).sort()).toEqual(["clipId", "durationMs", "source", "text"]);
    expect(payload.clipId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // The first sound: its own length and the margin.
    expect(ms(res.body.deadlineAt) - ms(res.body.createdAt)).toBe(outputDeadlineMs(payload.durationMs, 0));

    const clip = await fetchClip(config, payload.clipId);
    expect(clip.status).toBe(200);
    expect(clip.type).toBe("audio/wav");
    expectClip(clip.bytes, payload.durationMs);
    expect(payload.durationMs).toBeGreaterThan(3000);

    const file = path.join(scratch, `${payload.clipId}.wav`);
    await writeFile(file, clip.bytes);
    const heard = await embeddedTranscriber({ tmpDir: scratch }).transcribe({ mediaPath: file });
    expect(wordAccuracy(SENTENCE, heard.text), heard.text).toBeGreaterThanOrEqual(0.8);
  });

  it("takes another flite voice; an unknown one is 422 at body.voice naming the voices", async () => {
    const { botId, config } = await botInCall();
    const unknown = await speak(botId, { text: "Hello", voice: "hal9000" });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      {
        loc: ["body", "voice"],
        msg: 'Unknown voice "hal9000": the flite engine has awb, kal, kal16, rms, slt',
        type: "value_error",
      },
    ]);
    const byDefault = await speak(botId, { text: "Hello everyone" });
    const slt = await speak(botId, { text: "Hello everyone", voice: "slt" });
    expect([byDefault.status, slt.status]).toEqual([202, 202]);
    const [first, second] = (await pollNow(config)).map((c) => PlayAudioPayload.parse(c.payload));
    // Another voice says it differently: another length.
    expect(first?.durationMs).not.toBe(second?.durationMs);
    expectClip((await fetchClip(config, second?.clipId ?? "")).bytes, second?.durationMs ?? -1);
  });

  it("refuses text that is empty once trimmed, or over 4096 characters (422 at body.text)", async () => {
    const { botId, config } = await botInCall();
    for (const text of ["", "   \n", "x".repeat(4097)]) {
      const res = await speak(botId, { text });
      expect(res.status, JSON.stringify(text.slice(0, 9))).toBe(422);
      expect(validationIssues(res.body)[0]?.loc).toEqual(["body", "text"]);
    }
    for (const body of [{}, { text: "Hi", speed: 2 }, { text: 42 }]) {
      expect((await speak(botId, body)).status, JSON.stringify(body)).toBe(422);
    }
    expect(await pollNow(config)).toEqual([]);
    expect(await storedClips(botId)).toEqual([]);
  });

  it("queues a second sound with a deadline that counts the first one's length", async () => {
    const { botId, config, runner } = await botInCall();
    const first = await speak(botId, { text: "One moment please." });
    const second = await speak(botId, { text: "Here are the numbers for this quarter." });
    const [one, two] = (await pollNow(config)).map((c) => PlayAudioPayload.parse(c.payload));
    expect(ms(first.body.deadlineAt) - ms(first.body.createdAt)).toBe(
      outputDeadlineMs(one?.durationMs ?? 0, 0),
    );
    expect(ms(second.body.deadlineAt) - ms(second.body.createdAt)).toBe(
      outputDeadlineMs(two?.durationMs ?? 0, one?.durationMs ?? 0),
    );
    // Once the first has been played, a third waits only behind the second.
    const done = await runner.send({
      type: "command.result",
      data: { commandId: first.body.commandId, status: "done", result: { durationMs: 1, playedMs: 1 } },
    });
    expect(done.status).toBe(200);
    const third = await speak(botId, { text: "Thanks." });
    const durations = (await pollNow(config)).map((c) => PlayAudioPayload.parse(c.payload).durationMs);
    expect(durations).toHaveLength(2);
    expect(ms(third.body.deadlineAt) - ms(third.body.createdAt)).toBe(
      outputDeadlineMs(durations[1] ?? 0, durations[0] ?? 0),
    );
  });
});

describe("POST /v1/bots/{id}/output-audio", () => {
  it.each([
    ["audio/wav", "audio/wav"],
    ["audio/x-wav", "audio/wav"],
    ["audio/mpeg", "audio/mpeg"],
    ["audio/mp3", "audio/mpeg"],
    ["audio/ogg", "audio/ogg"],
    ["application/ogg; codecs=vorbis", "audio/ogg"],
  ])("plays a file sent as %s: queued, its clip 2 s long", async (contentType, made) => {
    const { botId, config } = await botInCall();
    const res = await upload(botId, files[made] as Uint8Array, contentType);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ botId, kind: "play_audio", status: "queued" });
    const [command] = await pollNow(config);
    const payload = PlayAudioPayload.parse(command?.payload);
    expect(command?.payload).toEqual({
      clipId: payload.clipId,
      durationMs: payload.durationMs,
      source: "upload",
    });
    // A WAV is exact; the encoders' padding is decoded away (within a frame, whatever the ffmpeg).
    expect(Math.abs(payload.durationMs - 2000)).toBeLessThanOrEqual(made === "audio/wav" ? 0 : 30);
    const clip = await fetchClip(config, payload.clipId);
    expect(clip.status).toBe(200);
    expectClip(clip.bytes, payload.durationMs);
  });

  it("refuses what it cannot play with 422 saying why, and keeps and queues nothing", async () => {
    const { botId, config } = await botInCall();
    const text = new TextEncoder().encode("this is not audio at all. ".repeat(400));
    const video = path.join(scratch, "silent-film.ogg");
    await ffmpeg(
      ["-f", "lavfi", "-i", "testsrc2=size=64x64:rate=5"],
      ["-t", "1", "-c:v", "libtheora", video],
    );
    const cases: [Uint8Array, string, RegExp][] = [
      [
        text,
        "audio/wav",
        /^Cannot play this file: the audio cannot be read as WAV: \[wav\] invalid start code/,
      ],
      [text, "audio/mpeg", /^Cannot play this file: the audio cannot be read as MP3: /],
      [
        files["audio/wav"] as Uint8Array,
        "audio/ogg",
        /^Cannot play this file: the audio cannot be read as OGG: /,
      ],
      [
        new Uint8Array(await readFile(video)),
        "audio/ogg",
        /^Cannot play this file: the file has no audio stream$/,
      ],
      [new Uint8Array(0), "audio/wav", /^The upload is empty$/],
      [silence(), "audio/wav", /holds no sound/],
    ];
    for (const [bytes, type, why] of cases) {
      const res = await upload(botId, bytes, type);
      expect(res.status, `${type} ${why}`).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ["body"], msg: expect.stringMatching(why), type: "value_error" },
      ]);
      // No server path in what it says.
      expect(validationIssues(res.body)[0]?.msg).not.toContain(tmpdir());
    }
    expect(await pollNow(config)).toEqual([]);
    expect(await storedClips(botId)).toEqual([]);
  });

  it("is 415 for any other content type, naming those it takes", async () => {
    const { botId, config } = await botInCall();
    for (const type of ["video/mp4", "application/json", "audio/flac", "text/plain", undefined]) {
      const res = await upload(botId, files["audio/wav"] as Uint8Array, type);
      expect(res.status, String(type)).toBe(415);
      expect(res.body).toEqual({
        detail:
          "Content-Type must be one of audio/wav, audio/x-wav, audio/wave, audio/mpeg, audio/mp3, audio/ogg, application/ogg",
      });
    }
    expect(await pollNow(config)).toEqual([]);
  });

  it("is 413 for a body over 20 MiB: declared, before it is read; streamed, once past the limit", async () => {
    const { botId, config } = await botInCall();
    await expectUploadLimit({
      baseUrl: server.url,
      path: `/v1/bots/${botId}/output-audio`,
      token: owner.token,
      contentType: "audio/wav",
      limit: MAX_OUTPUT_AUDIO_BYTES,
      head: "RIFF",
    });
    expect(await pollNow(config)).toEqual([]);
    expect(await storedClips(botId)).toEqual([]);
  });
});

describe("DELETE /v1/bots/{id}/output-audio", () => {
  it("queues a stop_audio command, with its own deadline", async () => {
    const { botId, config } = await botInCall();
    await speak(botId, { text: "This will be cut short." });
    const res = await stop(botId);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ botId, kind: "stop_audio", status: "queued" });
    expect(ms(res.body.deadlineAt) - ms(res.body.createdAt)).toBe(COMMAND_DEADLINE_MS.stop_audio);
    const commands = await pollNow(config);
    expect(commands.map((c) => c.kind)).toEqual(["play_audio", "stop_audio"]);
    expect(commands[1]).toEqual({ commandId: res.body.commandId, kind: "stop_audio", payload: {} });
  });
});

describe("who may ask, and when", () => {
  it("is 409 unless the bot is in a call, and 404 for another user's bot", async () => {
    const { botId, runner, config } = await deployedBot(server, owner);
    const wav = files["audio/wav"] as Uint8Array;
    const asks = (user: TestUser) => [
      () => speak(botId, { text: "Hello" }, user),
      () => upload(botId, wav, "audio/wav", user),
      () => stop(botId, user),
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
    await runner.status("CALL_ENDED", { subCode: "EVERYONE_LEFT" });
    for (const ask of asks(owner)) expect((await ask()).status).toBe(409);
    expect(await pollNow(config)).toEqual([]);
    expect(await storedClips(botId)).toEqual([]);
  });
});

describe("GET /v1/bot-callbacks/{id}/output-clips/{clipId}", () => {
  it("gives a clip only to its own bot's runner", async () => {
    const { botId, config } = await botInCall();
    const other = await botInCall();
    await speak(botId, { text: "For my own runner only." });
    const [command] = await pollNow(config);
    const { clipId } = PlayAudioPayload.parse(command?.payload);
    // Another bot's token on this bot's path: the uniform 401 of the callbacks.
    const stolen = await fetchClip(config, clipId, other.config.callback.token);
    expect(stolen.status).toBe(401);
    expect(JSON.parse(stolen.bytes.toString())).toEqual({ detail: "Invalid callback token" });
    // The other bot's own path: no such clip of its own.
    const elsewhere = await fetchClip(other.config, clipId);
    expect(elsewhere.status).toBe(404);
    expect(JSON.parse(elsewhere.bytes.toString())).toEqual({ detail: "Clip not found" });
    expect((await fetchClip(config, "AAAAAAAAAAAAAAAAAAAAAA")).status).toBe(404);
    expect((await fetchClip(config, "../../x")).status).toBe(404);
    // An id no clip can have is no clip either.
    expect((await fetchClip(config, "short")).status).toBe(404);
    expect((await fetchClip(config, clipId, "")).status).toBe(401);
    expect((await fetchClip(config, clipId)).status).toBe(200);
  });
});

describe("the clips kept", () => {
  it("go when the bot has ended (the watchdog's sweep) or is deleted, not while it runs", async () => {
    const ending = await botInCall();
    const running = await botInCall();
    const deleted = await botInCall();
    for (const bot of [ending, running, deleted]) {
      expect((await speak(bot.botId, { text: "Goodbye." })).status).toBe(202);
      expect(await storedClips(bot.botId)).toHaveLength(1);
    }
    await ending.runner.status("CALL_ENDED", { subCode: "EVERYONE_LEFT" });
    await ending.runner.status("DONE");
    const { services } = server.core;
    // A bot killed is FATAL: deletable, with its clips still there until a sweep.
    expect((await server.api.post(`/v1/bots/${deleted.botId}/kill`, { token: owner.token })).status).toBe(
      200,
    );
    expect(await storedClips(deleted.botId)).toHaveLength(1);
    expect((await server.api.delete(`/v1/bots/${deleted.botId}`, { token: owner.token })).status).toBe(204);
    expect(existsSync(path.join(server.dataDir, "outputs", String(deleted.botId)))).toBe(false);

    expect(await storedClips(ending.botId)).toHaveLength(1);
    await services.watchdog.sweep();
    expect(existsSync(path.join(server.dataDir, "outputs", String(ending.botId)))).toBe(false);
    expect(await storedClips(running.botId)).toHaveLength(1);
  });
});

// ---- The openai engine, against a stand-in -----------------------------------------------------

interface SpeechRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A stand-in for OpenAI's speech endpoint (the real one cannot be reached from here): a local HTTP
 * server that answers POST /v1/audio/speech as OpenAI documents it, with a WAV (24 kHz mono, as
 * OpenAI's are) made with ffmpeg, or with what the test tells it to answer.
 */
async function startSpeechStandIn(wav: Buffer) {
  const requests: SpeechRequest[] = [];
  let next: { status: number; body: Buffer | string } | undefined;
  const standIn = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(parts).toString(),
      });
      const answer = next ?? { status: 200, body: wav };
      next = undefined;
      const type = answer.status === 200 ? "audio/wav" : "application/json";
      res.writeHead(answer.status, { "content-type": type }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(standIn.address() as AddressInfo).port}/v1`,
    requests,
    answerNext(status: number, body: Buffer | string) {
      next = { status, body };
    },
    close: () => new Promise<void>((resolve) => standIn.close(() => resolve())),
  };
}

describe("the openai engine (MEETBOT_TTS_ENGINE=openai)", () => {
  const key = "sk-test-7f3a9c1e5b2d4f6a8c0e";
  let standIn: Awaited<ReturnType<typeof startSpeechStandIn>>;
  let openaiServer: BuiltApp;
  let user: TestUser;
  let api: RecordingApi;

  beforeAll(async () => {
    const wav = path.join(scratch, "speech.wav");
    await ffmpeg(
      ["-f", "lavfi", "-i", "sine=frequency=300:duration=1.5:sample_rate=24000"],
      [...["-ac", "1", "-c:a", "pcm_s16le", wav]],
    );
    standIn = await startSpeechStandIn(await readFile(wav));
    openaiServer = await startBuiltApp({
      env: {
        MEETBOT_WEBHOOK_WORKER: "0",
        MEETBOT_TTS_ENGINE: "openai",
        MEETBOT_TTS_BASE_URL: standIn.baseUrl,
        MEETBOT_TTS_API_KEY: key,
      },
    });
    api = new RecordingApi(openaiServer.url);
    user = await registerUser(openaiServer.api);
  });
  afterAll(async () => {
    await openaiServer?.close();
    await standIn?.close();
  });

  it("asks the engine for a WAV with the model, voice and key, and queues it decoded into a clip", async () => {
    const { botId, config } = await botInCall(openaiServer, user);
    const res = await api.post(`/v1/bots/${botId}/speak`, {
      token: user.token,
      body: { text: "Welcome to the call." },
    });
    expect(res.status).toBe(202);
    const [request] = standIn.requests.splice(0);
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/v1/audio/speech");
    expect(request?.headers.authorization).toBe(`Bearer ${key}`);
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request?.body ?? "")).toEqual({
      model: "gpt-4o-mini-tts",
      input: "Welcome to the call.",
      voice: "alloy",
      response_format: "wav",
    });
    const [command] = await pollNow(config, openaiServer);
    const payload = PlayAudioPayload.parse(command?.payload);
    expect(payload).toMatchObject({ durationMs: 1500, source: "speak", text: "Welcome to the call." });
    const clip = await fetchClip(config, payload.clipId, config.callback.token, openaiServer);
    expectClip(clip.bytes, 1500);

    // Any voice name the engine's server may have goes to it.
    await api.post(`/v1/bots/${botId}/speak`, { token: user.token, body: { text: "Hi", voice: "nova" } });
    expect(JSON.parse(standIn.requests.splice(0)[0]?.body ?? "").voice).toBe("nova");
    const bad = await api.post(`/v1/bots/${botId}/speak`, {
      token: user.token,
      body: { text: "Hi", voice: "no such/voice" },
    });
    expect(bad.status).toBe(422);
    expect(validationIssues(bad.body)[0]?.loc).toEqual(["body", "voice"]);
    expect(standIn.requests).toEqual([]);
    // The key stays on the server.
    expect(JSON.stringify(config)).not.toContain(key);
  });

  it("answers the engine's failure with 502 naming its status, never the key, and queues nothing", async () => {
    const { botId, config } = await botInCall(openaiServer, user);
    standIn.answerNext(500, JSON.stringify({ error: { message: `server exploded near ${key}` } }));
    const failed = await api.post(`/v1/bots/${botId}/speak`, { token: user.token, body: { text: "Hello" } });
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ detail: "TTS engine openai answered HTTP 500" });
    standIn.answerNext(200, "not a wav at all");
    const garbage = await api.post(`/v1/bots/${botId}/speak`, { token: user.token, body: { text: "Hello" } });
    expect(garbage.status).toBe(502);
    expect(garbage.body.detail).toMatch(/^TTS engine openai answered audio that is not a WAV ffmpeg reads: /);
    expect(await pollNow(config, openaiServer)).toEqual([]);
    expect(await readdir(path.join(openaiServer.dataDir, "outputs", String(botId))).catch(() => [])).toEqual(
      [],
    );
    expect(api.answers.join("\n")).not.toContain(key);
  });
});
