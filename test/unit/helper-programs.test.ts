import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * Helper programs start one way: through src/media/ (the allowlisted environment, lifetimes tied
 * to their parent, output tails), or, for the runner itself, the local launcher. Anywhere else a
 * value import of node:child_process is a program started some other way; a type import is not.
 */
const ALLOWED = [/^src\/media\//, /^src\/server\/launcher\/local-process\.ts$/];

describe("helper programs", () => {
  it("are started only from src/media/ and the local launcher", () => {
    const files = execFileSync("git", ["ls-files", "--", "src", "platforms"], { encoding: "utf8" })
      .split("\n")
      .filter((file) => /\.tsx?$/.test(file) && !ALLOWED.some((allowed) => allowed.test(file)));
    expect(files.length).toBeGreaterThan(50);
    const starting = files.filter((file) =>
      /^import (?!type )[^;]*from "node:child_process"/m.test(readFileSync(file, "utf8")),
    );
    expect(starting).toEqual([]);
  });

  it("the server and the intelligence engines never import the runner", () => {
    const files = execFileSync("git", ["ls-files", "--", "src/server", "src/intelligence", "src/notes"], {
      encoding: "utf8",
    })
      .split("\n")
      .filter((file) => /\.tsx?$/.test(file));
    const importing = files.filter((file) => /from "(\.\.\/)+runner\//.test(readFileSync(file, "utf8")));
    expect(importing).toEqual([]);
  });
});
