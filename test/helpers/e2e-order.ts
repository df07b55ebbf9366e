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
 */
const HEARING_NEXT = ["meeting-notes", "bot-voice", "live-transcript", "agent-stream"];

const nameOf = (spec: TestSpecification) => basename(spec.moduleId).replace(/\.test\.ts$/, "");

/**
 * The order files start in: the busiest end-to-end files, then those that hear a meeting, then
 * the rest as vitest orders them (the slowest first when it knows them, else the largest). Only
 * the end-to-end run holds the named files; the other runs keep vitest's order.
 */
export class E2eOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const pick = (names: readonly string[]) =>
      names.flatMap((name) => {
        const index = rest.findIndex((spec) => nameOf(spec) === name);
        return index < 0 ? [] : rest.splice(index, 1);
      });
    const busiest = pick(BUSIEST_FIRST);
    const hearing = pick(HEARING_NEXT);
    return [...busiest, ...hearing, ...rest];
  }
}
