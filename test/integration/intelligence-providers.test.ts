import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  AssemblyAiTranscriber,
  newAssemblyAiWebhookAuth,
  verifyAssemblyAiWebhook,
} from "../../src/intelligence/assemblyai.js";
import { DeepgramTranscriber } from "../../src/intelligence/deepgram.js";
import { OpenAiSummarizer } from "../../src/intelligence/openai-summarizer.js";
import { OpenAiTranscriber } from "../../src/intelligence/openai-transcriber.js";
import { EngineError, type Utterance } from "../../src/intelligence/types.js";
import {
  parseMultipart,
  sha256,
  startStandIn,
  wavDurationMs,
  type StandIn,
  type StandInHandler,
} from "../helpers/provider-stand-ins.js";

// The real services cannot be reached from this machine: every test here talks to a stand-in that
// speaks the real API (test/helpers/provider-stand-ins.ts) on 127.0.0.1.

const run = promisify(execFile);
let dir: string;
let speech: string; // "hello there", 16 kHz mono WAV
let speechHash: string;
let video: string; // 2.05 s of tone in an MP4: three 1-s chunks, the last under 80 ms
const standIns: StandIn[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "meetbot-providers-"));
  speech = join(dir, "speech.wav");
  video = join(dir, "tone.mp4");
  const quiet = ["-hide_banner", "-loglevel", "error", "-y"];
  await run("ffmpeg", [
    ...quiet,
    "-f",
    "lavfi",
    "-i",
    "flite=text='hello there':voice=rms",
    "-ar",
    "16000",
    "-ac",
    "1",
    speech,
  ]);
  await run("ffmpeg", [
    ...quiet,
    ...["-f", "lavfi", "-i", "sine=frequency=440:duration=2.05"],
    ...["-f", "lavfi", "-i", "color=c=black:s=64x64:d=2.05"],
    ...["-shortest", "-c:v", "libx264", "-c:a", "aac", video],
  ]);
  speechHash = sha256(await readFile(speech));
});

afterEach(async () => {
  await Promise.all(standIns.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function standIn(handle: StandInHandler): Promise<StandIn> {
  const started = await startStandIn(handle);
  standIns.push(started);
  return started;
}

async function failure(promise: Promise<unknown>): Promise<EngineError> {
  const error = await promise.then(
    () => new Error("expected a failure"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EngineError);
  return error as EngineError;
}

describe("openai transcriber", () => {
  it("uploads the file as multipart with the documented fields and takes the server's words", async () => {
    const server = await standIn(() => ({
      json: {
        task: "transcribe",
        language: "english",
        duration: 1.13,
        text: "Hello there.",
        segments: [{ id: 0, start: 0, end: 1.1, text: " Hello there.", avg_logprob: -0.1 }],
        words: [
          { word: "Hello", start: 0.12, end: 0.5 },
          { word: "there.", start: 0.5, end: 1.02 },
        ],
      },
    }));
    const progress: number[] = [];
    const engine = new OpenAiTranscriber({
      baseUrl: `${server.baseUrl}/v1`,
      apiKey: "sk-test",
      model: "whisper-1",
    });
    const result = await engine.transcribe({
      mediaPath: speech,
      language: "en",
      onProgress: (f) => progress.push(f),
    });

    const [request] = server.requests;
    expect(request?.method).toBe("POST");
    expect(request?.url.pathname).toBe("/v1/audio/transcriptions");
    expect(request?.headers.authorization).toBe("Bearer sk-test");
    const parts = parseMultipart(request!.headers, request!.body);
    const fields = parts.filter((p) => p.filename === undefined).map((p) => [p.name, p.data.toString()]);
    expect(fields).toEqual([
      ["model", "whisper-1"],
      ["language", "en"],
      ["response_format", "verbose_json"],
      ["timestamp_granularities[]", "word"],
      ["timestamp_granularities[]", "segment"],
    ]);
    const file = parts.find((p) => p.name === "file");
    expect(file?.filename).toMatch(/\.wav$/);
    expect(sha256(file!.data)).toBe(speechHash);

    expect(result.words).toEqual([
      { text: "Hello", startMs: 120, endMs: 500, confidence: Math.exp(-0.1) },
      { text: "there.", startMs: 500, endMs: 1020, confidence: Math.exp(-0.1) },
    ]);
    expect(result).toMatchObject({ text: "Hello there.", language: "en", durationMs: 1130 });
    expect(progress.at(-1)).toBe(1);
  });

  it("spreads a segment's words evenly over it when the server gives segments only", async () => {
    const server = await standIn(() => ({
      json: {
        text: "hello there",
        language: "german",
        segments: [{ start: 0.2, end: 1.0, text: " hello there" }],
      },
    }));
    const result = await new OpenAiTranscriber({ baseUrl: server.baseUrl }).transcribe({ mediaPath: speech });
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
    expect(result.language).toBe("de");
    expect(result.words).toEqual([
      { text: "hello", startMs: 200, endMs: 600, confidence: null },
      { text: "there", startMs: 600, endMs: 1000, confidence: null },
    ]);
  });

  it("makes one pseudo-word over the whole audio when the server gives only text", async () => {
    const server = await standIn(() => ({ json: { text: "hello there" } }));
    const engine = new OpenAiTranscriber({ baseUrl: server.baseUrl, responseFormat: "json" });
    const result = await engine.transcribe({ mediaPath: speech });
    const fields = parseMultipart(server.requests[0]!.headers, server.requests[0]!.body).map((p) => p.name);
    expect(fields).not.toContain("timestamp_granularities[]");
    expect(result.words).toEqual([{ text: "hello there", startMs: 0, endMs: 1130, confidence: null }]);
  });

  it("extracts a recording's audio in chunks, offsets their times and skips a chunk under 80 ms", async () => {
    const received: number[] = [];
    const server = await standIn((request) => {
      const file = parseMultipart(request.headers, request.body).find((p) => p.name === "file")!;
      received.push(wavDurationMs(file.data));
      return {
        json: {
          text: `chunk${received.length}`,
          words: [{ word: `chunk${received.length}`, start: 0.25, end: 0.5 }],
        },
      };
    });
    const progress: number[] = [];
    const engine = new OpenAiTranscriber({ baseUrl: server.baseUrl, chunkSeconds: 1 });
    const result = await engine.transcribe({ mediaPath: video, onProgress: (f) => progress.push(f) });

    // ffmpeg cuts 1-s chunks at packet boundaries: ~1.02 s, ~1.0 s and a ~47 ms tail that is never sent.
    expect(received).toHaveLength(2);
    for (const ms of received) expect(ms).toBeGreaterThan(900);
    const secondStart = Math.round(received[0]!);
    expect(result.words.map((w) => w.text)).toEqual(["chunk1", "chunk2"]);
    expect(result.words[0]).toMatchObject({ startMs: 250, endMs: 500 });
    expect(Math.abs(result.words[1]!.startMs - (secondStart + 250))).toBeLessThanOrEqual(1);
    expect(result.text).toBe("chunk1 chunk2");
    expect(result.durationMs).toBeGreaterThan(2000);
    expect(progress).toEqual([0.5, 1, 1]);
  });
});

describe("provider failures", () => {
  const transcribe = (baseUrl: string, timeoutMs = 10_000, signal?: AbortSignal): Promise<unknown> =>
    new OpenAiTranscriber({ baseUrl, apiKey: "sk", timeoutMs, chunkRetries: 0 }).transcribe({
      mediaPath: speech,
      signal,
    });

  it("401 is credentials_invalid and final", async () => {
    const server = await standIn(() => ({ status: 401, json: { error: { message: "Incorrect API key" } } }));
    const error = await failure(transcribe(server.baseUrl));
    expect(error).toMatchObject({ code: "credentials_invalid", retryable: false });
    expect(error.message).toContain("Incorrect API key");
  });

  it("429 is rate_limited, retryable, with the Retry-After", async () => {
    const server = await standIn(() => ({
      status: 429,
      headers: { "retry-after": "7" },
      json: { error: {} },
    }));
    expect(await failure(transcribe(server.baseUrl))).toMatchObject({
      code: "rate_limited",
      retryable: true,
      retryAfterMs: 7000,
    });
  });

  it("500 is provider_error, retryable; 422 is request_rejected, final", async () => {
    let status = 500;
    const server = await standIn(() => ({ status, json: { error: "boom" } }));
    expect(await failure(transcribe(server.baseUrl))).toMatchObject({
      code: "provider_error",
      retryable: true,
    });
    status = 422;
    expect(await failure(transcribe(server.baseUrl))).toMatchObject({
      code: "request_rejected",
      retryable: false,
    });
  });

  it("a chunk is sent again after a 429, after the Retry-After", async () => {
    const answers = [
      { status: 429, headers: { "retry-after": "0" }, json: { error: { message: "slow down" } } },
      { json: { text: "hello there" } },
    ];
    const server = await standIn(() => answers.shift()!);
    const engine = new OpenAiTranscriber({ baseUrl: server.baseUrl, chunkRetries: 1 });
    expect((await engine.transcribe({ mediaPath: speech })).text).toBe("hello there");
    expect(server.requests).toHaveLength(2);
    expect(sha256(parseMultipart(server.requests[1]!.headers, server.requests[1]!.body).at(-1)!.data)).toBe(
      speechHash,
    );
  });

  it("a server that never answers is a retryable timeout", async () => {
    const server = await standIn(() => "hang");
    expect(await failure(transcribe(server.baseUrl, 300))).toMatchObject({
      code: "timeout",
      retryable: true,
    });
  });

  it("a closed port is unreachable, retryable", async () => {
    const server = await startStandIn(() => ({ json: {} }));
    await server.close();
    expect(await failure(transcribe(server.baseUrl))).toMatchObject({ code: "unreachable", retryable: true });
  });

  it("an abort ends the call with the signal's reason", async () => {
    const controller = new AbortController();
    const server = await standIn(() => {
      controller.abort(new Error("lease lost"));
      return "hang";
    });
    await expect(transcribe(server.baseUrl, 60_000, controller.signal)).rejects.toThrow("lease lost");
  });
});

describe("deepgram transcriber", () => {
  it("streams the audio as the body and reads the words of the first alternative", async () => {
    const server = await standIn(() => ({
      json: {
        metadata: { request_id: "r1", duration: 1.13, channels: 1 },
        results: {
          channels: [
            {
              alternatives: [
                {
                  transcript: "Hello there.",
                  confidence: 0.98,
                  words: [
                    {
                      word: "hello",
                      punctuated_word: "Hello",
                      start: 0.1,
                      end: 0.48,
                      confidence: 0.99,
                      speaker: 0,
                    },
                    {
                      word: "there",
                      punctuated_word: "there.",
                      start: 0.48,
                      end: 1.0,
                      confidence: 0.97,
                      speaker: 0,
                    },
                  ],
                },
              ],
            },
          ],
        },
      },
    }));
    const engine = new DeepgramTranscriber({
      baseUrl: server.baseUrl,
      apiKey: "dg-key",
      model: "nova-3",
      diarize: true,
    });
    const result = await engine.transcribe({ mediaPath: speech, language: "en" });

    const [request] = server.requests;
    expect(request?.url.pathname).toBe("/v1/listen");
    expect(Object.fromEntries(request!.url.searchParams)).toEqual({
      model: "nova-3",
      smart_format: "true",
      punctuate: "true",
      language: "en",
      diarize: "true",
    });
    expect(request?.headers.authorization).toBe("Token dg-key");
    expect(request?.headers["content-type"]).toBe("audio/wav");
    expect(sha256(request!.body)).toBe(speechHash);
    expect(result).toMatchObject({ language: "en", durationMs: 1130, text: "Hello there." });
    expect(result.words).toEqual([
      { text: "Hello", startMs: 100, endMs: 480, confidence: 0.99, speakerHint: "speaker_0" },
      { text: "there.", startMs: 480, endMs: 1000, confidence: 0.97, speakerHint: "speaker_0" },
    ]);
  });

  it("403 is credentials_invalid", async () => {
    const server = await standIn(() => ({ status: 403, json: { err_code: "FORBIDDEN" } }));
    const engine = new DeepgramTranscriber({ baseUrl: server.baseUrl, apiKey: "bad" });
    expect(await failure(engine.transcribe({ mediaPath: speech }))).toMatchObject({
      code: "credentials_invalid",
    });
  });
});

/** AssemblyAI's documented flow: upload → transcript → status reads until completed or error. */
function assemblyAi(options: {
  statuses: string[];
  error?: string;
  onCreate?: (body: Record<string, unknown>) => void;
}) {
  let reads = 0;
  const completed = {
    id: "tr_1",
    status: "completed",
    text: "Hello there.",
    language_code: "en_us",
    audio_duration: 1,
    words: [
      { text: "Hello", start: 120, end: 480, confidence: 0.95, speaker: "A" },
      { text: "there.", start: 480, end: 1010, confidence: 0.9, speaker: "A" },
    ],
  };
  const handler: StandInHandler = (request) => {
    if (request.url.pathname === "/v2/upload")
      return { json: { upload_url: "https://cdn.assemblyai.test/upload/abc" } };
    if (request.method === "POST" && request.url.pathname === "/v2/transcript") {
      options.onCreate?.(JSON.parse(request.body.toString()) as Record<string, unknown>);
      return { json: { id: "tr_1", status: "queued" } };
    }
    if (request.url.pathname === "/v2/transcript/tr_1") {
      const status = options.statuses[Math.min(reads++, options.statuses.length - 1)]!;
      if (status === "completed") return { json: completed };
      return { json: { id: "tr_1", status, ...(status === "error" ? { error: options.error } : {}) } };
    }
    return { status: 404, json: { error: "not found" } };
  };
  return handler;
}

describe("assemblyai transcriber", () => {
  it("uploads, creates the transcript and polls its status until completed", async () => {
    let created: Record<string, unknown> = {};
    const server = await standIn(
      assemblyAi({ statuses: ["queued", "processing", "completed"], onCreate: (body) => (created = body) }),
    );
    const progress: number[] = [];
    const engine = new AssemblyAiTranscriber({
      baseUrl: server.baseUrl,
      apiKey: "aai-key",
      speakerLabels: true,
      pollIntervalMs: 5,
    });
    const result = await engine.transcribe({
      mediaPath: speech,
      language: "en",
      onProgress: (f) => progress.push(f),
    });

    const upload = server.requests[0]!;
    expect(upload.url.pathname).toBe("/v2/upload");
    expect(upload.headers.authorization).toBe("aai-key");
    expect(sha256(upload.body)).toBe(speechHash);
    expect(created).toEqual({
      audio_url: "https://cdn.assemblyai.test/upload/abc",
      language_code: "en",
      speaker_labels: true,
    });
    expect(server.requests.filter((r) => r.method === "GET")).toHaveLength(3);
    for (const r of server.requests) expect(r.headers.authorization).toBe("aai-key");
    expect(result).toMatchObject({ language: "en", text: "Hello there.", durationMs: 1130 });
    expect(result.words).toEqual([
      { text: "Hello", startMs: 120, endMs: 480, confidence: 0.95, speakerHint: "A" },
      { text: "there.", startMs: 480, endMs: 1010, confidence: 0.9, speakerHint: "A" },
    ]);
    expect(progress).toContain(0.3);
    expect(progress.at(-1)).toBe(1);
  });

  it("completes on its webhook, verified by the auth header the engine set", async () => {
    const auth = newAssemblyAiWebhookAuth();
    const verdicts: boolean[] = [];
    let deliver: () => void = () => {};
    const delivered = new Promise<void>((resolve) => (deliver = resolve));
    // The test plays the server's receiver (POST /v1/webhook-receivers/assemblyai/{jobId}).
    const receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const ok = verifyAssemblyAiWebhook(req.headers, auth);
        verdicts.push(ok);
        res.writeHead(ok ? 200 : 401).end();
        if (ok) deliver();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/webhook-receivers/assemblyai/job1`;

    let done = false;
    const flow = assemblyAi({ statuses: ["completed"] });
    const server = await standIn(async (request) => {
      if (request.method === "POST" && request.url.pathname === "/v2/transcript") {
        const body = JSON.parse(request.body.toString()) as Record<string, string>;
        // AssemblyAI calls the webhook when the transcript is done, with the header it was given.
        setImmediate(() => {
          done = true;
          void fetch(body.webhook_url!, {
            method: "POST",
            headers: {
              [body.webhook_auth_header_name!]: body.webhook_auth_header_value!,
              "content-type": "application/json",
            },
            body: JSON.stringify({ transcript_id: "tr_1", status: "completed" }),
          });
        });
      }
      if (request.method === "GET" && !done) return { json: { id: "tr_1", status: "processing" } };
      return flow(request);
    });
    try {
      // The fallback poll is far away: only the webhook can finish this within the test's time.
      const engine = new AssemblyAiTranscriber({
        baseUrl: server.baseUrl,
        apiKey: "k",
        webhookPollIntervalMs: 600_000,
      });
      const result = await engine.transcribe({
        mediaPath: speech,
        webhook: { url: webhookUrl, ...auth, delivered },
      });
      const create = server.requests.find((r) => r.method === "POST" && r.url.pathname === "/v2/transcript")!;
      expect(JSON.parse(create.body.toString())).toMatchObject({
        webhook_url: webhookUrl,
        webhook_auth_header_name: auth.headerName,
        webhook_auth_header_value: auth.headerValue,
      });
      expect(verdicts).toEqual([true]);
      expect(server.requests.filter((r) => r.method === "GET")).toHaveLength(1);
      expect(result.words.map((w) => w.text)).toEqual(["Hello", "there."]);
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("gives up with a retryable timeout when the transcript is not done by the deadline", async () => {
    const server = await standIn(assemblyAi({ statuses: ["processing"] }));
    const engine = new AssemblyAiTranscriber({
      baseUrl: server.baseUrl,
      apiKey: "k",
      pollIntervalMs: 50,
      completionTimeoutMs: 1,
    });
    expect(await failure(engine.transcribe({ mediaPath: speech }))).toMatchObject({
      code: "timeout",
      retryable: true,
    });
  });

  it("an abort while waiting for completion ends it with the signal's reason", async () => {
    const controller = new AbortController();
    const flow = assemblyAi({ statuses: ["processing"] });
    const server = await standIn((request) => {
      if (request.method === "POST" && request.url.pathname === "/v2/transcript") {
        setImmediate(() => controller.abort(new Error("shutting down")));
      }
      return flow(request);
    });
    const engine = new AssemblyAiTranscriber({
      baseUrl: server.baseUrl,
      apiKey: "k",
      pollIntervalMs: 600_000,
    });
    await expect(engine.transcribe({ mediaPath: speech, signal: controller.signal })).rejects.toThrow(
      "shutting down",
    );
  });

  it("does not send a clip under 175 ms (AssemblyAI always fails them)", async () => {
    const clip = join(dir, "clip.wav");
    await run("ffmpeg", [
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=0.1",
      "-ar",
      "16000",
      clip,
    ]);
    const server = await standIn(assemblyAi({ statuses: ["completed"] }));
    const result = await new AssemblyAiTranscriber({ baseUrl: server.baseUrl, apiKey: "k" }).transcribe({
      mediaPath: clip,
    });
    expect(server.requests).toHaveLength(0);
    expect(result).toMatchObject({ words: [], text: "", durationMs: 100 });
  });

  it("a transcript in status error fails for good with AssemblyAI's reason", async () => {
    const server = await standIn(assemblyAi({ statuses: ["error"], error: "Audio file is too short" }));
    const engine = new AssemblyAiTranscriber({ baseUrl: server.baseUrl, apiKey: "k", pollIntervalMs: 5 });
    const error = await failure(engine.transcribe({ mediaPath: speech }));
    expect(error).toMatchObject({ code: "provider_error", retryable: false });
    expect(error.message).toContain("Audio file is too short");
  });
});

const utterances: Utterance[] = [
  {
    speaker: { participantId: "p1", name: "Alice" },
    startMs: 65_000,
    endMs: 68_000,
    text: "I will send the report tomorrow.",
    confidence: null,
    words: [],
  },
  {
    speaker: null,
    startMs: 70_000,
    endMs: 72_000,
    text: "We decided to ship on Monday.",
    confidence: null,
    words: [],
  },
];

const validSummary = {
  overview: "The team planned the release.",
  keyPoints: ["Release on Monday"],
  actionItems: [{ text: "Send the report", owner: "Alice", due: "tomorrow", at: "01:05" }],
  decisions: ["Ship on Monday"],
};

function chatAnswer(content: unknown) {
  return {
    json: {
      id: "c1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content } }],
    },
  };
}

describe("openai summarizer", () => {
  it("asks with a JSON schema and the transcript as [mm:ss] Name lines, and validates the answer", async () => {
    const server = await standIn(() => chatAnswer(JSON.stringify(validSummary)));
    const engine = new OpenAiSummarizer({
      baseUrl: `${server.baseUrl}/v1`,
      apiKey: "sk-x",
      model: "gpt-test",
    });
    const summary = await engine.summarize({ utterances, meetingTitle: "Release" });

    const request = server.requests[0]!;
    expect(request.url.pathname).toBe("/v1/chat/completions");
    expect(request.headers.authorization).toBe("Bearer sk-x");
    const body = JSON.parse(request.body.toString()) as {
      model: string;
      messages: Array<{ content: string }>;
      response_format: { type: string; json_schema: { schema: { required: string[] } } };
    };
    expect(body.model).toBe("gpt-test");
    expect(body.response_format.type).toBe("json_schema");
    expect(body.response_format.json_schema.schema.required).toEqual([
      "overview",
      "keyPoints",
      "actionItems",
      "decisions",
    ]);
    expect(body.messages[1]?.content).toContain(
      "[01:05] Alice: I will send the report tomorrow.\n[01:10] Unknown: We decided",
    );
    expect(summary).toEqual({
      overview: "The team planned the release.",
      keyPoints: ["Release on Monday"],
      actionItems: [{ text: "Send the report", owner: "Alice", due: "tomorrow", startMs: 65_000 }],
      decisions: ["Ship on Monday"],
    });
  });

  it("falls back to json_object when the server refuses json_schema with a 400", async () => {
    const server = await standIn((request) => {
      const format = (JSON.parse(request.body.toString()) as { response_format: { type: string } })
        .response_format.type;
      if (format === "json_schema")
        return { status: 400, json: { error: { message: "response_format json_schema unsupported" } } };
      return chatAnswer(JSON.stringify(validSummary));
    });
    const engine = new OpenAiSummarizer({ baseUrl: server.baseUrl });
    expect((await engine.summarize({ utterances })).decisions).toEqual(["Ship on Monday"]);
    await engine.summarize({ utterances });
    const formats = server.requests.map(
      (r) => (JSON.parse(r.body.toString()) as { response_format: { type: string } }).response_format.type,
    );
    expect(formats).toEqual(["json_schema", "json_object", "json_object"]);
  });

  it("a 401 is bad credentials, not a refused json_schema: no second try", async () => {
    const server = await standIn(() => ({ status: 401, json: { error: { message: "invalid key" } } }));
    const engine = new OpenAiSummarizer({ baseUrl: server.baseUrl, apiKey: "bad" });
    expect(await failure(engine.summarize({ utterances }))).toMatchObject({ code: "credentials_invalid" });
    expect(server.requests).toHaveLength(1);
  });

  it("asks again after an invalid answer", async () => {
    const answers = ["not json at all", "```json\n" + JSON.stringify(validSummary) + "\n```"];
    const server = await standIn(() => chatAnswer(answers.shift()));
    const summary = await new OpenAiSummarizer({ baseUrl: server.baseUrl }).summarize({ utterances });
    expect(server.requests).toHaveLength(2);
    expect(summary.actionItems[0]?.owner).toBe("Alice");
  });

  it("fails with invalid_answer when no answer validates", async () => {
    const server = await standIn(() =>
      chatAnswer(JSON.stringify({ overview: "x", keyPoints: "not a list" })),
    );
    const engine = new OpenAiSummarizer({ baseUrl: server.baseUrl, maxAttempts: 3 });
    expect(await failure(engine.summarize({ utterances }))).toMatchObject({
      code: "invalid_answer",
      retryable: false,
    });
    expect(server.requests).toHaveLength(3);
  });
});
