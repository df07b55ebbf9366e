import { chmod, mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";

/**
 * An unfinished upload (`*.part`, see files.ts) untouched for this long is dead: a runner's upload
 * gives up after 120 s without progress. Younger ones may belong to another server process on the
 * same data dir, mid-upload.
 */
const ABANDONED_PART_MS = 5 * 60 * 1000;

/**
 * Makes the data dir and its folders readable by the owner only (0700, also when they existed
 * before), and removes the unfinished uploads an earlier run left behind. Returns their paths.
 */
export async function prepareDataDir(
  dirs: { dataDir: string; recordings: string; bots: string },
  now = new Date(),
): Promise<string[]> {
  for (const dir of [dirs.dataDir, dirs.recordings, dirs.bots]) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
  }
  const candidates = [
    ...(await partFiles(dirs.recordings)),
    ...(
      await Promise.all(
        (await readdir(dirs.bots)).map((bot) => partFiles(path.join(dirs.bots, bot, "artifacts"))),
      )
    ).flat(),
  ];
  const removed: string[] = [];
  for (const file of candidates) {
    const { mtimeMs } = await stat(file).catch(() => ({ mtimeMs: now.getTime() }));
    if (now.getTime() - mtimeMs < ABANDONED_PART_MS) continue;
    await rm(file, { force: true });
    removed.push(file);
  }
  return removed;
}

async function partFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((name) => name.endsWith(".part")).map((name) => path.join(dir, name));
}
