import type { Logger } from "pino";
import type { Page } from "playwright";
import {
  type ChatReading,
  ChatUnavailable,
  type LiveAdapter,
  type LiveNote,
  readChat,
} from "../../../platforms/live.js";
import { type CallbackEventBody, chatLengthProblem, type Platform } from "../../core/index.js";
import { CommandRefusal } from "../commands.js";
import { waitAtMost } from "../wait-at-most.js";
import { firstLine } from "./captions.js";
import { ChatTracker } from "./chat-tracker.js";
import { feedFromPage } from "./page-feed.js";
import type { SpeakerDirectory } from "./speakers.js";

/** How long a sent message may take to show in the list once the composer cleared. */
const SHOWN_MS = 10_000;
/** At most one attempt to show the panel again in this time, when it closed. */
const REOPEN_MS = 5_000;
/**
 * The chat is read at most this often: it reads the whole list (hundreds of messages in a long
 * call), and a message a quarter of a second late is no loss.
 */
const READ_EVERY_MS = 250;
/** Attempts in a row to show the panel again before the bot stops trying (it would flap). */
const MAX_REOPEN_FAILURES = 3;
/**
 * How long stop() waits for the page action under way (showing the panel, a send). The bot clicks
 * Leave next: a panel opening meanwhile moved the toolbar under the click, which then landed
 * beside the button, and the bot dropped out of the call instead of leaving it (2026-11-29).
 */
const STOP_WAIT_MS = 5_000;

export interface ChatContext {
  page: Page;
  live: LiveAdapter;
  platform: Platform;
  speakers: SpeakerDirectory;
  /** The name the meeting shows for the bot. */
  selfName: string;
  report(body: CallbackEventBody): void;
  log: Logger;
  note: LiveNote;
}

interface Waiter {
  text: string;
  resolve(messageId: string | null): void;
}

/**
 * The meeting's chat for one bot: the panel kept open (Teams delivers messages only to an open
 * pane), every message reported once (`chat.message`, ChatTracker), and the bot's own sends typed
 * into the composer one at a time. Each send is done once the composer cleared and the message
 * shows in the list (its id is the answer).
 */
export class MeetingChat {
  private readonly tracker: ChatTracker;
  /** Why the call gives the bot no chat, once the page said so. */
  private unavailable: string | null = null;
  private stopped = false;
  private feeding: Promise<() => void> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly waiters = new Set<Waiter>();
  private reopenTimer: NodeJS.Timeout | null = null;
  private lastOpenAt = 0;
  private reopenFailures = 0;

  constructor(private readonly ctx: ChatContext) {
    this.tracker = new ChatTracker({
      resolve: (ref) => ctx.speakers.resolve(ref),
      now: () => new Date(),
      claimsOwn: (name, text) => name === ctx.selfName && this.waiterFor(text) !== undefined,
      emit: (message) => {
        ctx.report({ type: "chat.message", data: message });
        if (!message.fromBot) return;
        const waiter = this.waiterFor(message.text);
        if (waiter) {
          this.waiters.delete(waiter);
          waiter.resolve(message.messageId);
        }
      },
    });
  }

  /** Shows the panel and starts reading it (after `after`: the page's other clicks). */
  start(after: Promise<unknown> = Promise.resolve()): Promise<void> {
    return this.enqueue(async () => {
      await after;
      await this.open();
    });
  }

  /** Sends `text`; resolves with the message's id when it showed in the list. Throws a CommandRefusal. */
  send(text: string): Promise<{ messageId?: string }> {
    return this.enqueue(async () => {
      if (this.stopped) throw new CommandRefusal("NOT_IN_CALL", "the call is over");
      if (this.unavailable) throw new CommandRefusal("CHAT_UNAVAILABLE", this.unavailable);
      const problem = chatLengthProblem(this.ctx.platform, text);
      if (problem) throw new CommandRefusal("COMMAND_FAILED", problem);
      const shown = this.awaitOwn(text);
      try {
        await this.ctx.live.sendChat(this.ctx.page, text, { note: this.ctx.note });
      } catch (error) {
        shown.cancel();
        if (error instanceof ChatUnavailable) {
          this.unavailable = error.message;
          throw new CommandRefusal("CHAT_UNAVAILABLE", error.message);
        }
        throw new CommandRefusal(
          "COMMAND_FAILED",
          `the message was not sent: ${firstLine((error as Error).message)}`,
        );
      }
      this.lastOpenAt = Date.now();
      await this.feed();
      const messageId = await shown.promise;
      if (!messageId) this.ctx.log.warn("a sent chat message did not show in the list");
      return messageId ? { messageId } : {};
    });
  }

  /** Stops reading and sending; resolves once the page action under way is over (STOP_WAIT_MS at most). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reopenTimer) clearTimeout(this.reopenTimer);
    // A feed that never started (the browser was gone) has nothing to stop; feed() logged why.
    void this.feeding?.then(
      (stopFeed) => stopFeed(),
      () => {},
    );
    for (const waiter of this.waiters) waiter.resolve(null);
    this.waiters.clear();
    await waitAtMost(this.queue, STOP_WAIT_MS);
  }

  /** Shows the panel if it is not; notes why when the call has no chat. */
  private async open(): Promise<void> {
    if (this.stopped || this.unavailable) return;
    this.lastOpenAt = Date.now();
    try {
      await this.ctx.live.openChat(this.ctx.page, { note: this.ctx.note });
      this.reopenFailures = 0;
    } catch (error) {
      if (error instanceof ChatUnavailable) {
        this.unavailable = error.message;
        this.ctx.log.info({ reason: error.message }, "no chat in this call");
        return;
      }
      this.reopenFailures += 1;
      this.ctx.log.warn({ err: firstLine((error as Error).message) }, "could not show the chat panel");
    }
    await this.feed();
  }

  /** Starts reading the chat (once). */
  private feed(): Promise<unknown> {
    if (this.stopped) return Promise.resolve();
    this.feeding ??= feedFromPage(
      this.ctx.page,
      "chat",
      readChat,
      this.ctx.live.chat,
      (reading) => this.onReading(reading),
      { coalesceMs: READ_EVERY_MS },
    );
    return this.feeding.catch((error: Error) => {
      this.ctx.log.warn({ err: firstLine(error.message) }, "could not read the chat");
    });
  }

  private onReading(reading: ChatReading): void {
    if (this.stopped) return;
    this.tracker.update(reading.messages);
    if (!reading.open) this.keepOpen();
  }

  /** The panel closed: show it again, at most once per REOPEN_MS and never while sending. */
  private keepOpen(): void {
    if (this.stopped || this.unavailable || this.reopenTimer) return;
    if (this.reopenFailures >= MAX_REOPEN_FAILURES) return;
    const wait = Math.max(0, this.lastOpenAt + REOPEN_MS - Date.now());
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = null;
      void this.enqueue(() => this.open());
    }, wait);
  }

  /** One page action at a time, in order: opening the panel, sends. */
  private enqueue<T>(action: () => Promise<T>): Promise<T> {
    const run = this.queue.then(action);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Resolves with the id of the bot's own message of `text` once it shows, or null after SHOWN_MS. */
  private awaitOwn(text: string): { promise: Promise<string | null>; cancel(): void } {
    let waiter!: Waiter;
    let timer: NodeJS.Timeout | undefined;
    const promise = new Promise<string | null>((resolve) => {
      waiter = {
        text: normalize(text),
        resolve: (messageId) => {
          clearTimeout(timer);
          resolve(messageId);
        },
      };
      timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve(null);
      }, SHOWN_MS);
    });
    this.waiters.add(waiter);
    return {
      promise,
      cancel: () => {
        this.waiters.delete(waiter);
        waiter.resolve(null);
      },
    };
  }

  private waiterFor(text: string): Waiter | undefined {
    const wanted = normalize(text);
    return [...this.waiters].find((waiter) => waiter.text === wanted);
  }
}

const normalize = (text: string) => text.replace(/\s+/g, " ").trim();
