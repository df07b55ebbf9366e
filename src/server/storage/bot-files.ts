import { rm } from "node:fs/promises";
import path from "node:path";

/**
 * Everything kept on disk for one bot besides its recording: `<botsDir>/<id>/` holds the runner's
 * log, its work dir (spool, local recording) and the failure artifacts. Removed when the bot is.
 */
export async function removeBotFiles(botsDir: string, botId: number): Promise<void> {
  await rm(path.join(botsDir, String(botId)), { recursive: true, force: true });
}
