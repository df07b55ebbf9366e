import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { findImportCycles } from "../../scripts/check-import-cycles.mjs";

const repo = path.resolve(import.meta.dirname, "../..");
const script = path.join(repo, "scripts/check-import-cycles.mjs");

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A throwaway tree: relative path → file text. */
function tree(files: Record<string, string>): string {
  dir = mkdtempSync(path.join(tmpdir(), "meetbot-cycles-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe("import cycle check", () => {
  it("reports a cycle among .js specifiers that name .ts files, type-only imports included", () => {
    const root = tree({
      "src/a.ts": 'import { b } from "./b.js";\nexport const a = b;\n',
      "src/b.ts": 'import type { C } from "./lib/c.js";\nexport const b = 1 as C;\n',
      "src/lib/c.ts": 'export type C = number;\nexport { a } from "../a.js";\n',
      "src/d.ts": 'import { a } from "./a.js";\nexport const d = a;\n',
    });
    expect(findImportCycles(root)).toEqual([["src/a.ts", "src/b.ts", "src/lib/c.ts", "src/a.ts"]]);
  });

  it("reports each separate cycle once, across the walked dirs", () => {
    const root = tree({
      "src/x.ts": 'import "../platforms/y.js";\n',
      "platforms/y.ts": 'import "../src/x.js";\n',
      "fixtures/p.ts": 'const q = await import("./q.js");\nexport { q };\n',
      "fixtures/q.ts": 'import { q } from "./p.js";\nexport default q;\n',
    });
    const cycles = findImportCycles(root);
    expect(cycles).toHaveLength(2);
    expect(cycles).toContainEqual(["platforms/y.ts", "src/x.ts", "platforms/y.ts"]);
    expect(cycles).toContainEqual(["fixtures/p.ts", "fixtures/q.ts", "fixtures/p.ts"]);
  });

  it("ignores imports in comments and of packages, and finds nothing in a tree without cycles", () => {
    const root = tree({
      "src/a.ts": '// import { b } from "./b.js";\nimport { z } from "zod";\nexport const a = z;\n',
      "src/b.ts": 'import { a } from "./a.js";\nexport const b = a;\n',
    });
    expect(findImportCycles(root)).toEqual([]);
  });

  it("the repository has no import cycle", () => {
    expect(findImportCycles(repo)).toEqual([]);
  });

  it("as a command: exit 1 naming the cycle, exit 0 on this repository", async () => {
    const run = promisify(execFile);
    const root = tree({ "src/a.ts": 'import "./b.js";\n', "src/b.ts": 'import "./a.js";\n' });
    await expect(run(process.execPath, [script, root])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("import cycle: src/a.ts -> src/b.ts -> src/a.ts"),
    });
    await expect(run(process.execPath, [script])).resolves.toMatchObject({ stderr: "" });
  });
});
