import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { request } from "undici";
import {
  type BotConfig,
  COMMAND_LANES,
  type CommandKind,
  type CommandErrorCode,
  CommandPoll,
  type CommandResult,
  commandsUrl,
  type PendingCommand,
} from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";
import type { Reporter } from "./reporter.js";
import { waitAtMost } from "./wait-at-most.js";

/** A command the runner would not or could not do: it fails with this code and message. */
export class CommandRefusal extends Error {
  constructor(
    readonly code: CommandErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Runs one command; resolves with what it did (the command's `result`) or throws a CommandRefusal. */
export type CommandHandler = (command: PendingCommand) => Promise<Record<string, unknown> | undefined>;

/** How long one poll asks the server to wait for a command (seconds). */
const POLL_WAIT_S = 25;
/** Reconnect backoff after a failed poll: doubling from the first to the last, with jitter. */
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 15_000;
/**
 * The runner's end of the command channel (core/commands.ts): a long poll with the callback
 * token, reconnecting with backoff, that runs each new command once, in order, and reports its
 * result through the reporter (spooled and resent like every event, and in order with them). A
 * command listed again (its result is not in yet: still running, or on its way) is not run again.
 */
export class CommandChannel {
  /** The ids of every command taken: each runs once. */
  private readonly taken = new Set<number>();
  private readonly stopping = new AbortController();
  /** The last command of each lane (core COMMAND_LANES): a lane runs its commands one at a time. */
  private readonly lanes = new Map<string, Promise<void>>();
  private polling: Promise<void> | null = null;

  constructor(
    private readonly config: Pick<BotConfig, "botId" | "callback">,
    private readonly handle: CommandHandler,
    private readonly reporter: Pick<Reporter, "report">,
    private readonly log: Logger,
    private readonly waitS = POLL_WAIT_S,
  ) {}

  start(): void {
    this.polling ??= this.pollLoop();
  }

  /** Stops polling; waits up to `graceMs` for the command being run to report its result. */
  async stop(graceMs: number): Promise<void> {
    this.stopping.abort();
    const settled = Promise.allSettled([this.polling, ...this.lanes.values()]);
    await waitAtMost(settled, graceMs);
  }

  private async pollLoop(): Promise<void> {
    let backoff = BACKOFF_FIRST_MS;
    while (!this.stopping.signal.aborted) {
      try {
        const poll = await this.fetchPoll();
        backoff = BACKOFF_FIRST_MS;
        for (const command of poll.commands) this.take(command);
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        const status = (error as { statusCode?: number }).statusCode;
        if (status === 401 || status === 404) {
          // The bot has ended (its token is over) or is gone: no command will come any more.
          this.log.info({ status }, "command channel closed by the control plane");
          return;
        }
        this.log.warn({ err: (error as Error).message, retryInMs: backoff }, "command poll failed");
        await sleep(backoff * (0.75 + Math.random() / 2), undefined, { signal: this.stopping.signal }).catch(
          () => {},
        );
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  private async fetchPoll(): Promise<CommandPoll> {
    const response = await request(commandsUrl(this.config, this.waitS), {
      method: "GET",
      headers: { authorization: `Bearer ${this.config.callback.token}` },
      // The server holds the answer up to waitS: only a silence well past it means trouble.
      headersTimeout: (this.waitS + 15) * 1000,
      bodyTimeout: 15_000,
      signal: this.stopping.signal,
      dispatcher: controlPlaneDispatcher(this.config.callback),
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) {
      throw Object.assign(new Error(`command poll: HTTP ${response.statusCode}: ${text.slice(0, 300)}`), {
        statusCode: response.statusCode,
      });
    }
    return CommandPoll.parse(JSON.parse(text));
  }

  private take(command: PendingCommand): void {
    if (this.taken.has(command.commandId)) return;
    this.taken.add(command.commandId);
    this.log.info({ commandId: command.commandId, kind: command.kind }, "command received");
    // One at a time per lane, in the order they were queued: a sound waits for the one before it,
    // a leave or a stop never waits for a sound. A kind this runner does not know runs at once (and
    // answers UNKNOWN_COMMAND).
    const lane = COMMAND_LANES[command.kind as CommandKind] ?? "control";
    const next = (this.lanes.get(lane) ?? Promise.resolve()).then(() => this.run(command));
    this.lanes.set(lane, next);
  }

  private async run(command: PendingCommand): Promise<void> {
    const { commandId } = command;
    let result: CommandResult;
    try {
      const done = await this.handle(command);
      result = { commandId, status: "done", ...(done ? { result: done } : {}) };
    } catch (error) {
      const refusal =
        error instanceof CommandRefusal
          ? error
          : new CommandRefusal("COMMAND_FAILED", (error as Error)?.message ?? String(error));
      result = {
        commandId,
        status: "failed",
        error: { code: refusal.code, message: refusal.message.slice(0, 2000) },
      };
    }
    this.log.info({ commandId, kind: command.kind, status: result.status }, "command finished");
    this.reporter.report({ type: "command.result", data: result });
  }
}
