import { describe, expect, it } from "vitest";
import { newAssemblyAiWebhookAuth, verifyAssemblyAiWebhook } from "../../src/intelligence/assemblyai.js";
import { clockToMs, transcriptLines } from "../../src/intelligence/openai-summarizer.js";
import { wordsOf } from "../../src/intelligence/openai-transcriber.js";
import { parseRetryAfter, statusError } from "../../src/intelligence/provider-http.js";
import { assemblyAiLanguage, languageCode } from "../../src/intelligence/provider-language.js";
import { createProviderSummarizer, createProviderTranscriber } from "../../src/intelligence/providers.js";

describe("provider failures as EngineError", () => {
  it.each([
    [401, "credentials_invalid", false],
    [403, "credentials_invalid", false],
    [429, "rate_limited", true],
    [500, "provider_error", true],
    [503, "provider_error", true],
    [400, "request_rejected", false],
    [422, "request_rejected", false],
  ])("HTTP %i is %s (retryable: %s)", (status, code, retryable) => {
    expect(statusError("p", status, undefined, "body")).toMatchObject({ code, retryable });
  });

  it("reads Retry-After as seconds or as an HTTP date, and ignores anything else", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("12", now)).toBe(12_000);
    expect(parseRetryAfter(["1.5"], now)).toBe(1500);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe("openai transcription answers to words", () => {
  const chunk = { startMs: 600_000, durationMs: 2000 };

  it("offsets the server's words by the chunk's start", () => {
    const words = wordsOf({ text: "hi", words: [{ word: " hi", start: 0.5, end: 0.75 }] }, chunk);
    expect(words).toEqual([{ text: "hi", startMs: 600_500, endMs: 600_750, confidence: null }]);
  });

  it("spreads each segment's words evenly, with the segment's confidence", () => {
    const words = wordsOf(
      { text: "", segments: [{ start: 1, end: 1.9, text: "one two three", avg_logprob: Math.log(0.5) }] },
      chunk,
    );
    expect(words.map((w) => [w.text, w.startMs, w.endMs, w.confidence])).toEqual([
      ["one", 601_000, 601_300, 0.5],
      ["two", 601_300, 601_600, 0.5],
      ["three", 601_600, 601_900, 0.5],
    ]);
  });

  it("spans a text-only answer over the chunk, and gives nothing for silence", () => {
    expect(wordsOf({ text: " hello " }, chunk)).toEqual([
      { text: "hello", startMs: 600_000, endMs: 602_000, confidence: null },
    ]);
    expect(wordsOf({ text: "" }, chunk)).toEqual([]);
  });
});

describe("provider language names", () => {
  it("gives ISO 639-1 codes for codes with regions and for English names, and keeps what it cannot name", () => {
    expect(
      ["en", "en_us", "pt-BR", "english", "German", "japanese", "klingon", "yue"].map(languageCode),
    ).toEqual(["en", "en", "pt", "en", "de", "ja", "klingon", "yue"]);
  });

  it("asks AssemblyAI in its own spelling: en_us, en_uk", () => {
    expect(["en", "en-US", "EN_us", "en-GB", "pt-BR", "de"].map(assemblyAiLanguage)).toEqual([
      "en",
      "en_us",
      "en_us",
      "en_uk",
      "pt_br",
      "de",
    ]);
  });
});

describe("assemblyai webhook verification", () => {
  const auth = newAssemblyAiWebhookAuth();

  it("accepts the header the engine set, whatever the case of its name", () => {
    expect(verifyAssemblyAiWebhook({ [auth.headerName]: auth.headerValue }, auth)).toBe(true);
    expect(
      verifyAssemblyAiWebhook(
        { [auth.headerName]: auth.headerValue },
        { ...auth, headerName: auth.headerName.toUpperCase() },
      ),
    ).toBe(true);
  });

  it("refuses a missing, wrong or truncated value", () => {
    expect(verifyAssemblyAiWebhook({}, auth)).toBe(false);
    expect(verifyAssemblyAiWebhook({ [auth.headerName]: "nope" }, auth)).toBe(false);
    expect(verifyAssemblyAiWebhook({ [auth.headerName]: auth.headerValue.slice(1) }, auth)).toBe(false);
  });

  it("makes a fresh secret each time", () => {
    expect(newAssemblyAiWebhookAuth().headerValue).not.toBe(newAssemblyAiWebhookAuth().headerValue);
    expect(Buffer.from(auth.headerValue, "base64url").length).toBeGreaterThanOrEqual(16);
  });
});

describe("summary prompt and answer", () => {
  it("writes the transcript as [mm:ss] Name: text lines", () => {
    const lines = transcriptLines([
      {
        speaker: { participantId: "a", name: "Ann" },
        startMs: 3_725_400,
        endMs: 0,
        text: "Hi.",
        confidence: null,
        words: [],
      },
      { speaker: null, startMs: 9_000, endMs: 0, text: "Yes.", confidence: null, words: [] },
    ]);
    expect(lines).toBe("[62:05] Ann: Hi.\n[00:09] Unknown: Yes.");
  });

  it("reads the model's timestamps back", () => {
    expect(clockToMs("01:05")).toBe(65_000);
    expect(clockToMs("[62:05]")).toBe(3_725_000);
    expect(clockToMs("1:02:05")).toBe(3_725_000);
    expect(clockToMs("at the end")).toBeNull();
  });
});

describe("provider factories", () => {
  it("builds each engine by name from its settings", () => {
    expect(createProviderTranscriber("openai", {}).engine).toBe("openai");
    expect(createProviderTranscriber("deepgram", { apiKey: "k" }).engine).toBe("deepgram");
    expect(createProviderTranscriber("assemblyai", { apiKey: "k" }).engine).toBe("assemblyai");
    expect(createProviderSummarizer("openai", { model: "llama3" }).engine).toBe("openai");
  });

  it("refuses settings its schema does not accept", () => {
    expect(() => createProviderTranscriber("deepgram", {})).toThrow(/apiKey/);
    expect(() => createProviderTranscriber("openai", { baseUrl: "not a url" })).toThrow();
  });
});
