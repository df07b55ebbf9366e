/**
 * The embedded transcription engine on a scripted meeting of about a minute: two people (ffmpeg's
 * flite voices rms and awb) read alternate lines, recorded as H.264 + AAC like a bot's recording.
 * Reports the real-time factor (wall time of the whole engine, audio extraction included, and the
 * decoder's CPU time, each over the audio's duration), the decoder's peak memory, word accuracy
 * against the script, and attribution: the share of words given to the person who read them, with
 * a speaker timeline lagging like a platform's indicator (on 200 ms late, off 400 ms late).
 *
 * Runs on its own (`node --import tsx bench/transcription.ts`). Goal: a real-time
 * factor of at most 0.5 on this 2-core machine.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { attributeSpeakers, extractAudio, wordAccuracy } from "../src/intelligence/index.js";
import { DEFAULT_MODEL_DIR, pocketsphinxTranscriber } from "../src/intelligence/pocketsphinx.js";
import { makeSpokenMeeting, type ScriptLine } from "../test/helpers/spoken-meeting.js";

const run = promisify(execFile);

const alice = { participantId: "p-alice", name: "Alice Martin", voice: "rms" } as const;
const bob = { participantId: "p-bob", name: "Bob Chen", voice: "awb" } as const;
const SCRIPT: ScriptLine[] = [
  { ...alice, text: "Good morning everyone. Thanks for joining the weekly planning meeting." },
  { ...bob, text: "The budget review is finished and the numbers look good." },
  { ...alice, text: "First we should look at the release schedule for the mobile application." },
  { ...bob, text: "The testing team found three problems in the payment screen last week." },
  { ...alice, text: "I will send the report to the whole team tomorrow." },
  { ...bob, text: "Can you check the server logs before the end of the day." },
  { ...alice, text: "We decided to ship the new version on Friday." },
  { ...bob, text: "The marketing team needs the final screenshots by next week." },
  { ...alice, text: "We need to update the documentation before the release." },
  { ...bob, text: "The customer asked about the export feature again." },
  { ...alice, text: "I think we can finish it in two weeks if nothing else comes up." },
  { ...bob, text: "The design team will share the new mockups on Monday." },
  { ...alice, text: "The support queue is shorter than last month." },
];

export interface TranscriptionFigures {
  audioSeconds: number;
  wallRealTimeFactor: number;
  cpuRealTimeFactor: number;
  peakRssMb: number;
  wordAccuracy: number;
  attributedRight: number;
}

export async function measureTranscription(): Promise<TranscriptionFigures> {
  const dir = await mkdtemp(path.join(tmpdir(), "meetbot-bench-stt-"));
  try {
    const meeting = await makeSpokenMeeting(dir, SCRIPT, { pauseMs: 800 });
    const started = performance.now();
    const recognition = await pocketsphinxTranscriber({ tmpDir: dir }).transcribe({
      mediaPath: meeting.mp4Path,
    });
    const wallSeconds = (performance.now() - started) / 1000;
    const audioSeconds = recognition.durationMs / 1000;

    // The decoder's own CPU time and peak memory: the same command under GNU time.
    const audio = await extractAudio(meeting.mp4Path, { tmpDir: dir });
    const { stderr } = await run("/usr/bin/time", [
      ...["-f", "%U %S %M", "pocketsphinx_continuous", "-infile", audio.path],
      ...["-hmm", path.join(DEFAULT_MODEL_DIR, "en-us"), "-lm", path.join(DEFAULT_MODEL_DIR, "en-us.lm.bin")],
      ...["-dict", path.join(DEFAULT_MODEL_DIR, "cmudict-en-us.dict"), "-logfn", "/dev/null", "-time", "yes"],
    ]);
    await audio.dispose();
    const [user, system, maxRssKb] = stderr.trim().split("\n").at(-1)!.split(" ").map(Number) as [
      number,
      number,
      number,
    ];

    const turns = meeting.lines.map((line) => ({
      ...line,
      startMs: line.startMs + 200,
      endMs: line.endMs + 400,
    }));
    const utterances = attributeSpeakers(recognition.words, turns);
    const words = utterances.flatMap((u) =>
      u.words.map((word) => ({ ...word, speaker: u.speaker?.participantId })),
    );
    const right = words.filter((word) => {
      const middle = (word.startMs + word.endMs) / 2;
      const line = meeting.lines.find((l) => middle >= l.startMs - 300 && middle <= l.endMs + 300);
      return line?.participantId === word.speaker;
    }).length;

    return {
      audioSeconds,
      wallRealTimeFactor: wallSeconds / audioSeconds,
      cpuRealTimeFactor: (user + system) / audioSeconds,
      peakRssMb: maxRssKb / 1024,
      wordAccuracy: wordAccuracy(meeting.script, recognition.text),
      attributedRight: words.length ? right / words.length : 0,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const f = await measureTranscription();
  console.log(
    [
      `embedded transcription (pocketsphinx) on ${f.audioSeconds.toFixed(1)} s of scripted speech:`,
      `  real-time factor: ${f.wallRealTimeFactor.toFixed(2)} wall (extraction included), ${f.cpuRealTimeFactor.toFixed(2)} decoder CPU (goal <= 0.5)`,
      `  decoder peak RSS: ${f.peakRssMb.toFixed(0)} MB`,
      `  word accuracy: ${f.wordAccuracy.toFixed(3)}; words attributed to their reader: ${(f.attributedRight * 100).toFixed(1)} %`,
    ].join("\n"),
  );
}
