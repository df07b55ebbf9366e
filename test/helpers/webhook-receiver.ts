import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type VerifyResult, verifyWebhook, type WebhookPayload } from "../../src/client/webhooks.js";

/**
 * A real webhook receiver on 127.0.0.1 (free port) for tests. Every request is verified with the
 * shipped helper (src/client/webhooks.ts) against the secret the test registered for its path,
 * and answered by that path's behaviour: 200 by default; a delivery that does not verify gets a
 * 401 (as a careful receiver would answer).
 */
export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  verification: VerifyResult;
  /** The delivery's X-Webhook-Id and event name, when it verified. */
  id: string | undefined;
  event: string | undefined;
  /** The body, when it is a delivery's payload (as the shipped helper types it); else undefined. */
  body: WebhookPayload | undefined;
}

/** What a path answers: a status (and body), or nothing at all (the request hangs). */
export type Behaviour = { status: number; body?: string; headers?: Record<string, string> } | { hang: true };

export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** TCP connections accepted, verified or not: "saw nothing" means this stayed 0. */
  connections = 0;
  /** Requests being handled right now, per path (for the one-in-flight-per-endpoint check). */
  readonly inFlight = new Map<string, number>();
  /** The most requests one path ever had in flight at once. */
  readonly maxInFlight = new Map<string, number>();
  private readonly secrets = new Map<string, string | string[]>();
  private readonly behaviours = new Map<string, (n: number) => Behaviour>();
  private readonly sockets = new Set<Socket>();
  private readonly waiters = new Set<() => void>();
  private delayMs = 0;
  url = "";

  private readonly server = createServer((req, res) => void this.handle(req, res));

  /** The receiver verifies with `now()`: the test's clock when it moves time. */
  constructor(private readonly now: () => Date = () => new Date()) {
    this.server.on("connection", (socket) => {
      this.connections += 1;
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The URL of `path` on this receiver, verified with `secret` (set it once known). */
  endpoint(path: string): string {
    return `${this.url}${path}`;
  }

  setSecret(path: string, secret: string | string[]): void {
    this.secrets.set(path, secret);
  }

  /** `behaviour(n)` answers the n-th request (from 1) to `path`. */
  on(path: string, behaviour: (n: number) => Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  /** Every answer waits this long first (to give concurrent requests a chance to overlap). */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  at(path: string): ReceivedDelivery[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once `condition` holds (checked on every request), or rejects after `timeoutMs`. */
  async waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
    if (condition()) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(`receiver: condition not met within ${timeoutMs} ms (${this.received.length} received)`),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    this.inFlight.set(path, (this.inFlight.get(path) ?? 0) + 1);
    this.maxInFlight.set(path, Math.max(this.maxInFlight.get(path) ?? 0, this.inFlight.get(path) ?? 0));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString("utf8");
    const secret = this.secrets.get(path);
    const verification: VerifyResult = secret
      ? verifyWebhook({ rawBody, headers: req.headers, secret, now: this.now() })
      : { ok: false, reason: "signature_mismatch" };
    this.received.push({
      path,
      headers: req.headers,
      rawBody,
      verification,
      id: verification.ok ? verification.webhook.id : undefined,
      event: verification.ok ? verification.webhook.event : undefined,
      body: payloadOf(rawBody),
    });
    const n = this.at(path).length;
    const behaviour = verification.ok
      ? (this.behaviours.get(path)?.(n) ?? { status: 200, body: "ok" })
      : { status: 401, body: `bad signature: ${verification.reason}` };
    for (const waiter of [...this.waiters]) waiter();
    if ("hang" in behaviour) {
      res.on("close", () => this.inFlight.set(path, (this.inFlight.get(path) ?? 1) - 1));
      return;
    }
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    this.inFlight.set(path, (this.inFlight.get(path) ?? 1) - 1);
    res.writeHead(behaviour.status, { "content-type": "text/plain", ...behaviour.headers });
    res.end(behaviour.body ?? "");
  }
}

/** `rawBody` as a delivery's payload: JSON with the fields every delivery has; else undefined. */
function payloadOf(rawBody: string): WebhookPayload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(rawBody);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const fields = value as Record<string, unknown>;
  const isPayload =
    typeof fields.event === "string" &&
    (typeof fields.botId === "number" || fields.botId === null) &&
    typeof fields.timestamp === "string" &&
    typeof fields.data === "object" &&
    fields.data !== null;
  return isPayload ? (value as WebhookPayload) : undefined;
}
