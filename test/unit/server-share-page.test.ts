import { describe, expect, it } from "vitest";
import { sharePage, wantsHtml } from "../../src/server/http/share-page.js";
import { SharedRecording } from "../../src/server/schemas/index.js";

describe("wantsHtml", () => {
  it("is true when text/html is listed with a q above 0", () => {
    expect(wantsHtml("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")).toBe(true);
    expect(wantsHtml("application/json, TEXT/HTML;q=0.5")).toBe(true);
  });

  it("is false otherwise: JSON is the default", () => {
    for (const accept of [
      undefined,
      "",
      "*/*",
      "application/json",
      "text/*",
      "text/html;q=0",
      "text/htmlx",
    ]) {
      expect(wantsHtml(accept), String(accept)).toBe(false);
    }
  });
});

describe("sharePage", () => {
  const shared = {
    meetingTitle: "",
    format: "mp4" as const,
    platform: "zoom" as const,
    durationMs: 3_723_400,
    createdAt: "2030-01-02T10:31:00.000Z",
    streamUrl: "http://x/v1/share/t/stream",
    transcript: null,
  };

  it("names an untitled meeting, and shows its date and an hour-long length", () => {
    const html = sharePage(shared, "abc_-9");
    expect(html).toContain("<h1>Meeting recording</h1>");
    expect(html).toContain(">2030-01-02 10:31 UTC</time> · 1:02:03");
    expect(html).toContain('src="abc_-9/stream"');
  });

  it("plays a video recording in a video player, and an audio-only bot's m4a in an audio player", () => {
    expect(sharePage(shared, "t")).toContain('<video controls preload="metadata" src="t/stream"></video>');
    const audio = sharePage({ ...shared, format: "m4a" }, "t");
    expect(audio).toContain('<audio controls preload="metadata" src="t/stream"></audio>');
    expect(audio).not.toContain("<video");
  });

  it("never lets a token out of its attribute", () => {
    expect(sharePage(shared, '"><script>')).toContain('src="%22%3E%3Cscript%3E/stream"');
  });

  const transcript: SharedRecording["transcript"] & object = {
    status: "completed",
    engine: "pocketsphinx",
    language: "en",
    durationMs: 3_723_400,
    createdAt: "2030-01-02T11:40:00.000Z",
    completedAt: "2030-01-02T11:41:00.000Z",
    text: "i will send the report tomorrow thanks",
    utterances: [
      {
        speaker: { participantId: "p-a", name: "Alice" },
        startMs: 65_400,
        endMs: 67_000,
        text: "i will send the report tomorrow",
        confidence: 0.8,
        words: [{ text: "i", startMs: 65_400, endMs: 65_500, confidence: 0.8 }],
      },
      { speaker: null, startMs: 3_723_000, endMs: 3_723_300, text: "thanks", confidence: null, words: [] },
    ],
  };

  it("shows no transcript until there is one", () => {
    expect(sharePage(shared, "t")).toContain("<h2>Transcript</h2>\n<p>No transcript yet.</p>\n</section>");
  });

  it("shows each utterance's time, speaker and words below the player", () => {
    const html = sharePage({ ...shared, transcript }, "t");
    expect(SharedRecording.parse({ ...shared, transcript })).toEqual({ ...shared, transcript });
    expect(html).not.toContain("No transcript yet.");
    expect(html).toContain(
      '<p><time datetime="PT65S">01:05</time> <bdi class="who">Alice</bdi> <bdi>i will send the report tomorrow</bdi></p>\n' +
        '<p><time datetime="PT3723S">1:02:03</time> <bdi class="who">Unknown speaker</bdi> <bdi>thanks</bdi></p>\n</section>',
    );
    expect(html.indexOf("<video")).toBeLessThan(html.indexOf("01:05"));
  });

  it("says so when the transcript holds no speech", () => {
    const html = sharePage({ ...shared, transcript: { ...transcript, text: "", utterances: [] } }, "t");
    expect(html).toContain("<p>No speech was recognized.</p>");
  });

  it("escapes the names and words people said, and stays without script", () => {
    const hostile = {
      ...transcript,
      utterances: [
        {
          ...transcript.utterances[0]!,
          speaker: { participantId: "p-x", name: "<script>alert(1)</script>" },
          text: 'a <img src=x onerror="alert(2)"> & b',
        },
      ],
    };
    const html = sharePage({ ...shared, transcript: hostile }, "t");
    expect(html).toContain(
      '<bdi class="who">&#60;script&#62;alert(1)&#60;/script&#62;</bdi> <bdi>a &#60;img src=x onerror=&#34;alert(2)&#34;&#62; &#38; b</bdi></p>',
    );
    expect(html).not.toMatch(/<script|<img/i);
  });

  it("isolates each name and each line of words: a right-to-left override turns nothing after it around", () => {
    // "Mallory" + RLO: unisolated, the override runs on to the end of the paragraph, and the words
    // after the name (and their time) display reversed.
    const hostile = {
      ...transcript,
      utterances: [
        { ...transcript.utterances[0]!, speaker: { participantId: "p-m", name: "Mallory\u202E" } },
        { ...transcript.utterances[0]!, startMs: 70_000, text: "\u202Eit was Alice" },
        transcript.utterances[1]!,
      ],
    };
    const html = sharePage({ ...shared, transcript: hostile }, "t");
    const lines = html.match(/<p><time.*<\/p>/g) ?? [];
    expect(lines).toHaveLength(3);
    // Every run of page-given text is a <bdi> of its own, and nothing is outside one but the time.
    for (const line of lines) {
      expect(line).toMatch(
        /^<p><time [^>]*>[^<]*<\/time> <bdi class="who">[^<]*<\/bdi> <bdi>[^<]*<\/bdi><\/p>$/,
      );
    }
    // The name is written without its control (the label is plain text everywhere); the words as said.
    expect(lines[0]).toContain('<bdi class="who">Mallory</bdi>');
    expect(lines[1]).toContain("<bdi>\u202Eit was Alice</bdi>");
  });
});
