import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractAudio } from "../../src/intelligence/audio.js";
import {
  attributeSpeakers,
  embeddedSummarizer,
  embeddedTranscriber,
  wordAccuracy,
} from "../../src/intelligence/index.js";
import { pocketsphinxTranscriber } from "../../src/intelligence/pocketsphinx.js";
import { EngineError, type Recognition, type SpeakerTurn } from "../../src/intelligence/types.js";
import { makeSpokenMeeting, probeMs, type SpokenLine, SCRIPTED_MEETING } from "../helpers/spoken-meeting.js";

const run = promisify(execFile);

const SCRIPT = SCRIPTED_MEETING;

let scratch: string;
let mp4Path: string;
let lines: SpokenLine[];
let script: string;
let recognition: Recognition;
const progress: number[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-intelligence-"));
  ({ mp4Path, lines, script } = await makeSpokenMeeting(scratch, SCRIPT));
  recognition = await embeddedTranscriber({ tmpDir: scratch }).transcribe({
    mediaPath: mp4Path,
    language: "en-US",
    onProgress: (fraction) => progress.push(fraction),
  });
}, 180_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** The platform's indicator as it behaves: on 200 ms after the voice starts, off 400 ms after it stops. */
function laggingTimeline(spoken: readonly SpokenLine[]): SpeakerTurn[] {
  return spoken.map((line) => ({
    participantId: line.participantId,
    name: line.name,
    startMs: line.startMs + 200,
    endMs: line.endMs + 400,
  }));
}

describe("the embedded engines on a recorded, scripted meeting", () => {
  it("transcribes the script with word accuracy of at least 0.85", () => {
    expect(recognition.language).toBe("en");
    expect(wordAccuracy(script, recognition.text)).toBeGreaterThanOrEqual(0.85);
    expect(recognition.text).toContain("i will send the report tomorrow");
  });

  it("gives word times within the lines' own times and ordered", () => {
    const first = lines[0]!;
    const last = lines.at(-1)!;
    expect(recognition.words.length).toBeGreaterThan(20);
    expect(recognition.words[0]!.startMs).toBeGreaterThanOrEqual(first.startMs - 300);
    expect(recognition.words.at(-1)!.endMs).toBeLessThanOrEqual(last.endMs + 300);
    for (const [i, word] of recognition.words.entries()) {
      expect(word.endMs).toBeGreaterThanOrEqual(word.startMs);
      if (i) expect(word.startMs).toBeGreaterThanOrEqual(recognition.words[i - 1]!.endMs);
      expect(word.confidence).not.toBeNull();
      expect(word.confidence).toBeGreaterThanOrEqual(0);
      expect(word.confidence).toBeLessThanOrEqual(1);
      expect(word.text).toMatch(/^[a-z']+$/);
    }
  });

  it("knows the duration and reports progress up to 1", async () => {
    const mediaMs = await probeMs(mp4Path);
    expect(Math.abs(recognition.durationMs - mediaMs)).toBeLessThan(100);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toBe(1);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
  });

  it("attributes every line to the participant who read it", () => {
    const utterances = attributeSpeakers(recognition.words, laggingTimeline(lines));
    expect(utterances.map((u) => u.speaker?.name)).toEqual(lines.map((line) => line.name));
    for (const [i, utterance] of utterances.entries()) {
      expect(wordAccuracy(lines[i]!.text, utterance.text)).toBeGreaterThanOrEqual(0.75);
    }
  });

  it("summarizes the commitment with its owner and due phrase, and the decision", async () => {
    const utterances = attributeSpeakers(recognition.words, laggingTimeline(lines));
    const summary = await embeddedSummarizer().summarize({ utterances, meetingTitle: "Weekly planning" });
    const item = summary.actionItems.find((action) =>
      action.text.toLowerCase().startsWith("send the report"),
    );
    expect(item).toMatchObject({ owner: "Alice Martin", due: "tomorrow" });
    expect(Math.abs(item!.startMs! - lines[2]!.startMs)).toBeLessThan(500);
    expect(summary.decisions).toHaveLength(1);
    expect(summary.decisions[0]).toMatch(/^We decided to /);
    expect(summary.overview).toMatch(/^Alice Martin and Bob Chen in "Weekly planning" discussed /);
  });

  it("leaves no temporary audio behind", async () => {
    expect((await readdir(scratch)).filter((name) => name.startsWith("meetbot-audio-"))).toEqual([]);
  });
});

describe("audio extraction", () => {
  it("writes a 16 kHz mono 16-bit WAV of the recording's length", async () => {
    const audio = await extractAudio(mp4Path, { tmpDir: scratch });
    try {
      const { stdout } = await run("ffprobe", [
        ...[
          "-v",
          "error",
          "-show_entries",
          "stream=codec_name,sample_rate,channels",
          "-of",
          "json",
          audio.path,
        ],
      ]);
      expect(JSON.parse(stdout).streams).toEqual([
        { codec_name: "pcm_s16le", sample_rate: "16000", channels: 1 },
      ]);
      expect(Math.abs(audio.durationMs - (await probeMs(audio.path)))).toBeLessThan(5);
    } finally {
      await audio.dispose();
    }
    expect((await readdir(scratch)).filter((name) => name.startsWith("meetbot-audio-"))).toEqual([]);
  });

  it("calls a file without audio unreadable", async () => {
    const videoOnly = path.join(scratch, "video-only.mp4");
    await run("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "color=s=64x64:d=1",
      "-c:v",
      "libx264",
      videoOnly,
    ]);
    await expect(extractAudio(videoOnly, { tmpDir: scratch })).rejects.toMatchObject({
      code: "media_unreadable",
      retryable: false,
    });
  });

  it("names a file that is not media by its name, never by the server's directories", async () => {
    const notMedia = path.join(scratch, "not-media.mp4");
    await writeFile(notMedia, "this is not an MP4 file");
    const error = await extractAudio(notMedia, { tmpDir: scratch }).then(
      () => new Error("extracted audio from a file that is not media"),
      (e: unknown) => e as Error,
    );
    expect(error).toMatchObject({ code: "media_unreadable", retryable: false });
    expect(error.message).toContain("not-media.mp4");
    expect(error.message).not.toContain(scratch);
  });
});

describe("pocketsphinx engine failures", () => {
  const transcriber = () => pocketsphinxTranscriber({ tmpDir: scratch });

  it("refuses another language than English, for good", async () => {
    const error = await transcriber()
      .transcribe({ mediaPath: mp4Path, language: "de" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ code: "language_unsupported", retryable: false });
  });

  it("refuses a model it does not have", async () => {
    await expect(transcriber().transcribe({ mediaPath: mp4Path, model: "large-v3" })).rejects.toMatchObject({
      code: "model_unsupported",
    });
  });

  it("says so when the model is not installed", async () => {
    const engine = pocketsphinxTranscriber({ modelDir: path.join(scratch, "nowhere"), tmpDir: scratch });
    await expect(engine.transcribe({ mediaPath: mp4Path })).rejects.toMatchObject({
      code: "engine_unavailable",
    });
  });

  it("calls a file that is no media unreadable", async () => {
    const junk = path.join(scratch, "junk.mp4");
    await writeFile(junk, "this is not a recording");
    await expect(transcriber().transcribe({ mediaPath: junk })).rejects.toMatchObject({
      code: "media_unreadable",
      retryable: false,
    });
  });

  it("stops the decoder when aborted and rejects with the signal's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("lease lost");
    const result = transcriber()
      .transcribe({
        mediaPath: mp4Path,
        signal: controller.signal,
        onProgress: () => controller.abort(reason),
      })
      .catch((e: unknown) => e);
    expect(await result).toBe(reason);
    const decoders = await run("pgrep", ["-f", `pocketsphinx_continuous -infile ${scratch}`]).catch(() => ({
      stdout: "",
    }));
    expect(decoders.stdout.trim()).toBe("");
    expect((await readdir(scratch)).filter((name) => name.startsWith("meetbot-audio-"))).toEqual([]);
  });

  it("hears nothing in a silent recording", async () => {
    const silent = path.join(scratch, "silent.mp4");
    await run("ffmpeg", [
      ...["-v", "error", "-y", "-f", "lavfi", "-t", "2", "-i", "anullsrc=r=48000:cl=mono"],
      ...["-c:a", "aac", silent],
    ]);
    const result = await transcriber().transcribe({ mediaPath: silent });
    expect(result.words).toEqual([]);
    expect(result.text).toBe("");
    expect(Math.abs(result.durationMs - 2000)).toBeLessThan(100);
  });

  it("rejects at once when already aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("shutdown"));
    await expect(transcriber().transcribe({ mediaPath: mp4Path, signal: controller.signal })).rejects.toThrow(
      "shutdown",
    );
  });
});
