import { type ClientRequest, get, type IncomingMessage } from "node:http";
import { text } from "node:stream/consumers";
import { z } from "zod";
import { AggregatedEvent } from "../../src/server/schemas/events.js";
import { LiveEvent } from "../../src/server/schemas/live.js";

/**
 * What a stream's `data` is, parsed with the server's own schemas: an item of GET /v1/events
 * (GET /v1/events/stream) or of a bot's live stream (GET /v1/bots/{id}/live).
 */
const StreamItem = z.union([AggregatedEvent, LiveEvent]);
export type StreamItem = z.infer<typeof StreamItem>;

/** One server-sent event as a client receives it. */
export interface SseEvent {
  id: string;
  event: string;
  data: StreamItem;
}

/**
 * A client reading the stream as it arrives; keeps every event it got. Its own connection (no
 * keep-alive pool), so that closing it closes exactly that connection.
 */
export class StreamClient {
  readonly events: SseEvent[] = [];
  retry: number | undefined;
  /** `: ping` comments received. */
  pings = 0;
  ended = false;
  /** An event whose data the schemas refused: the stream is not what the server documents. */
  invalid: Error | undefined;
  body: unknown;
  contentType: string | undefined;
  private readonly waiters = new Set<() => void>();
  private constructor(
    readonly status: number,
    private readonly request: ClientRequest,
  ) {}

  static open(
    baseUrl: string,
    token: string | undefined,
    headers: Record<string, string> = {},
    path = "/v1/events/stream",
  ): Promise<StreamClient> {
    return new Promise((resolve, reject) => {
      const request = get(
        new URL(path, baseUrl),
        { agent: false, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } },
        (response) => {
          const client = new StreamClient(response.statusCode as number, request);
          client.contentType = response.headers["content-type"];
          if (client.status === 200) {
            void client.read(response);
            resolve(client);
          } else {
            void text(response).then((body) => {
              client.body = JSON.parse(body);
              resolve(client);
            }, reject);
          }
        },
      );
      request.on("error", reject);
    });
  }

  /** Waits until `done` holds for the events received so far. */
  async until(done: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
    while (!done(this.events)) {
      if (this.invalid) throw this.invalid;
      if (this.ended) throw new Error(`stream ended; got ${JSON.stringify(this.events.map((e) => e.event))}`);
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
    return this.events;
  }

  /** Waits until the server ends the stream. */
  async untilEnded(): Promise<void> {
    while (!this.ended) await new Promise<void>((resolve) => this.waiters.add(resolve));
  }

  close(): void {
    this.request.destroy();
  }

  private async read(response: IncomingMessage): Promise<void> {
    response.setEncoding("utf8");
    let text = "";
    try {
      for await (const chunk of response) {
        text += chunk as string;
        let end: number;
        while ((end = text.indexOf("\n\n")) >= 0) {
          this.parse(text.slice(0, end));
          text = text.slice(end + 2);
        }
        this.notify();
      }
    } catch {
      // aborted by close(), or cut by the server
    }
    this.ended = true;
    this.notify();
  }

  private parse(block: string): void {
    const fields = new Map<string, string>();
    for (const line of block.split("\n")) {
      if (line === ": ping") this.pings += 1;
      if (line.startsWith(":")) continue; // a comment
      const colon = line.indexOf(": ");
      fields.set(line.slice(0, colon), line.slice(colon + 2));
    }
    if (fields.has("retry")) this.retry = Number(fields.get("retry"));
    if (fields.has("data")) {
      const data = StreamItem.safeParse(JSON.parse(fields.get("data") as string));
      if (!data.success) {
        this.invalid ??= new Error(`stream event ${fields.get("event")}: ${data.error.message}`);
        return;
      }
      this.events.push({
        id: fields.get("id") as string,
        event: fields.get("event") as string,
        data: data.data,
      });
    }
  }

  private notify(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}
