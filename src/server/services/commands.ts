import { setTimeout as sleep } from "node:timers/promises";
import type { Kysely } from "kysely";
import {
  type BotStatus,
  COMMAND_DEADLINE_MS,
  type CommandErrorCode,
  type CommandKind,
  type CommandPoll,
  type CommandStatus,
} from "../../core/index.js";
import { parseJson, toIso } from "../db/database.js";
import type { BotCommandRow, Database } from "../db/schema.js";
import { BotNotFoundError, ConflictError, NotFoundError } from "../errors.js";
import type { Command } from "../schemas/index.js";
import type { BotService } from "./bots.js";
import { lockBot } from "./bot-state.js";
import { failOverdueCommands, OPEN_COMMAND_STATES } from "./command-rows.js";
import type { ServiceContext } from "./context.js";

/**
 * While a poll waits, it looks at the table this often besides being woken: a command queued by
 * another server process (PostgreSQL) reaches the runner within this delay.
 */
const POLL_RECHECK_MS = 1000;

/**
 * Commands to running bots (core/commands.ts): users queue them, runners fetch them with a long
 * poll and report each one's result as an event (CallbackService, command-rows.ts). The table is the queue, so a server restart or a dropped poll loses
 * no command; a command stays "sent" until its result is in, and each poll hands the runner every
 * open one again (the runner runs each id once). Deadlines are enforced by the watchdog's sweep
 * and whenever a command is read.
 */
export class CommandService {
  /** Polls of this process waiting for commands, per bot. */
  private readonly waiting = new Map<number, Set<() => void>>();
  private closing = false;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
  ) {}

  /**
   * Queues a command for the caller's bot: 404 as for a missing bot, 409 unless the bot's status
   * is one of `statuses`. `reuseOpen`: an open command of the same kind is answered instead of a
   * second one (asking a bot twice to leave is one leave). `reuseDoneSince`: a command of the same
   * kind done since then is answered before an open one (a screenshot taken within the last
   * second); decided under the bot's lock with the rest, so an ask that comes as the last one
   * completes does not queue another. `deadlineMs`: how long from now the
   * runner has to answer, found in the transaction that queues, after the bot's row is locked (a
   * sound's deadline counts the sounds queued before it); default COMMAND_DEADLINE_MS of the kind.
   */
  async queue(
    userId: number,
    botId: number,
    kind: CommandKind,
    payload: Record<string, unknown>,
    statuses: readonly BotStatus[],
    opts: {
      reuseOpen: boolean;
      reuseDoneSince?: Date;
      deadlineMs?: (trx: Kysely<Database>) => Promise<number>;
    },
  ): Promise<Command> {
    const now = this.ctx.now();
    const row = await this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot || bot.user_id !== userId) throw new BotNotFoundError();
      if (!statuses.includes(bot.status as BotStatus)) {
        throw new ConflictError(`Bot is not in a call (status is ${bot.status})`);
      }
      if (opts.reuseDoneSince) {
        const recent = await trx
          .selectFrom("bot_commands")
          .selectAll()
          .where("bot_id", "=", botId)
          .where("kind", "=", kind)
          .where("state", "=", "done")
          .where("completed_at", ">=", toIso(opts.reuseDoneSince))
          .orderBy("id", "desc")
          .executeTakeFirst();
        if (recent) return recent;
      }
      if (opts.reuseOpen) {
        const open = await trx
          .selectFrom("bot_commands")
          .selectAll()
          .where("bot_id", "=", botId)
          .where("kind", "=", kind)
          .where("state", "in", [...OPEN_COMMAND_STATES])
          .orderBy("id")
          .executeTakeFirst();
        if (open) return open;
      }
      const deadlineMs = opts.deadlineMs ? await opts.deadlineMs(trx) : COMMAND_DEADLINE_MS[kind];
      return trx
        .insertInto("bot_commands")
        .values({
          bot_id: botId,
          kind,
          payload: JSON.stringify(payload),
          state: "queued",
          created_at: toIso(now),
          deadline_at: toIso(new Date(now.getTime() + deadlineMs)),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    this.wake(botId);
    this.ctx.log.info({ botId, commandId: row.id, kind }, "command queued");
    return toCommand(row);
  }

  /** GET /v1/bots/{id}/commands/{commandId}: 404 unless it is a command of the caller's bot. */
  async get(userId: number, botId: number, commandId: number): Promise<Command> {
    await this.bots.requireOwned(userId, botId);
    const row = await this.read(botId, commandId);
    if (!row) throw new NotFoundError("Command not found");
    return toCommand(row);
  }

  /**
   * The runner's long poll: every open command of the bot, oldest first, marked sent. With none,
   * waits up to `waitMs` for one (woken at once by a command queued in this process, else within
   * POLL_RECHECK_MS); answers an empty list when the wait is over, the client went away
   * (`abort`), or the server is closing.
   */
  async poll(botId: number, waitMs: number, abort: AbortSignal): Promise<CommandPoll> {
    const until = Date.now() + waitMs;
    for (;;) {
      const commands = await this.takeOpen(botId);
      if (commands.length > 0 || this.closing || abort.aborted || Date.now() >= until) {
        return { commands };
      }
      await this.nextLook(botId, Math.min(POLL_RECHECK_MS, until - Date.now()), abort);
    }
  }

  /** A command of the bot as it stands, failed first if it is open past its deadline. */
  private async read(botId: number, commandId: number): Promise<BotCommandRow | undefined> {
    const select = () =>
      this.ctx.db
        .selectFrom("bot_commands")
        .selectAll()
        .where("id", "=", commandId)
        .where("bot_id", "=", botId)
        .executeTakeFirst();
    const row = await select();
    const now = toIso(this.ctx.now());
    if (!row || !isOverdue(row, now)) return row;
    await failOverdueCommands(this.ctx.db, now, botId);
    return select();
  }

  /** The watchdog's sweep: fails every open command past its deadline. */
  async failOverdue(): Promise<number> {
    return failOverdueCommands(this.ctx.db, toIso(this.ctx.now()));
  }

  /** Ends every waiting poll (with what it has) and refuses to wait from now on. */
  close(): void {
    this.closing = true;
    for (const wakers of this.waiting.values()) for (const wake of wakers) wake();
  }

  private wake(botId: number): void {
    for (const wake of this.waiting.get(botId) ?? []) wake();
  }

  private async takeOpen(botId: number): Promise<CommandPoll["commands"]> {
    const now = toIso(this.ctx.now());
    const open = await this.ctx.db
      .selectFrom("bot_commands")
      .selectAll()
      .where("bot_id", "=", botId)
      .where("state", "in", [...OPEN_COMMAND_STATES])
      .orderBy("id")
      .execute();
    // Reads first and writes only when there is something to write: every waiting runner looks
    // once a second, and an UPDATE that matches nothing still takes SQLite's write lock.
    if (open.some((row) => isOverdue(row, now))) await failOverdueCommands(this.ctx.db, now, botId);
    const rows = open.filter((row) => !isOverdue(row, now));
    const queued = rows.filter((row) => row.state === "queued").map((row) => row.id);
    if (queued.length > 0) {
      await this.ctx.db
        .updateTable("bot_commands")
        .set({ state: "sent", sent_at: now })
        .where("id", "in", queued)
        .where("state", "=", "queued")
        .execute();
    }
    return rows.map((row) => ({
      commandId: row.id,
      kind: row.kind,
      payload: parseJson<Record<string, unknown>>(row.payload),
    }));
  }

  /** Resolves when a command for the bot is queued here, after `ms`, or on abort or close. */
  private async nextLook(botId: number, ms: number, abort: AbortSignal): Promise<void> {
    const wakers = this.waiting.get(botId) ?? new Set<() => void>();
    this.waiting.set(botId, wakers);
    const woken = new AbortController();
    const wake = () => woken.abort();
    wakers.add(wake);
    abort.addEventListener("abort", wake, { once: true });
    try {
      await sleep(Math.max(0, ms), undefined, { signal: woken.signal }).catch(() => {});
    } finally {
      wakers.delete(wake);
      if (wakers.size === 0) this.waiting.delete(botId);
      abort.removeEventListener("abort", wake);
    }
  }
}

function isOverdue(row: BotCommandRow, now: string): boolean {
  return (row.state === "queued" || row.state === "sent") && row.deadline_at <= now;
}

function toCommand(row: BotCommandRow): Command {
  return {
    commandId: row.id,
    botId: row.bot_id,
    kind: row.kind as CommandKind,
    status: row.state as CommandStatus,
    error:
      row.error_code === null
        ? null
        : { code: row.error_code as CommandErrorCode, message: row.error_message ?? "" },
    result: parseJson<Record<string, unknown>>(row.result),
    createdAt: row.created_at,
    sentAt: row.sent_at,
    deadlineAt: row.deadline_at,
    completedAt: row.completed_at,
  };
}
