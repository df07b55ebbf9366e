import { spawn } from "node:child_process";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendFragments } from "../../src/runner/mp4-append.js";

const run = promisify(execFile);

/**
 * A resumed recording appended to the file it paused in (src/runner/mp4-append.ts), with real
 * ffmpeg: fragmented MP4 made as the recorder makes it (H.264 + AAC, fragments of a second), the
 * later parts read from ffmpeg's pipe as the recorder reads them.
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-append-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The recorder's output options, on a test picture and tone of `seconds` (`size`: the picture's). */
const encode = (seconds: number, size = "320x240") => [
  ...["-hide_banner", "-loglevel", "error", "-y", "-copyts"],
  ...["-t", String(seconds), "-f", "lavfi", "-i", `testsrc=size=${size}:rate=25`],
  ...["-t", String(seconds), "-f", "lavfi", "-i", "sine=f=440"],
  ...["-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency"],
  ...["-pix_fmt", "yuv420p", "-g", "50", "-c:a", "aac", "-b:a", "128k"],
  ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "1000000"],
  ...["-flush_packets", "1"],
];

/** Pipes a part of `seconds` into `target` at `startMs`; answers what became of it. */
function appendPart(target: string, seconds: number, startMs: number, size?: string) {
  const ffmpeg = spawn("ffmpeg", [...encode(seconds, size), "-f", "mp4", "pipe:1"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let fellBack = false;
  const fallback = `${target}.part.mp4`;
  return appendFragments(ffmpeg.stdout, target, Promise.resolve(startMs), fallback, () => {
    fellBack = true;
  }).then((outcome) => ({ outcome, fellBack, fallback }));
}

async function probe(file: string) {
  const { stdout } = await run("ffprobe", [
    ...["-v", "error", "-show_entries", "format=duration:packet=stream_index,pts_time", "-of", "json", file],
  ]);
  const json = JSON.parse(stdout) as {
    format: { duration: string };
    packets: { stream_index: number; pts_time: string }[];
  };
  const times = (stream: number) =>
    json.packets.filter((p) => p.stream_index === stream).map((p) => Number(p.pts_time));
  return { durationS: Number(json.format.duration), video: times(0), audio: times(1) };
}

describe("appending a resumed recording", () => {
  it("puts each part's fragments where it belongs on the recording's clock: one movie, decodable", async () => {
    const file = path.join(dir, "recording.mp4");
    await run("ffmpeg", [...encode(3), file]);
    expect(await appendPart(file, 2, 3_500)).toMatchObject({ outcome: "appended", fellBack: false });
    expect(await appendPart(file, 2, 6_000)).toMatchObject({ outcome: "appended", fellBack: false });

    const { durationS, video, audio } = await probe(file);
    expect(durationS).toBeCloseTo(8, 1);
    for (const times of [video, audio]) {
      // Increasing, and nothing between a part's end and the next one's place.
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(times.filter((t) => t > 3.1 && t < 3.45)).toEqual([]);
      expect(times.filter((t) => t > 5.55 && t < 5.95)).toEqual([]);
    }
    expect(Math.min(...video.filter((t) => t > 3.1))).toBeCloseTo(3.5, 2);
    expect(Math.min(...video.filter((t) => t > 5.5))).toBeCloseTo(6, 2);
    // Every frame decodes (a broken box or timestamp would be an error here).
    await run("ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]);
    // The fragments are numbered on from the file's (each moof's mfhd), as one movie's are.
    const bytes = await readFile(file);
    const sequences: number[] = [];
    for (let at = 0; at + 8 <= bytes.length; at += bytes.readUInt32BE(at)) {
      if (bytes.toString("latin1", at + 4, at + 8) === "moof") sequences.push(bytes.readUInt32BE(at + 20));
    }
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
  });

  it("sends a part that is another movie to a file of its own, leaving the recording as it was", async () => {
    const file = path.join(dir, "other.mp4");
    await run("ffmpeg", [...encode(2), file]);
    const before = (await stat(file)).size;
    const { outcome, fellBack, fallback } = await appendPart(file, 1, 2_500, "640x360");
    expect({ outcome, fellBack }).toEqual({ outcome: "fallback", fellBack: true });
    expect((await stat(file)).size).toBe(before);
    expect((await probe(fallback)).durationS).toBeCloseTo(1, 1);
  });
});
