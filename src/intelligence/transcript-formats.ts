import type { Utterance } from "./types.js";

/**
 * A transcript as text: plain lines, SubRip (SRT) and WebVTT subtitles, for
 * GET /v1/transcripts/{bot_id}?format=… (JSON is the transcript object itself).
 * Pure functions of the utterances; an utterance whose text is blank is left out of every format.
 */

export const TRANSCRIPT_FORMATS = ["json", "txt", "srt", "vtt"] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];
export type TextTranscriptFormat = Exclude<TranscriptFormat, "json">;

export const TRANSCRIPT_CONTENT_TYPES = {
  txt: "text/plain; charset=utf-8",
  srt: "application/x-subrip; charset=utf-8",
  vtt: "text/vtt; charset=utf-8",
} as const satisfies Record<TextTranscriptFormat, string>;

/** A cue is split once it would run longer than this (subtitle guides keep cues to about 7 s)… */
export const MAX_CUE_MS = 7_000;
/** …or hold more characters than this (two subtitle lines of about 40). */
export const MAX_CUE_CHARS = 80;
/** The shortest a cue is shown, so a one-word "yes" (or a zero-length word) can still be read. */
export const MIN_CUE_MS = 500;

export function renderTranscript(format: TextTranscriptFormat, utterances: readonly Utterance[]): string {
  switch (format) {
    case "txt":
      return toPlainText(utterances);
    case "srt":
      return toSrt(utterances);
    case "vtt":
      return toWebVtt(utterances);
  }
}

/** `[mm:ss] Name: text`, one line per utterance (`[h:mm:ss]` from the first hour on). */
export function toPlainText(utterances: readonly Utterance[]): string {
  return utterances
    .filter((utterance) => oneLine(utterance.text) !== "")
    .map(
      (utterance) =>
        `[${clockTime(utterance.startMs)}] ${speakerLabel(utterance)}: ${oneLine(utterance.text)}\n`,
    )
    .join("");
}

/**
 * SubRip: numbered cues, `HH:MM:SS,mmm` times, the text after `Name: ` (no prefix for nobody known).
 * SubRip has no escapes, so an arrow (`-->`, `--->`, …) in a name or in the words becomes `->`:
 * a reader that takes any line with `-->` for a cue's timing could otherwise be led astray.
 */
export function toSrt(utterances: readonly Utterance[]): string {
  return subtitleCues(utterances)
    .map((cue, i) => {
      const line = noSrtArrow(cue.speaker === null ? cue.text : `${cue.speaker}: ${cue.text}`);
      return `${i + 1}\n${cueTime(cue.startMs, ",")} --> ${cueTime(cue.endMs, ",")}\n${line}\n`;
    })
    .join("\n");
}

/**
 * WebVTT: the speaker as a voice span (`<v Name>`), which players may show or style. `&`, `<` and
 * `>` are escaped everywhere, which also keeps a `-->` in someone's words from reading as a timing.
 */
export function toWebVtt(utterances: readonly Utterance[]): string {
  const cues = subtitleCues(utterances).map((cue) => {
    const voice = cue.speaker === null ? "" : `<v ${escapeVtt(cue.speaker)}>`;
    return `${cueTime(cue.startMs, ".")} --> ${cueTime(cue.endMs, ".")}\n${voice}${escapeVtt(cue.text)}\n`;
  });
  return ["WEBVTT\n", ...cues].join("\n");
}

/** 65_400 → "01:05"; 3_723_000 → "1:02:03": the time a line was said, to the second. */
export function clockTime(ms: number): string {
  const total = Math.floor(Math.max(0, ms) / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor(total / 60) % 60, total % 60];
  return h > 0 ? `${h}:${pad(m, 2)}:${pad(s, 2)}` : `${pad(m, 2)}:${pad(s, 2)}`;
}

/** The speaker's name as people read it: "Unknown speaker" when nobody is known. */
export function speakerLabel(utterance: Utterance): string {
  return speakerName(utterance) ?? "Unknown speaker";
}

/** The speaker's name, or null when nobody is known (a blank name tells nobody either). */
export function speakerName(utterance: Utterance): string | null {
  const name = utterance.speaker ? oneLine(utterance.speaker.name) : "";
  return name === "" ? null : name;
}

export interface SubtitleCue {
  startMs: number;
  endMs: number;
  speaker: string | null;
  text: string;
}

/**
 * The cues SRT and WebVTT share. Splitting, so subtitles stay readable: an utterance longer than
 * MAX_CUE_MS or MAX_CUE_CHARS is cut at word boundaries, greedily: words go into the current cue
 * until the next one would take it past either limit, then a new cue starts at that word's start
 * (a single word over the limits is a cue of its own). A split cue's text is its words' text and
 * its times are its first word's start and last word's end. An utterance that fits, or that has no
 * word times, stays one cue with the utterance's own text and times (a provider's punctuated text).
 *
 * Then the times are made playable, in order: cues are sorted by start; a cue starting at the
 * same millisecond as the one before starts 1 ms later; a cue lasts at least MIN_CUE_MS (which
 * also mends an end before its start) but always ends by the next cue's start, so none overlap.
 */
export function subtitleCues(utterances: readonly Utterance[]): SubtitleCue[] {
  const cues = utterances.flatMap(splitUtterance).sort((a, b) => a.startMs - b.startMs);
  for (let i = 1; i < cues.length; i++) {
    cues[i]!.startMs = Math.max(cues[i]!.startMs, cues[i - 1]!.startMs + 1);
  }
  cues.forEach((cue, i) => {
    const next = cues[i + 1];
    const end = Math.max(cue.endMs, cue.startMs + MIN_CUE_MS);
    cue.endMs = next ? Math.min(end, next.startMs) : end;
  });
  return cues;
}

function splitUtterance(utterance: Utterance): SubtitleCue[] {
  const speaker = speakerName(utterance);
  const text = oneLine(utterance.text);
  if (text === "") return [];
  const words = utterance.words
    .map((word) => ({ ...word, text: oneLine(word.text) }))
    .filter((word) => word.text !== "");
  const fits = utterance.endMs - utterance.startMs <= MAX_CUE_MS && text.length <= MAX_CUE_CHARS;
  if (fits || words.length === 0) {
    return [{ startMs: roundMs(utterance.startMs), endMs: roundMs(utterance.endMs), speaker, text }];
  }
  const groups: Array<typeof words> = [];
  let group: typeof words = [];
  let chars = 0;
  for (const word of words) {
    const first = group[0];
    const tooLong =
      first !== undefined &&
      (word.endMs - first.startMs > MAX_CUE_MS || chars + 1 + word.text.length > MAX_CUE_CHARS);
    if (tooLong) {
      groups.push(group);
      group = [];
    }
    chars = group.length === 0 ? word.text.length : chars + 1 + word.text.length;
    group.push(word);
  }
  groups.push(group);
  return groups.map((part) => ({
    startMs: roundMs(part[0]!.startMs),
    endMs: roundMs(Math.max(...part.map((word) => word.endMs))),
    speaker,
    text: part.map((word) => word.text).join(" "),
  }));
}

/** 3_723_004 → "01:02:03,004" (SRT) or "01:02:03.004" (WebVTT). */
function cueTime(ms: number, decimalMark: "," | "."): string {
  const total = roundMs(ms);
  const [h, m, s] = [
    Math.floor(total / 3_600_000),
    Math.floor(total / 60_000) % 60,
    Math.floor(total / 1000) % 60,
  ];
  return `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${decimalMark}${pad(total % 1000, 3)}`;
}

function roundMs(ms: number): number {
  return Math.max(0, Math.round(ms));
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/**
 * Unicode's explicit directional formatting characters: the embeddings and overrides (LRE, RLE,
 * PDF, LRO, RLO) and the isolates (LRI, RLI, FSI, PDI). A plain-text line has no markup to contain
 * them, so an override left open in a name (U+202E) would display everything after it on the line
 * reversed: the words the name's owner is said to have said, or someone else's. The marks (LRM,
 * RLM, ALM) stay: they change no run but their neighbours' direction.
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
/** Control characters (C0, DEL, C1) that are not whitespace: none belongs in a name or a line. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROLS = /[\u0000-\u0008\u000E-\u001F\u007F-\u0084\u0086-\u009F]/g;

/**
 * A name or a text as one line of plain text, for every format here (and the share page's
 * speaker label): line breaks would end a cue (or a txt line) early, so every run of whitespace
 * (U+2028, U+2029 and NEL included) becomes one space; bidi overrides, embeddings and isolates
 * and other control characters are dropped (BIDI_CONTROLS, CONTROLS).
 */
function oneLine(text: string): string {
  return text
    .replace(BIDI_CONTROLS, "")
    .replace(CONTROLS, "")
    .replace(/[\s\u0085]+/g, " ")
    .trim();
}

/** `-->` and longer arrows as `->` (see toSrt). */
function noSrtArrow(line: string): string {
  return line.replace(/-{2,}>/g, "->");
}

/** WebVTT cue text and voice names take character references for these three. */
function escapeVtt(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"));
}
