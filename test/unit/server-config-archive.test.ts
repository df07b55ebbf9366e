import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configArchive } from "../../src/server/launcher/config-archive.js";

const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-archive-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("configArchive", () => {
  it("is a tar that GNU tar reads: one folder and one file, the runner's alone", async () => {
    const content = JSON.stringify({ botId: 7, note: "ünïcode ".repeat(100) });
    const file = path.join(dir, "config.tar");
    await writeFile(file, configArchive("meetbot", "bot-config.json", content, 10001));
    const { stdout: listing } = await run("tar", ["--numeric-owner", "-tvf", file]);
    const lines = listing.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^drwx------ 10001\/10001\s+0 .* meetbot\/$/);
    expect(lines[1]).toMatch(
      new RegExp(`^-r-------- 10001/10001\\s+${Buffer.byteLength(content)} .* meetbot/bot-config.json$`),
    );
    const { stdout: extracted } = await run("tar", ["-xOf", file, "meetbot/bot-config.json"]);
    expect(extracted).toBe(content);
  });
});
