import { Readable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import type { EventStreamConfig } from "../config.js";
import { ApiError, ServiceUnavailableError } from "../errors.js";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { AggregatedEvent, LiveEvent } from "../schemas/index.js";
import type { WakeSignal } from "../wake-signal.js";
import type { EventService } from "./events.js";
import { liveEventsAfter, newestLiveEventId } from "./live-events.js";

/** Events read per query: a long catch-up goes out in slices of this many. */
export const STREAM_BATCH = 500;

/** Up to `limit` events after `afterId`, each with its id and its SSE text. */
type ReadEvents = (afterId: number, limit: number) => Promise<{ id: number; text: string }[]>;

/** The reconnect delay the stream suggests to clients (the SSE `retry:` field). */
export const STREAM_RETRY_MS = 3000;

/** What a stream sends besides its events: first (the SSE reconnect delay), and to stay open. */
interface Framing {
  preamble: string | null;
  ping: string | null;
}
const SSE_FRAMING: Framing = { preamble: `retry: ${STREAM_RETRY_MS}\n\n`, ping: ": ping\n\n" };
const PLAIN_FRAMING: Framing = { preamble: null, ping: null };

/** What a stream holds for a client beyond what the socket holds: this much text, and one event more. */
const STREAM_BUFFER_BYTES = 16 * 1024;

export class TooManyStreamsError extends ApiError {
  constructor(limit: number) {
    super(429, `Too many open event streams: ${limit} per user; close one first`);
  }
}

/**
 * The live event streams of this process (GET /v1/events/stream, and each bot's GET
 * /v1/bots/{id}/live). Each stream reads its table (aggregated_events of the user's bots,
 * live_events of the bot) past the last id it sent, so that events written by
 * any server process reach it: on a timer, and at once when this process appends events
 * (`signal`, notified after their transaction commits).
 */
export class EventStreams {
  private readonly streams = new Set<EventStream>();
  private closing = false;

  constructor(
    private readonly events: EventService,
    private readonly db: Kysely<Database>,
    private readonly config: EventStreamConfig,
    signal: WakeSignal,
    private readonly log: FastifyBaseLogger,
  ) {
    signal.subscribe(() => {
      for (const stream of this.streams) stream.wake();
    });
  }

  /**
   * A stream of the user's events with an id above `afterId`; undefined: from now on. 429 when the
   * user already has `perUser` streams open in this process.
   */
  async start(userId: number, afterId: number | undefined): Promise<Readable> {
    const from = afterId ?? (await this.events.newestAggregatedId());
    const read = async (after: number, limit: number) =>
      (await this.events.aggregatedAfter(userId, after, limit)).map((event) => ({
        id: event.id,
        text: formatEvent(event),
      }));
    return this.open(userId, from, read);
  }

  /** The newest live event of a bot now: a stream asked to start "from now" starts after it. */
  newestLiveEventId(botId: number): Promise<number> {
    return newestLiveEventId(this.db, botId);
  }

  /**
   * The live stream of one bot (GET /v1/bots/{id}/live; the caller checked it is the user's): its
   * live events with an id above `afterId`, undefined: from now on. Counted in the user's streams.
   */
  async startLive(
    userId: number,
    botId: number,
    afterId: number | undefined,
    format: "sse" | "json-lines" = "sse",
  ): Promise<Readable> {
    const from = afterId ?? (await newestLiveEventId(this.db, botId));
    const read = async (after: number, limit: number) =>
      (await liveEventsAfter(this.db, botId, after, limit)).map((event) => ({
        id: event.id,
        text: format === "sse" ? formatLiveEvent(event) : `${JSON.stringify(event)}\n`,
      }));
    // The WebSocket has its own pings and no reconnect hint: its stream is the events alone.
    return this.open(userId, from, read, format === "sse" ? SSE_FRAMING : PLAIN_FRAMING);
  }

  private open(userId: number, from: number, read: ReadEvents, framing = SSE_FRAMING): Readable {
    // Checked and counted with no await between, so that racing requests cannot both pass.
    if (this.closing) throw new ServiceUnavailableError("The server is shutting down");
    const mine = [...this.streams].filter((s) => s.userId === userId).length;
    if (mine >= this.config.perUser) throw new TooManyStreamsError(this.config.perUser);
    const stream = new EventStream(userId, from, read, framing, this.config, this.log);
    this.streams.add(stream);
    stream.once("close", () => this.streams.delete(stream));
    return stream;
  }

  /** Open streams in this process (all users). */
  get size(): number {
    return this.streams.size;
  }

  /** Ends every stream, so that the server's close does not wait on them. */
  closeAll(): void {
    this.closing = true;
    for (const stream of this.streams) stream.finish();
  }
}

/**
 * One client's stream, as a Readable piped into the response: `_read` is called only while the
 * socket takes what was written, so a client that stops reading stops the table reads too, and
 * what is held for it stays bounded. Stalled for `stallTimeoutMs`, it is destroyed (the client
 * may resume with Last-Event-ID).
 */
class EventStream extends Readable {
  /** Whether the consumer asked for more since the last push that filled the buffer. */
  private wanted = false;
  /** finish() was called: nothing more is pushed. */
  private finished = false;
  private reading = false;
  private readAgain = false;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly pollTimer: NodeJS.Timeout;
  private readonly heartbeatTimer: NodeJS.Timeout;

  constructor(
    readonly userId: number,
    private lastId: number,
    private readonly readEvents: ReadEvents,
    framing: Framing,
    private readonly config: EventStreamConfig,
    private readonly log: FastifyBaseLogger,
  ) {
    super({ highWaterMark: STREAM_BUFFER_BYTES, encoding: "utf8" });
    if (framing.preamble) this.send(framing.preamble);
    this.pollTimer = setInterval(() => this.wake(), config.pollIntervalMs);
    const { ping } = framing;
    this.heartbeatTimer = setInterval(() => {
      if (this.wanted && ping) this.send(ping);
    }, config.heartbeatMs);
  }

  override _read(): void {
    this.wanted = true;
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    this.wake();
  }

  /** Looks for new events now (if the client is taking them). */
  wake(): void {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    if (!this.wanted || this.finished || this.destroyed) return;
    this.reading = true;
    this.readNewEvents()
      .catch((err: unknown) => this.destroy(err as Error))
      .finally(() => {
        this.reading = false;
        if (this.readAgain) {
          this.readAgain = false;
          this.wake();
        }
      });
  }

  /** Ends the stream after what it holds; one whose client stopped reading is cut off. */
  finish(): void {
    this.finished = true;
    if (this.wanted) this.push(null);
    else this.destroy();
    this.stopTimers();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.stopTimers();
    callback(err);
  }

  private async readNewEvents(): Promise<void> {
    while (this.wanted && !this.finished && !this.destroyed) {
      const batch = await this.readEvents(this.lastId, STREAM_BATCH);
      if (this.finished || this.destroyed) return;
      for (const event of batch) {
        // The rest of the batch is read again once the client takes what it was sent: kept
        // here, it would be memory held for a client that may never read.
        if (!this.wanted) return;
        this.lastId = event.id;
        this.send(event.text);
      }
      if (batch.length < STREAM_BATCH) return;
    }
  }

  private send(text: string): void {
    if (this.finished || this.destroyed || this.push(text)) return;
    this.wanted = false;
    this.stallTimer ??= setTimeout(() => {
      this.log.info(
        { userId: this.userId, lastId: this.lastId },
        "event stream client stalled; disconnected",
      );
      this.destroy();
    }, this.config.stallTimeoutMs);
  }

  private stopTimers(): void {
    clearInterval(this.pollTimer);
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.stallTimer);
  }
}

/** One SSE event of a bot's live stream: its id, its type, and the event as JSON. */
export function formatLiveEvent(event: LiveEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** One SSE event: the id to resume from, the event type, and the GET /v1/events item as JSON. */
export function formatEvent(event: AggregatedEvent): string {
  return `id: ${event.id}\nevent: ${event.eventType}\ndata: ${JSON.stringify(event)}\n\n`;
}
