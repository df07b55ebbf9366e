import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { request } from "undici";
import {
  type BotConfig,
  type CallbackEvent,
  type CallbackEventBody,
  callbackEventUrl,
  TERMINAL_STATUSES,
} from "../core/index.js";
import { controlPlaneDispatcher } from "./control-plane-tls.js";
import { refusal } from "./refusal.js";

/**
 * Reports events to the control plane without ever losing one.
 *
 * Each event is numbered, appended to a spool file on disk (`events.jsonl`) and only then sent,
 * strictly in order. The last acknowledged seq is kept beside it (`events.acked`). A control
 * plane that is down only delays delivery: the sender retries with backoff for as long as the
 * runner lives, and a runner restarted on the same work dir resends what was not acknowledged.
 * The server dedups by (bot, seq), so resending is harmless.
 */
export class Reporter {
  private readonly spoolPath: string;
  private readonly ackPath: string;
  private readonly url: string;
  private readonly queue: CallbackEvent[] = [];
  private nextSeq = 1;
  private lastAcked = 0;
  private sending: Promise<void> | null = null;
  private waiters: Array<() => void> = [];
  private stopped = false;
  /** The server has this runner's own DONE or FATAL: its callback token is no longer good. */
  private finished = false;
  private readonly abort = new AbortController();
  private endedByServer: ((why: string) => void) | undefined;

  constructor(
    private readonly config: Pick<BotConfig, "botId" | "callback">,
    workDir: string,
    private readonly log: Logger,
  ) {
    this.spoolPath = join(workDir, "events.jsonl");
    this.ackPath = join(workDir, "events.acked");
    this.url = callbackEventUrl(config);
    this.recoverSpool();
  }

  /** Numbers, stamps, spools and queues an event; returns its seq. Never throws on network trouble. */
  report(body: CallbackEventBody): number {
    const event = { ...body, seq: this.nextSeq++, eventTime: new Date().toISOString() } as CallbackEvent;
    appendFileSync(this.spoolPath, `${JSON.stringify(event)}\n`);
    this.queue.push(event);
    this.kick();
    return event.seq;
  }

  /** True when every reported event has been acknowledged by the control plane. */
  get idle(): boolean {
    return this.queue.length === 0;
  }

  /** Waits until everything reported so far is delivered, or `timeoutMs` passes. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.idle) return true;
    let timer: NodeJS.Timeout | undefined;
    const delivered = new Promise<boolean>((resolve) => this.waiters.push(() => resolve(true)));
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const result = await Promise.race([delivered, timedOut]);
    clearTimeout(timer);
    return result;
  }

  /**
   * Called once when the control plane says this bot is over although the runner did not end it:
   * killed through the API, failed by the server's watchdog, or deleted. The runner then leaves
   * as on SIGTERM. This reaches runners the server cannot signal (another host, or started by a
   * server process that has since restarted) within one heartbeat.
   */
  onEndedByServer(callback: (why: string) => void): void {
    this.endedByServer = callback;
  }

  /** Stops retrying (what is left stays in the spool for a later run). */
  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  private recoverSpool(): void {
    if (!existsSync(this.spoolPath)) return;
    this.lastAcked = existsSync(this.ackPath) ? Number(readFileSync(this.ackPath, "utf8").trim()) || 0 : 0;
    for (const line of readFileSync(this.spoolPath, "utf8").split("\n")) {
      if (!line.trim()) continue;
      let event: CallbackEvent;
      try {
        event = JSON.parse(line) as CallbackEvent;
      } catch {
        continue; // a torn last line from a crash mid-write; its event was never sent
      }
      this.nextSeq = Math.max(this.nextSeq, event.seq + 1);
      if (event.seq > this.lastAcked) this.queue.push(event);
    }
    if (this.queue.length > 0) {
      this.log.info({ pending: this.queue.length }, "resending events left in the spool by an earlier run");
      this.kick();
    }
  }

  private kick(): void {
    if (this.sending) return;
    this.sending = this.drain().finally(() => {
      this.sending = null;
      if (this.queue.length > 0 && !this.stopped) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      const event = this.queue[0] as CallbackEvent;
      const handled = await this.deliver(event);
      if (!handled) break;
      this.queue.shift();
      this.lastAcked = event.seq;
      writeFileSync(this.ackPath, String(event.seq));
    }
    if (this.queue.length === 0) {
      for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /** True once the server took the event (or refused it for good); false when stopped first. */
  private async deliver(event: CallbackEvent): Promise<boolean> {
    return pRetry(() => this.post(event), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 200,
      maxTimeout: 5_000,
      signal: this.abort.signal,
      onFailedAttempt: ({ error, attemptNumber }) => {
        if (attemptNumber === 1 || attemptNumber % 10 === 0) {
          this.log.warn(
            { seq: event.seq, attempt: attemptNumber, err: error.message },
            "callback failed, retrying",
          );
        }
      },
    }).then(
      () => true,
      (error: Error) => {
        if (this.stopped) return false;
        this.log.error({ seq: event.seq, type: event.type, err: error.message }, "callback event refused");
        return true;
      },
    );
  }

  private async post(event: CallbackEvent): Promise<void> {
    const response = await request(this.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${this.config.callback.token}` },
      body: JSON.stringify(event),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
      dispatcher: controlPlaneDispatcher(this.config.callback),
    });
    const text = await response.body.text();
    const ownEnd = event.type === "status" && TERMINAL_STATUSES.includes(event.data.status);
    if (ownEnd && (response.statusCode < 300 || response.statusCode === 409)) this.finished = true;
    if (response.statusCode < 300) {
      this.noticeServerStatus(event, text);
      return;
    }
    if (response.statusCode === 404) this.notifyEnded("the control plane no longer knows this bot");
    // The callback token dies once the server has this runner's last report: a heartbeat or a
    // log line sent after it is expected to be turned away.
    if (response.statusCode === 401 && this.finished) {
      this.log.info({ seq: event.seq, type: event.type }, "the bot has ended; event not taken");
      return;
    }
    // Refused before that: the bot ended long ago; nothing more this runner says is taken.
    if (response.statusCode === 401) this.notifyEnded("the control plane no longer takes this bot's reports");
    // 409: the server refused the move (e.g. it already marked the bot FATAL). Resending will not
    // change its mind, so the event counts as handled.
    if (response.statusCode === 409) {
      this.log.warn({ seq: event.seq, type: event.type, detail: text }, "control plane refused event");
      return;
    }
    // Other client errors are our bug or a revoked bot: retrying forever would only block the queue.
    throw refusal(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`, response.statusCode);
  }

  private noticeServerStatus(event: CallbackEvent, responseText: string): void {
    if (event.type === "status" && TERMINAL_STATUSES.includes(event.data.status)) return;
    let status: unknown;
    try {
      status = (JSON.parse(responseText) as { status?: unknown }).status;
    } catch {
      return;
    }
    if (status === "FATAL" || status === "DONE")
      this.notifyEnded(`the control plane marked this bot ${status}`);
  }

  private notifyEnded(why: string): void {
    const callback = this.endedByServer;
    this.endedByServer = undefined;
    callback?.(why);
  }
}
