import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * What the repository's files cite is in the repository: the specs and notes under docs/, never a
 * development machine's folders beside the clone, and comments say the rule itself rather than
 * name a tracker's issue (a clone has no tracker). The patterns are built from pieces so that this
 * file does not match itself.
 */
const FOLDERS = ["src", "platforms", "test", "fixtures", "docs", "scripts", "bench", "deploy"];
const OUTSIDE: Array<[string, RegExp]> = [
  ["the shared folder beside the clone", new RegExp(["shared", "(notes|spec)", ""].join("/"))],
  ["a development machine's folder", new RegExp(`/${"work"}/(main|shared|wt-)`)],
  ["the design document outside docs/", new RegExp(`(?<!docs/)${"DESIGN"}\\.md`)],
  ["a tracker's issue number", new RegExp(`\\b[Ii]${"ssue"} \\d+`)],
];

function trackedFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z", "--", ...FOLDERS, "README.md"], { encoding: "utf8" });
  return listed.split("\0").filter((file) => /\.(ts|tsx|js|mjs|md|html|css|json|ya?ml|sh)$/.test(file));
}

describe("the repository's references", () => {
  it("point inside the repository", () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(100);
    const found: string[] = [];
    for (const file of files) {
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, index) => {
          for (const [what, pattern] of OUTSIDE) {
            if (pattern.test(line)) found.push(`${file}:${index + 1}: ${what}: ${line.trim().slice(0, 120)}`);
          }
        });
    }
    expect(found).toEqual([]);
  });

  it("the specs and notes the code cites are in docs/", () => {
    for (const file of [
      "docs/spec/meeting-bot-service.md",
      "docs/spec/meeting-notes-interface.md",
      "docs/design.md",
      "docs/notes/platform-hooks.md",
      "docs/notes/live-meeting.md",
      "docs/notes/getting-in-2026.md",
      "docs/notes/media-stack-measured.md",
      "docs/notes/meeting-content.md",
    ]) {
      expect(readFileSync(file, "utf8").length, file).toBeGreaterThan(1000);
    }
  });
});

describe("the README's Layout", () => {
  /** The paths the Layout block names at the start of its lines (`platforms/meet|zoom|teams/` is three). */
  function layoutPaths(): string[] {
    const readme = readFileSync("README.md", "utf8");
    const block = /## Layout\n\n```\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    return block
      .split("\n")
      .map((line) => /^(\S+)/.exec(line)?.[1])
      .filter((first): first is string => first !== undefined)
      .flatMap((first) => {
        const alternatives = /^(.*\/)([\w-]+(?:\|[\w-]+)+)(\/)$/.exec(first);
        if (!alternatives) return [first];
        const [, parent, names, slash] = alternatives;
        return (names as string).split("|").map((name) => `${parent}${name}${slash}`);
      });
  }

  it("names paths that exist, and every folder of src/ and of the top level", () => {
    const named = layoutPaths();
    expect(named.length).toBeGreaterThan(10);
    const tracked = new Set(execFileSync("git", ["ls-files"], { encoding: "utf8" }).split("\n"));
    for (const path of named) {
      const exists = path.endsWith("/")
        ? [...tracked].some((file) => file.startsWith(path))
        : tracked.has(path);
      expect(exists, `${path} is in the Layout but not in the repository`).toBe(true);
    }
    const folders = new Set(
      [...tracked]
        .filter((file) => file.includes("/"))
        .map((file) => {
          const parts = file.split("/");
          return parts[0] === "src" && parts.length > 2 ? `src/${parts[1]}/` : `${parts[0]}/`;
        }),
    );
    const covered = (folder: string) =>
      named.some((path) => path.startsWith(folder) || folder.startsWith(path));
    const missing = [...folders].filter((folder) => !covered(folder) && !folder.startsWith("."));
    expect(missing).toEqual([]);
  });
});
