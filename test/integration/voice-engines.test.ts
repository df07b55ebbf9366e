import { execFile } from "node:child_process";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { wavDataBytes } from "../../src/intelligence/audio.js";
import { createSpeechEngine, FLITE_VOICES, SpeechEngineError } from "../../src/voice/index.js";

/**
 * The speech engines on their own (src/voice/): what this machine's ffmpeg offers, and how the
 * OpenAI-compatible engine talks to a server. The server's routes are in server-voice.test.ts.
 */

const run = promisify(execFile);
let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-voice-engines-"));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe("flite", () => {
  it("offers exactly the voices this ffmpeg has built in", async () => {
    // ffmpeg lists them on stderr, then refuses to go on (list_voices asks it to exit).
    const listed = await run("ffmpeg", ["-hide_banner", "-f", "lavfi", "-i", "flite=list_voices=1"]).catch(
      (err: { stderr: string }) => err.stderr,
    );
    const voices = [...String(listed).matchAll(/\[Parsed_flite_0 @ [^\]]+\] (\S+)/g)].map((m) => m[1]);
    expect(voices.sort()).toEqual([...FLITE_VOICES].sort());
  });

  it.each(FLITE_VOICES)("renders a clip with voice %s", async (voice) => {
    const output = path.join(scratch, `${voice}.wav`);
    const durationMs = await createSpeechEngine({ engine: "flite" }).synthesize(
      "Good morning.",
      voice,
      output,
    );
    expect(durationMs).toBeGreaterThan(300);
    expect(durationMs).toBe(Math.round(((await wavDataBytes(output)) / 96_000) * 1000));
  });
});

describe("an OpenAI-compatible server", () => {
  it("gets no Authorization header when no key is set", async () => {
    let headers: IncomingHttpHeaders = {};
    const standIn = createServer((req, res) => {
      headers = req.headers;
      req.resume();
      req.on("end", () => res.writeHead(400, { "content-type": "application/json" }).end("{}"));
    });
    await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
    const { port } = standIn.address() as AddressInfo;
    try {
      const engine = createSpeechEngine({
        engine: "openai",
        openai: { baseUrl: `http://127.0.0.1:${port}/v1/`, model: "tts-1" },
      });
      const failed = engine.synthesize("Hello", "alloy", path.join(scratch, "x.wav"));
      await expect(failed).rejects.toBeInstanceOf(SpeechEngineError);
      await expect(failed).rejects.toThrow("TTS engine openai answered HTTP 400");
      expect(headers.authorization).toBeUndefined();
    } finally {
      await new Promise((resolve) => standIn.close(resolve));
    }
  });

  it("that cannot be reached is a SpeechEngineError saying so", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const engine = createSpeechEngine({
      engine: "openai",
      openai: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "sk-x", model: "tts-1" },
    });
    await expect(engine.synthesize("Hello", "alloy", path.join(scratch, "y.wav"))).rejects.toThrow(
      "TTS engine openai could not be reached: ECONNREFUSED",
    );
  });
});
