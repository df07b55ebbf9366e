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
 * Failures the server presumed without hearing from the runner: the deadline passed, or the bot
 * ended first. A runner cut off from the server (an outage, a restart) spools its results and
 * sends them later; a result it finished before the presumption's time is the truth and replaces it.
 */
const PRESUMED_FAILURES = ["DEADLINE_EXCEEDED", "BOT_ENDED"] as const;

/**
 * The runner's result of a command (its `command.result` report), kept when the runner finished it
 * within its deadline: while the command is open, or over a failure the server presumed later than
 * that (PRESUMED_FAILURES). `finishedAt` is when the runner finished it (its report's time, never
 * later than `now`). Answers the command's kind when taken (with the failure it replaced, if any),
 * else why not: a result for an id that is not this bot's, finished after its deadline, or for a
 * command that already has an outcome (its own result, or the bot ended before it was finished).
 */
export async function completeCommand(
  db: Kysely<Database>,
  botId: number,
  outcome: CommandResult,
  now: string,
  finishedAt: string = now,
): Promise<{ taken: true; kind: string; replaced: string | null } | { taken: false; why: string }> {
  const finished = finishedAt < now ? finishedAt : now;
  const existing = await db
    .selectFrom("bot_commands")
    .select(["state", "error_code", "completed_at", "deadline_at"])
    .where("id", "=", outcome.commandId)
    .where("bot_id", "=", botId)
    .executeTakeFirst();
  if (!existing) return { taken: false, why: "no such command" };
  const open = (OPEN_COMMAND_STATES as readonly string[]).includes(existing.state);
  const presumed =
    existing.state === "failed" &&
    (PRESUMED_FAILURES as readonly (string | null)[]).includes(existing.error_code) &&
    existing.completed_at !== null &&
    finished < existing.completed_at;
  if (finished >= existing.deadline_at && (open || presumed))
    return { taken: false, why: "its deadline has passed" };
  if (!open && !presumed) {
    const already = existing.error_code ? `${existing.state} (${existing.error_code})` : existing.state;
    return { taken: false, why: `the command is already ${already}` };
  }
  // Only over the row as read: a result racing another write (the sweep, a second copy) changes nothing.
  const row = await db
    .updateTable("bot_commands")
    .set(
      outcome.status === "done"
        ? {
            state: "done",
            result: JSON.stringify(outcome.result ?? {}),
            error_code: null,
            error_message: null,
            completed_at: now,
          }
        : {
            state: "failed",
            error_code: outcome.error.code,
            error_message: outcome.error.message,
            completed_at: now,
          },
    )
    .where("id", "=", outcome.commandId)
    .where("bot_id", "=", botId)
    .$if(open, (qb) => qb.where("state", "in", [...OPEN_COMMAND_STATES]))
    .$if(!open, (qb) =>
      qb.where("state", "=", "failed").where("error_code", "=", existing.error_code as string),
    )
    .returning("kind")
    .executeTakeFirst();
  if (!row) return { taken: false, why: "the command changed meanwhile" };
  return { taken: true, kind: row.kind, replaced: presumed ? existing.error_code : null };
}
