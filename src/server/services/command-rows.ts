import type { Kysely } from "kysely";
import type { CommandResult } from "../../core/index.js";
import type { Database } from "../db/schema.js";

/**
 * The writes that end commands, shared by the command service, the runner's reports (a command's
 * result) and the bot's state changes (a bot that ends fails what it never acknowledged). No
 * imports from the services that use them, so all can.
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

/**
 * The runner's result of a command (its `command.result` report), kept while the command is open
 * and finished within its deadline. `finishedAt` is when the runner finished it (its report's
 * time, never later than `now`): a result the runner spooled while the control plane was down
 * arrives late, and the command was still done in time. Answers the command's kind when taken,
 * else why not: a result for an id that is not this bot's, or for a command that already has an
 * outcome (its deadline passed, or the bot was ended by the server before the result came).
 */
export async function completeCommand(
  db: Kysely<Database>,
  botId: number,
  outcome: CommandResult,
  now: string,
  finishedAt: string = now,
): Promise<{ taken: true; kind: string } | { taken: false; why: string }> {
  const finished = finishedAt < now ? finishedAt : now;
  const row = await db
    .updateTable("bot_commands")
    .set(
      outcome.status === "done"
        ? { state: "done", result: JSON.stringify(outcome.result ?? {}), completed_at: now }
        : {
            state: "failed",
            error_code: outcome.error.code,
            error_message: outcome.error.message,
            completed_at: now,
          },
    )
    .where("id", "=", outcome.commandId)
    .where("bot_id", "=", botId)
    .where("state", "in", [...OPEN_COMMAND_STATES])
    .where("deadline_at", ">", finished)
    .returning("kind")
    .executeTakeFirst();
  if (row) return { taken: true, kind: row.kind };
  const existing = await db
    .selectFrom("bot_commands")
    .select(["state", "error_code"])
    .where("id", "=", outcome.commandId)
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  if (!existing) return { taken: false, why: "no such command" };
  if ((OPEN_COMMAND_STATES as readonly string[]).includes(existing.state))
    return { taken: false, why: "its deadline has passed" };
  const already = existing.error_code ? `${existing.state} (${existing.error_code})` : existing.state;
  return { taken: false, why: `the command is already ${already}` };
}
