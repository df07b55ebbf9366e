import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallbackEventBody } from "../../src/core/index.js";
import { startPocketsphinx } from "../../src/runner/live-transcript/pocketsphinx.js";
import { SpeakerTimeline } from "../../src/runner/live-transcript/speakers.js";
import { type MediaEnvironment, startMediaEnvironment } from "../../src/runner/media-env.js";
import { eventually } from "../helpers/stack.js";
import { RecordingClock } from "../../src/runner/recording-clock.js";

/**
 * The pocketsphinx source on a real sound card without a browser: a bot's own PulseAudio, a
 * flite line played into its sink (as Chromium plays the meeting), the source's real reader and
 * decoder. The call "ends" (stop) while the line is still playing: the utterance under way
 * still gets its final.
 */
const run = promisify(execFile);
const LINE = "the quick brown fox jumps over the lazy dog and the meeting will start at ten tomorrow morning";
/**
 * The line three times over, one utterance of about 18 s: the stop must come while it still plays,
 * and a decoder on a loaded machine reports its first words seconds late.
 */
const PLAYED = [LINE, LINE, LINE].join(" and ");

let media: MediaEnvironment;
let dir: string;
beforeAll(async () => {
  // No display is needed: only the sound card.
  media = await startMediaEnvironment({ width: 640, height: 360, existingDisplay: ":unused" });
  dir = await mkdtemp(join(tmpdir(), "meetbot-live-source-"));
  await run("ffmpeg", [
    ...["-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi"],
    ...["-i", `flite=text='${PLAYED}':voice=rms`, "-ar", "48000", "-ac", "2", join(dir, "line.wav")],
  ]);
}, 60_000);
afterAll(async () => {
  await media?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function listen(opts: { language?: string } = {}) {
  const reported: Array<CallbackEventBody & { atMs: number }> = [];
  const warnings: string[] = [];
  const recordingStartedAt = new Date();
  const clock = () => Date.now() - recordingStartedAt.getTime();
  const speakers = new SpeakerTimeline(clock);
  const live = startPocketsphinx(
    {
      options: { source: "pocketsphinx", fallback: false, ...opts },
      clock: new RecordingClock(recordingStartedAt),
      speakers,
      report: (body) => reported.push({ ...body, atMs: clock() }),
      workDir: dir,
      log: pino(
        { level: "warn" },
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            warnings.push(String(JSON.parse(chunk.toString()).msg));
            done();
          },
        }),
      ),
    },
    media,
  );
  return { live, reported, warnings, speakers, clock };
}

describe("the pocketsphinx live source", () => {
  it(
    "hears a line as it plays, and settles it when stopped in the middle",
    { timeout: 150_000 },
    async () => {
      const { live, reported, warnings, speakers, clock } = listen();
      await eventually(
        async () => reported.find((e) => e.type === "transcript.source") ?? undefined,
        "active",
      );
      expect(reported.map((e) => e.type === "transcript.source" && e.data)).toEqual([
        { source: "pocketsphinx", state: "active" },
      ]);
      speakers.started("p-1", "Alice");
      const playedAtMs = clock();
      const player: ChildProcess = spawn("paplay", [join(dir, "line.wav")], {
        env: { ...process.env, ...media.pulseEnv },
        stdio: "ignore",
      });
      try {
        // Stop once the line is well under way (a few words are in a partial) but not over.
        await eventually(
          async () => reported.find((e) => e.type === "transcript.partial" && /brown fox/.test(e.data.text)),
          "a partial with the first words",
        );
        expect(player.exitCode).toBeNull();
        await live.stop();
      } finally {
        player.kill();
      }

      const transcript = reported.flatMap((e) =>
        e.type === "transcript.partial" || e.type === "transcript.final"
          ? [{ ...e.data, type: e.type, atMs: e.atMs }]
          : [],
      );
      const final = transcript.at(-1);
      expect(transcript.filter((e) => e.type === "transcript.final")).toHaveLength(1);
      expect(final?.type).toBe("transcript.final");
      expect(new Set(transcript.map((e) => e.utteranceId))).toEqual(new Set(["ps-1"]));
      // What was heard before the stop: the line's beginning, close to word for word.
      // It heard at least what the partial we waited for had, however the cut word came out.
      expect(final?.text).toMatch(/^the quick brown fox\b/);
      expect(final).toMatchObject({ speaker: { participantId: "p-1", name: "Alice" }, language: "en-US" });
      // On the recording's clock: the speech starts after it was played, before it was first reported.
      const first = transcript[0] as (typeof transcript)[number];
      expect(first.startMs).toBeGreaterThanOrEqual(playedAtMs);
      expect(first.startMs).toBeLessThan(first.atMs);
      expect(final?.endMs).toBeGreaterThan(first.endMs);
      // The final was decoded, not patched together from the last partial.
      expect(warnings).toEqual([]);
    },
  );

  it("reports another language unavailable and transcribes nothing", async () => {
    const { live, reported } = listen({ language: "de" });
    await live.stop();
    expect(reported.map(({ atMs: _, ...e }) => e)).toEqual([
      {
        type: "transcript.source",
        data: {
          source: "pocketsphinx",
          state: "unavailable",
          reason: 'pocketsphinx only knows US English (en, en-US), not "de"; no live transcript',
        },
      },
    ]);
  });
});
