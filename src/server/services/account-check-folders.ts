import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { ServiceContext } from "./context.js";

/**
 * An account check's folder on the server's disk: `<dataDir>/account-checks/<checkId>/`, with the
 * runner's work dir (`work/`) and, under the local launcher, its `runner.log`. Container and Pod
 * runners work in their own file systems and leave nothing here.
 */
export function accountCheckFolder(dataDir: string, checkId: number): string {
  return path.join(accountCheckFolders(dataDir), String(checkId));
}

function accountCheckFolders(dataDir: string): string {
  return path.join(dataDir, "account-checks");
}

/**
 * How long a finished check's folder stays, from the check's end. A completed check's briefly: its
 * runner exits just after its report (closing its browser, writing its last log lines), and whoever
 * asked for the check may read what it saw. A failed check's for a day: its runner.log says why (a
 * page that did not load, a runner that never reported) in more words than the check's error.
 */
export const CHECK_FOLDER_KEEP_MS: Readonly<Record<string, number>> = {
  completed: 10 * 60_000,
  failed: 24 * 3_600_000,
};

const MAX_ID = 2 ** 31 - 1;
/** Folders looked up in one query. */
const BATCH = 500;

/**
 * Removes the folders of checks that finished at least CHECK_FOLDER_KEEP_MS ago, and of checks no
 * longer in the database (their account was deleted); queued and running checks keep theirs. A
 * folder that cannot be removed is logged and tried again next time. Answers how many went.
 */
export async function sweepCheckFolders(
  ctx: { db: Kysely<Database>; log: Pick<ServiceContext["log"], "warn"> },
  dataDir: string,
  now: Date,
): Promise<number> {
  let names: string[];
  try {
    names = await readdir(accountCheckFolders(dataDir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
  // Check ids: the database's integers; anything else in the folder is not the sweep's.
  const ids = names
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((id) => id <= MAX_ID);
  let removed = 0;
  for (let start = 0; start < ids.length; start += BATCH) {
    const batch = ids.slice(start, start + BATCH);
    const rows = await ctx.db
      .selectFrom("bot_account_checks")
      .select(["id", "state", "completed_at"])
      .where("id", "in", batch)
      .execute();
    const checks = new Map(rows.map((row) => [Number(row.id), row]));
    for (const checkId of batch) {
      if (!folderExpired(checks.get(checkId), now)) continue;
      try {
        // Retried: a runner that has just exited may leave a helper writing for a moment.
        await rm(accountCheckFolder(dataDir, checkId), { recursive: true, force: true, maxRetries: 3 });
        removed += 1;
      } catch (err) {
        ctx.log.warn({ err, checkId }, "could not remove a finished account check's folder");
      }
    }
  }
  return removed;
}

/** Whether a check's folder may go: the check is gone, or it finished longer ago than its state keeps it. */
function folderExpired(
  check: { state: string; completed_at: string | null } | undefined,
  now: Date,
): boolean {
  if (!check) return true;
  const keepMs = CHECK_FOLDER_KEEP_MS[check.state];
  if (keepMs === undefined || check.completed_at === null) return false; // queued or running
  return Date.parse(check.completed_at) + keepMs <= now.getTime();
}
