import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface ScriptLine {
  participantId: string;
  name: string;
  /** An ffmpeg flite voice pocketsphinx understands: rms or awb. */
  voice: "rms" | "awb";
  /** Plain words: the text goes into an ffmpeg filter argument, so no quotes or colons. */
  text: string;
}

/**
 * The scripted meeting the tests and benches read: a commitment and a decision after two opening
 * lines, which pocketsphinx hears word for word in these voices after AAC (measured; without the
 * opening lines "send" came out as "share"; "ship the new version" as "shoot a new version").
 * The mock meetings read the same lines (test/helpers/meeting-notes.ts).
 */
export const SCRIPTED_MEETING: readonly ScriptLine[] = [
  {
    participantId: "p-alice",
    name: "Alice Martin",
    voice: "rms",
    text: "Thanks everyone for joining the weekly planning meeting",
  },
  {
    participantId: "p-bob",
    name: "Bob Chen",
    voice: "awb",
    text: "The budget review is finished and the numbers look good",
  },
  { participantId: "p-alice", name: "Alice Martin", voice: "rms", text: "I will send the report tomorrow" },
  {
    participantId: "p-bob",
    name: "Bob Chen",
    voice: "awb",
    text: "We decided to move the meeting to Monday",
  },
];

export interface SpokenLine extends ScriptLine {
  /** Where the line's speech lies in the recording, in ms from its start. */
  startMs: number;
  endMs: number;
}

/**
 * A recording of people reading a script, made like the bot's: speech from ffmpeg's flite voices
 * at 48 kHz, silence before, between and after the lines, then H.264 + AAC in an MP4. Answers
 * where each line was placed: the ground truth for attribution.
 */
export async function makeSpokenMeeting(
  dir: string,
  lines: readonly ScriptLine[],
  options: { leadMs?: number; pauseMs?: number; noiseSeed?: number } = {},
): Promise<{ mp4Path: string; lines: SpokenLine[]; script: string }> {
  const leadMs = options.leadMs ?? 1_500;
  const pauseMs = options.pauseMs ?? 1_500;
  const placed: SpokenLine[] = [];
  const parts: string[] = [];
  let at = leadMs;
  for (const [i, line] of lines.entries()) {
    if (/['":\\]/.test(line.text))
      throw new Error(`script line ${i} has a character flite's filter argument cannot take`);
    const wav = path.join(dir, `line-${i}.wav`);
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      `flite=text='${line.text}':voice=${line.voice}`,
      "-ar",
      "48000",
      "-ac",
      "1",
      wav,
    ]);
    const durationMs = await probeMs(wav);
    placed.push({ ...line, startMs: at, endMs: at + durationMs });
    parts.push(wav);
    at += durationMs + pauseMs;
  }
  // Not digital zeros: a faint noise floor, as any microphone has. After pure zeros pocketsphinx
  // misheard the first words ("thanks everyone" as "sanchez three one"), measured.
  const silence = (ms: number) => [
    "-f",
    "lavfi",
    "-t",
    (ms / 1000).toFixed(3),
    "-i",
    `anoisesrc=r=48000:a=0.002:c=pink:seed=${options.noiseSeed ?? 7}`,
  ];
  const inputs = [...silence(leadMs)];
  for (const wav of parts) inputs.push("-i", wav, ...silence(pauseMs));
  const count = 1 + parts.length * 2;
  const concat = `${Array.from({ length: count }, (_, i) => `[${i}:a]`).join("")}concat=n=${count}:v=0:a=1[a]`;
  const mp4Path = path.join(dir, "meeting.mp4");
  await ffmpeg([
    ...inputs,
    ...["-f", "lavfi", "-i", "color=c=0x202124:s=320x240:r=10"],
    ...["-filter_complex", concat, "-map", "[a]", "-map", `${count}:v`, "-shortest"],
    ...[
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-b:a",
      "128k",
      "-ar",
      "48000",
    ],
    ...["-movflags", "+faststart", mp4Path],
  ]);
  return { mp4Path, lines: placed, script: lines.map((line) => line.text).join(" ") };
}

async function ffmpeg(args: string[]): Promise<void> {
  await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-y", ...args]);
}

/** The duration of a file's first audio stream, in ms. */
export async function probeMs(file: string): Promise<number> {
  const { stdout } = await run("ffprobe", [
    ...["-v", "error", "-select_streams", "a:0", "-show_entries", "stream=duration"],
    ...["-of", "default=noprint_wrappers=1:nokey=1", file],
  ]);
  return Math.round(Number.parseFloat(stdout.trim()) * 1000);
}
