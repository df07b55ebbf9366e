import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";

/**
 * The writes that end commands without a runner's answer, shared by the command service and by
 * the bot's state changes (a bot that ends fails what it never acknowledged). No imports from
 * the services that use them, so both can.
 */

export const OPEN_COMMAND_STATES = ["queued", "sent"] as const;

/** Fails every command of `botId` still open: the bot ended before acknowledging it. */
export async function failOpenCommands(
  db: Kysely<Database>,
  botId: number,
  endedAs: string,
  now: string,
): Promise<void> {
  await db
    .updateTable("bot_commands")
    .set({
      state: "failed",
      error_code: "BOT_ENDED",
      error_message: `the bot ended (${endedAs}) before it acknowledged the command`,
      completed_at: now,
    })
    .where("bot_id", "=", botId)
    .where("state", "in", [...OPEN_COMMAND_STATES])
    .execute();
}

/** Fails the open commands whose deadline has passed (of one bot, or of all); answers how many. */
export async function failOverdueCommands(
  db: Kysely<Database>,
  now: string,
  botId?: number,
): Promise<number> {
  const result = await db
    .updateTable("bot_commands")
    .set({
      state: "failed",
      error_code: "DEADLINE_EXCEEDED",
      error_message: "the bot did not acknowledge the command before its deadline",
      completed_at: now,
    })
    .where("state", "in", [...OPEN_COMMAND_STATES])
    .where("deadline_at", "<=", now)
    .$if(botId !== undefined, (qb) => qb.where("bot_id", "=", botId as number))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
