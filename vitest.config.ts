import { defineConfig } from "vitest/config";
import { FileOrder } from "./test/helpers/file-order.js";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/helpers/each-file.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits on a condition; 1 s (vitest's default) is less than a page takes to render
    // on a loaded 2-core machine (a dashboard page's transcript once took longer). A poll still
    // returns as soon as its condition holds.
    expect: { poll: { timeout: 10_000 } },
    // An assertion's message shows the values it compared (chai cuts them at 40 characters by
    // default: "expected [ [ 'popup', …(1) ], …(3) ]"), so the summary's line for a test that
    // passed only on its retry says what the first try saw.
    chaiConfig: { truncateThreshold: 300 },
    // Which files start first, and which wait for them (test/helpers/file-order.ts).
    sequence: { sequencer: FileOrder },
  },
});
