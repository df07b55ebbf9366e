import { defineConfig } from "vitest/config";
import { E2E_TWO_AT_A_TIME } from "./test/helpers/file-order.js";
import { sharedTestOptions } from "./vitest.config.js";

const twoAtATime = E2E_TWO_AT_A_TIME.map((name) => `test/e2e/${name}.test.ts`);

/**
 * The end-to-end run of `make test`, in two groups one after the other: first the files with the
 * most bots and the files that check what a bot heard, two at a time (three at a time starved
 * those: a notes call misheard, a leave not taken in time); then the rest, which mostly wait on
 * scripted meetings and timeouts, three at a time. Both run up to six tests of a file at once.
 */
export default defineConfig({
  test: {
    ...sharedTestOptions,
    projects: [
      {
        extends: true,
        test: {
          name: "e2e",
          include: twoAtATime,
          maxWorkers: 2,
          maxConcurrency: 6,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "e2e-waiting",
          include: ["test/e2e/**/*.test.ts"],
          exclude: twoAtATime,
          maxWorkers: 3,
          maxConcurrency: 6,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
