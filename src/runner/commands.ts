import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { request } from "undici";
import {
  type BotConfig,
  type CommandErrorCode,
  CommandPoll,
  type CommandResult,
  commandResultUrl,
  commandsUrl,
  type PendingCommand,
} from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";

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
/** Sends of one result before it waits for the next poll that lists its command again. */
const RESULT_ATTEMPTS = 3;

type Entry = { state: "running" } | { state: "unsent" | "sending" | "sent"; result: CommandResult };

/**
 * The runner's end of the command channel (core/commands.ts): a long poll with the callback
 * token, reconnecting with backoff, that runs each new command once, in order, and posts its
 * result. A command listed again (the server has no result for it yet: a result lost on the way,
 * a poll answered twice) is not run again; its result is sent again if it has one.
 */
export class CommandChannel {
  private readonly entries = new Map<number, Entry>();
  private readonly stopping = new AbortController();
  private running: Promise<void> = Promise.resolve();
  private polling: Promise<void> | null = null;
  private readonly sends = new Set<Promise<void>>();

  constructor(
    private readonly config: Pick<BotConfig, "botId" | "callback">,
    private readonly handle: CommandHandler,
    private readonly log: Logger,
    private readonly waitS = POLL_WAIT_S,
  ) {}

  start(): void {
    this.polling ??= this.pollLoop();
  }

  /**
   * Stops polling; waits up to `graceMs` for the command being run and the results on their way,
   * so that an acknowledgement sent just before the runner exits is not cut off.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping.abort();
    const settled = Promise.allSettled([this.polling, this.running, ...this.sends]);
    await Promise.race([settled, sleep(graceMs)]);
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
    const entry = this.entries.get(command.commandId);
    if (!entry) {
      this.entries.set(command.commandId, { state: "running" });
      this.log.info({ commandId: command.commandId, kind: command.kind }, "command received");
      // One at a time, in the order they were queued.
      this.running = this.running.then(() => this.run(command));
    } else if (entry.state === "unsent") {
      this.send(command.commandId, entry.result);
    }
  }

  private async run(command: PendingCommand): Promise<void> {
    let result: CommandResult;
    try {
      const done = await this.handle(command);
      result = { status: "done", ...(done ? { result: done } : {}) };
    } catch (error) {
      const refusal =
        error instanceof CommandRefusal
          ? error
          : new CommandRefusal("COMMAND_FAILED", (error as Error)?.message ?? String(error));
      result = { status: "failed", error: { code: refusal.code, message: refusal.message.slice(0, 2000) } };
    }
    this.log.info(
      { commandId: command.commandId, kind: command.kind, status: result.status },
      "command finished",
    );
    this.send(command.commandId, result);
  }

  private send(commandId: number, result: CommandResult): void {
    this.entries.set(commandId, { state: "sending", result });
    const sending = this.postResult(commandId, result).then(
      () => {
        this.entries.set(commandId, { state: "sent", result });
      },
      (error: Error) => {
        // The next poll that lists the command again sends it again.
        this.entries.set(commandId, { state: "unsent", result });
        this.log.warn({ commandId, err: error.message }, "command result not delivered yet");
      },
    );
    this.sends.add(sending);
    void sending.finally(() => this.sends.delete(sending));
  }

  private async postResult(commandId: number, result: CommandResult): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await request(commandResultUrl(this.config, commandId), {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.config.callback.token}`,
            "content-type": "application/json",
          },
          body: JSON.stringify(result),
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
          dispatcher: controlPlaneDispatcher(this.config.callback),
        });
        const text = await response.body.text();
        // 409: the command has an outcome already (its deadline passed): nothing more to say.
        if (response.statusCode < 300 || response.statusCode === 409) return;
        throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
      } catch (error) {
        if (attempt >= RESULT_ATTEMPTS) throw error;
        await sleep(500 * attempt);
      }
    }
  }
}
