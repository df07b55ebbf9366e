/**
 * Dropouts in recorded speech, shared by the benches that measure them (meeting-notes.ts,
 * audio-only.ts). On a busy machine a bot's audio path drops blocks of speech: each is a silent
 * gap (under -45 dB) of 40-400 ms inside a line, where the clean clip of the same line has none.
 *
 * Gaps are matched by where they lie, not counted: a clip's own quiet stretches come out a few
 * milliseconds longer or shorter through the recording's path (resampling, AAC), so one of 35 ms in
 * a clean clip crosses a 40 ms threshold in some recordings and not in others (measured: a lone
 * bot on an idle machine had "a dropout" in the first line of one run in two). The recording's
 * lines are its stretches of sound between the script's pauses (400 ms or more); a gap in line i
 * is the clip's own when the clean clip of line i has a quiet stretch of 20 ms or more within
 * 100 ms of the same place after the line's first sound.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { escapeLavfiValue, voiceOf } from "../fixtures/host/speech.js";
import { probeMs } from "../test/helpers/spoken-meeting.js";

const run = promisify(execFile);

/** A dropout is at least this long (shorter silences lie between syllables). */
const DROPOUT_MIN_S = 0.04;
/** The script's pauses between lines are longer than this; a dropout is shorter. */
const LINE_PAUSE_S = 0.4;
/** A stretch of sound shorter than this is not a line (the shortest word is longer). */
const LINE_MIN_S = 0.05;
/** A clip's quiet stretch this long or longer may come out as a gap in a recording. */
const CLIP_QUIET_MIN_S = 0.02;
/** How far a recording's gap may lie from the clip's quiet stretch it stands for. */
const SAME_PLACE_S = 0.1;

export interface Silence {
  start: number;
  end: number;
}

/** A file's silences (under -45 dB, `minSeconds` or longer) and its duration, in seconds. */
async function silencesOf(
  file: string,
  minSeconds: number,
): Promise<{ silences: Silence[]; duration: number }> {
  const filter = `silencedetect=n=-45dB:d=${minSeconds}`;
  const { stderr } = await run("ffmpeg", [
    "-hide_banner",
    "-nostdin",
    "-i",
    file,
    "-af",
    filter,
    "-f",
    "null",
    "-",
  ]);
  const duration = (await probeMs(file)) / 1000;
  const silences: Silence[] = [];
  for (const line of stderr.split("\n")) {
    const start = /silence_start: (-?[\d.]+)/.exec(line);
    if (start) silences.push({ start: Math.max(0, Number(start[1])), end: duration });
    const end = /silence_end: ([\d.]+)/.exec(line);
    const last = silences.at(-1);
    if (end && last) last.end = Number(end[1]);
  }
  return { silences, duration };
}

/** A line as recorded or rendered: where its sound starts and ends, and the gaps inside it. */
export interface SpokenLine {
  start: number;
  end: number;
  gaps: Silence[];
}

/**
 * The stretches of sound between pauses of LINE_PAUSE_S or more (and the file's ends), each with
 * the shorter silences inside it: the lines of a recorded script, or the one line of a clip.
 */
export function spokenLines(silences: readonly Silence[], duration: number): SpokenLine[] {
  const lines: SpokenLine[] = [];
  let start = 0;
  const pauses = [
    ...silences.filter(
      (s) => s.end - s.start >= LINE_PAUSE_S || s.start <= 0.001 || s.end >= duration - 0.001,
    ),
    { start: duration, end: duration },
  ];
  for (const pause of pauses) {
    // A sliver of sound is no line: the file's last silence may end a millisecond before its end.
    if (pause.start - start >= LINE_MIN_S)
      lines.push({
        start,
        end: pause.start,
        gaps: silences.filter((s) => s.start > start && s.end < pause.start),
      });
    start = Math.max(start, pause.end);
  }
  return lines;
}

/** A dropout: in recorded line `line`, `at` seconds after its first sound, `length` seconds. */
export interface Dropout {
  line: number;
  at: number;
  length: number;
}

/**
 * Dropouts in a recording of the script: gaps of DROPOUT_MIN_S or more inside a recorded line
 * that its clean line has not at the same place, plus one for each line more or fewer than the
 * script has (a line cut in two by a long dropout, or lost; `at` is then NaN).
 */
export function dropoutsIn(recorded: readonly SpokenLine[], clean: readonly SpokenLine[]): Dropout[] {
  const dropouts: Dropout[] = [];
  for (let extra = Math.abs(recorded.length - clean.length); extra > 0; extra--)
    dropouts.push({ line: Math.min(recorded.length, clean.length), at: Number.NaN, length: Number.NaN });
  for (const [i, line] of recorded.entries()) {
    const clip = clean[i];
    for (const gap of line.gaps) {
      const length = gap.end - gap.start;
      if (length < DROPOUT_MIN_S) continue;
      const at = gap.start - line.start;
      const own = clip?.gaps.some((quiet) => Math.abs(quiet.start - clip.start - at) <= SAME_PLACE_S);
      if (!own) dropouts.push({ line: i, at, length });
    }
  }
  return dropouts;
}

/** The script's lines as the mock renders them (ffmpeg's flite, each reader's voice), clean. */
export async function cleanScriptLines(
  dir: string,
  script: ReadonlyArray<{ participant: string; text: string }>,
): Promise<SpokenLine[]> {
  const readers = [...new Set(script.map((line) => line.participant))];
  const lines: SpokenLine[] = [];
  for (const [i, line] of script.entries()) {
    const text = path.join(dir, `line-${i}.txt`);
    const wav = path.join(dir, `line-${i}.wav`);
    await writeFile(text, line.text);
    const voice = voiceOf(readers.indexOf(line.participant));
    await run("ffmpeg", [
      ...["-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi"],
      ...["-i", `flite=textfile=${escapeLavfiValue(text)}:voice=${voice}`, "-ar", "48000", "-ac", "1", wav],
    ]);
    const { silences, duration } = await silencesOf(wav, CLIP_QUIET_MIN_S);
    const spoken = spokenLines(silences, duration);
    if (spoken.length !== 1)
      throw new Error(`clean line ${i} has ${spoken.length} stretches of sound, not 1`);
    lines.push(spoken[0] as SpokenLine);
  }
  return lines;
}

/** Dropouts in a recording of the script whose clean lines are `clean`. */
export async function recordedDropouts(file: string, clean: readonly SpokenLine[]): Promise<number> {
  const { silences, duration } = await silencesOf(file, DROPOUT_MIN_S);
  const dropouts = dropoutsIn(spokenLines(silences, duration), clean);
  // BENCH_SHOW_GAPS=1: where each dropout lies, to listen to it or compare it with the clip.
  if (process.env.BENCH_SHOW_GAPS === "1" && dropouts.length > 0)
    console.log(
      `  ${file}: ${dropouts.map((d) => `line ${d.line} +${d.at.toFixed(3)} s ${Math.round(d.length * 1000)} ms`).join(", ")}`,
    );
  return dropouts.length;
}
