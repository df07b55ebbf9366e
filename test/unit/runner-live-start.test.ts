import pino from "pino";
import { describe, expect, it } from "vitest";
import type { CallbackEventBody, LiveTranscriptOptions } from "../../src/core/index.js";
import { SpeakerTimeline } from "../../src/runner/live-transcript/speakers.js";
import { type LiveTranscriptSources, startLiveTranscript } from "../../src/runner/live-transcript/start.js";
import { RecordingClock } from "../../src/runner/recording-clock.js";

/** Which source the runner starts for BotConfig.liveTranscript, and what it says when it has none. */
function start(options: LiveTranscriptOptions, sources: (started: string[]) => LiveTranscriptSources) {
  const reported: CallbackEventBody[] = [];
  const started: string[] = [];
  startLiveTranscript(
    {
      options,
      clock: new RecordingClock(new Date()),
      speakers: new SpeakerTimeline(() => 0),
      report: (body) => reported.push(body),
      workDir: "/nowhere",
      log: pino({ level: "silent" }),
    },
    sources(started),
  );
  return { reported, started };
}

const pocketsphinxOnly = (started: string[]): LiveTranscriptSources => ({
  pocketsphinx: (_context, state) => {
    started.push(`pocketsphinx ${state}`);
    return { stop: async () => {} };
  },
});

describe("startLiveTranscript", () => {
  it("starts the source asked for, as active", () => {
    const { reported, started } = start({ source: "pocketsphinx", fallback: false }, pocketsphinxOnly);
    expect(started).toEqual(["pocketsphinx active"]);
    expect(reported).toEqual([]);
  });

  it("says a source the runner does not have is unavailable, and starts nothing without fallback", () => {
    const { reported, started } = start({ source: "captions", fallback: false }, pocketsphinxOnly);
    expect(reported).toEqual([
      {
        type: "transcript.source",
        data: {
          source: "captions",
          state: "unavailable",
          reason: "this runner cannot make a live transcript from captions",
        },
      },
    ]);
    expect(started).toEqual([]);
  });

  it("falls back from unavailable captions to pocketsphinx when asked to", () => {
    const { reported, started } = start({ source: "captions", fallback: true }, pocketsphinxOnly);
    expect(reported.map((e) => e.type === "transcript.source" && e.data.state)).toEqual(["unavailable"]);
    expect(started).toEqual(["pocketsphinx fallback"]);
  });
});
