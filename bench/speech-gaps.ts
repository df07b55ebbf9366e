/**
 * Dropouts in recorded speech, shared by the benches that measure them (meeting-notes.ts,
 * audio-only.ts): silent gaps inside a file's sound beyond those the clean clips of the same
 * script lines have. On a busy machine a bot's audio path drops blocks of speech; each is a gap
 * of 40-400 ms where the clip has none.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { escapeLavfiValue, voiceOf } from "../fixtures/host/speech.js";
import { probeMs } from "../test/helpers/spoken-meeting.js";

const run = promisify(execFile);

/**
 * Silent gaps inside a file's sound, neither at its start nor at its end: 40 ms at least (shorter
 * ones are between syllables), under 400 ms (the script's pauses between lines are longer).
 */
export async function innerGaps(file: string): Promise<number> {
  const { stderr } = await run("ffmpeg", [
    ...["-hide_banner", "-nostdin", "-i", file, "-af", "silencedetect=n=-45dB:d=0.04", "-f", "null", "-"],
  ]);
  const durationSeconds = (await probeMs(file)) / 1000;
  const gaps = [...stderr.matchAll(/silence_end: ([\d.]+) \| silence_duration: ([\d.]+)/g)].map((m) => ({
    end: Number(m[1]),
    length: Number(m[2]),
  }));
  return gaps.filter(
    (gap) => gap.end - gap.length > 0.01 && gap.end < durationSeconds - 0.01 && gap.length < 0.4,
  ).length;
}

/** The inner gaps of script lines as the mock renders them (ffmpeg's flite, each reader's voice). */
export async function cleanScriptGaps(
  dir: string,
  script: ReadonlyArray<{ participant: string; text: string }>,
): Promise<number> {
  const readers = [...new Set(script.map((line) => line.participant))];
  let gaps = 0;
  for (const [i, line] of script.entries()) {
    const text = path.join(dir, `line-${i}.txt`);
    const wav = path.join(dir, `line-${i}.wav`);
    await writeFile(text, line.text);
    const voice = voiceOf(readers.indexOf(line.participant));
    await run("ffmpeg", [
      ...["-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi"],
      ...["-i", `flite=textfile=${escapeLavfiValue(text)}:voice=${voice}`, "-ar", "48000", "-ac", "1", wav],
    ]);
    gaps += await innerGaps(wav);
  }
  return gaps;
}
