import type { Kysely } from "kysely";
import { toIso } from "../db/database.js";
import type { Database } from "../db/schema.js";

/**
 * A bot's callback token dies with the bot. Its runner uploads its recording and failure
 * artifacts *before* it sends its last status report (DONE, or its own FATAL), and sends nothing
 * that matters after it; so the token stops working:
 *
 * - when the runner's last report arrives (applied, or refused because the server had already
 *   ended the bot) and the bot's recording, if it is DONE, is stored;
 * - a runner that reports DONE before its recording is stored keeps the token until the upload
 *   is stored, for at most RUNNER_WIND_DOWN_MS;
 * - when the server ends the bot itself (kill, launch failure, watchdog), the runner may still be
 *   leaving, finalizing and uploading: the token keeps working until that runner's last report, or
 *   RUNNER_WIND_DOWN_MS after the bot became FATAL, whichever comes first.
 *
 * A dead token is a 401 for events (replays of events already applied included: the runner's
 * reporter counts a 401 as final and moves on, so nothing loops and nothing stored is lost) and
 * for uploads.
 */
export const RUNNER_WIND_DOWN_MS = 60 * 60 * 1000;

/** The token stops working at `at`, or earlier if it already was going to. */
export async function expireCallbackToken(db: Kysely<Database>, botId: number, at: string): Promise<void> {
  await db
    .updateTable("bots")
    .set({ callback_token_expires_at: at })
    .where("id", "=", botId)
    .where((eb) =>
      eb.or([eb("callback_token_expires_at", "is", null), eb("callback_token_expires_at", ">", at)]),
    )
    .execute();
}

/** The end of the runner's wind-down after the bot ended at `endedAt` (ISO). */
export function windDownEnd(endedAt: string): string {
  return toIso(new Date(Date.parse(endedAt) + RUNNER_WIND_DOWN_MS));
}
