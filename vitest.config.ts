import { configDefaults, defineConfig } from "vitest/config";
import { BUSY_E2E_FILES, FileOrder } from "./test/helpers/file-order.js";

/**
 * MEETBOT_E2E_FILES narrows the end-to-end files to a part of them, for `make test`'s two
 * end-to-end runs: "busy" only the files of BUSY_E2E_FILES, "rest" all but those. Unset: all.
 */
function filesOf(part: string | undefined): { include: string[]; exclude: string[] } {
  const busy = BUSY_E2E_FILES.map((name) => `test/e2e/${name}.test.ts`);
  if (part === undefined || part === "") return { include: ["test/**/*.test.ts"], exclude: [] };
  if (part === "busy") return { include: busy, exclude: [] };
  if (part === "rest") return { include: ["test/**/*.test.ts"], exclude: busy };
  throw new Error(`MEETBOT_E2E_FILES must be "busy" or "rest", not ${JSON.stringify(part)}`);
}

const files = filesOf(process.env.MEETBOT_E2E_FILES);

export default defineConfig({
  test: {
    include: files.include,
    exclude: [...configDefaults.exclude, ...files.exclude],
    setupFiles: ["test/helpers/each-file.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits on a condition; 1 s (vitest's default) is less than a page takes to render
    // on a loaded 2-core machine (a dashboard page's transcript once took longer). A poll still
    // returns as soon as its condition holds.
    expect: { poll: { timeout: 10_000 } },
    // Which files start first, and which wait for them (test/helpers/file-order.ts).
    sequence: { sequencer: FileOrder },
  },
});
