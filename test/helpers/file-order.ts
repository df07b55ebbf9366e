import { basename } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The end-to-end files with the most bots at once (condition-based, indifferent to a busy
 * machine): they start first.
 */
const BUSIEST_FIRST = [
  "platform-matrix",
  "signed-in-bots",
  "ui-drift",
  "zoom-mock-page",
  "teams-mock-page",
  "meet-mock-page",
  "live-meeting",
];

/**
 * The files that check the words a recording or the meeting heard: a starved bot page drops
 * sound, and the recognizer mishears what is left. They start once the busiest files are under
 * way or done, beside lighter ones (a clean clone ran them, by file size, beside the matrix: two
 * of three runs had a notes call pass only on its retry, word accuracy 0.78-0.81 against 0.85).
 * Longest first (voice 56 s, notes 34, agent 33, live transcript 18): the agent file, started
 * last, had run on alone for 25 s.
 */
const HEARING_NEXT = ["bot-voice", "meeting-notes", "agent-stream", "live-transcript"];

/**
 * An end-to-end file of one long test that mostly waits (a call paused and resumed on a schedule):
 * started before the short files, it leaves those to fill the end. Not the demo, though it is
 * one too: it checks the notes' words, and started beside the dashboard files its recording was
 * misheard (2026-11-29); last, beside short files, it hears well.
 */
const LONG_WAITS = ["recording-pause"];

/**
 * Integration files that are short but long-running: their time goes to real-time work (ffmpeg
 * recording at its own pace, servers spawned and restarted, a watchdog's intervals), so they wait
 * more than they compute. Without vitest's record of past durations (a clean clone) it orders by
 * file size, and one of these started last kept the first run going 12 s after the rest had
 * finished (2026-11-29).
 */
const SLOW_SMALL_FIRST = ["runner-segment-upload", "server-transcripts", "server-config", "server-watchdog"];

const nameOf = (spec: TestSpecification) => basename(spec.moduleId).replace(/\.test\.ts$/, "");

/**
 * The order files start in: the named files first, in the order above, then the rest as vitest
 * orders them (the slowest first when it knows them, else the largest). Each run holds only some
 * of the named files (the end-to-end run the first three lists, the others the last).
 */
export class FileOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const pick = (names: readonly string[]) =>
      names.flatMap((name) => {
        const index = rest.findIndex((spec) => nameOf(spec) === name);
        return index < 0 ? [] : rest.splice(index, 1);
      });
    const first = pick([...BUSIEST_FIRST, ...HEARING_NEXT, ...LONG_WAITS, ...SLOW_SMALL_FIRST]);
    return [...first, ...rest];
  }
}
