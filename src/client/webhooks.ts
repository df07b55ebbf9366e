import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Webhook signatures, for both sides: the server signs every delivery with `signWebhook`, and a
 * receiver checks it with `verifyWebhook` (or `constructWebhookEvent`, which throws). No imports
 * beyond node:crypto, so a receiver can use the compiled file on its own.
 *
 *   X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<X-Webhook-Timestamp>.<raw body>">
 *
 * keyed with the secret exactly as shown (the whole `whsec_...` string, as UTF-8).
 */

/** Spec §6: a delivery whose timestamp is further than this from the receiver's clock is refused. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

export const SIGNATURE_HEADER = "x-webhook-signature";
export const TIMESTAMP_HEADER = "x-webhook-timestamp";
export const ID_HEADER = "x-webhook-id";
export const EVENT_HEADER = "x-webhook-event";

/** The body of every delivery. */
export interface WebhookPayload {
  event: string;
  /** null only for the test event of POST /v1/webhooks/{id}/test. */
  botId: number | null;
  /** When the event happened (ISO 8601, UTC). */
  timestamp: string;
  data: Record<string, unknown>;
}

/** A verified delivery: the parsed body and its delivery id (the same on every retry). */
export interface VerifiedWebhook {
  id: string;
  event: string;
  payload: WebhookPayload;
}

export type VerifyFailure =
  | "missing_header"
  | "malformed_timestamp"
  | "timestamp_out_of_tolerance"
  | "malformed_signature"
  | "signature_mismatch"
  | "malformed_body";

export type VerifyResult = { ok: true; webhook: VerifiedWebhook } | { ok: false; reason: VerifyFailure };

/** Node's IncomingHttpHeaders, a fetch Headers, or any plain object of header names (any case). */
export type HeadersLike =
  { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The raw request body, byte for byte as received (not re-serialized JSON). */
  rawBody: string | Uint8Array;
  headers: HeadersLike;
  /** The webhook's secret; several while a receiver switches to a rotated one. */
  secret: string | readonly string[];
  /** Default 300 s (spec §6). */
  toleranceSeconds?: number;
  /** The receiver's clock; default the current time. */
  now?: Date;
}

/** `sha256=` + the hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with `secret`. */
export function signWebhook(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  const hmac = createHmac("sha256", secret);
  hmac.update(`${timestamp}.`);
  hmac.update(rawBody);
  return `sha256=${hmac.digest("hex")}`;
}

/**
 * Checks a delivery: the headers are present, the timestamp is within the tolerance of `now`, the
 * signature matches (compared in constant time) for one of the secrets, and the body is a JSON
 * delivery. A replayed delivery passes as long as its timestamp is fresh: deduplicate by the
 * returned `id` (X-Webhook-Id), for example with `WebhookIdCache`.
 */
export function verifyWebhook(options: VerifyOptions): VerifyResult {
  const signature = header(options.headers, SIGNATURE_HEADER);
  const timestampText = header(options.headers, TIMESTAMP_HEADER);
  const id = header(options.headers, ID_HEADER);
  if (!signature || !timestampText || !id) return { ok: false, reason: "missing_header" };
  if (!/^[0-9]{1,12}$/.test(timestampText)) return { ok: false, reason: "malformed_timestamp" };
  const timestamp = Number(timestampText);
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - timestamp) > tolerance)
    return { ok: false, reason: "timestamp_out_of_tolerance" };
  if (!/^sha256=[0-9a-f]{64}$/.test(signature)) return { ok: false, reason: "malformed_signature" };

  const received = Buffer.from(signature.slice("sha256=".length), "hex");
  const secrets = typeof options.secret === "string" ? [options.secret] : options.secret;
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(
      signWebhook(secret, timestamp, options.rawBody).slice("sha256=".length),
      "hex",
    );
    // Every secret is tried, so the time taken does not tell which one (or whether any) matched.
    if (timingSafeEqual(expected, received)) matched = true;
  }
  if (!matched) return { ok: false, reason: "signature_mismatch" };

  const payload = parsePayload(options.rawBody);
  if (!payload) return { ok: false, reason: "malformed_body" };
  return { ok: true, webhook: { id, event: payload.event, payload } };
}

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  constructor(readonly reason: VerifyFailure) {
    super(`webhook verification failed: ${reason}`);
  }
}

/** `verifyWebhook` for code that prefers exceptions: the verified delivery, or a throw with the reason. */
export function constructWebhookEvent(options: VerifyOptions): VerifiedWebhook {
  const result = verifyWebhook(options);
  if (!result.ok) throw new WebhookVerificationError(result.reason);
  return result.webhook;
}

/**
 * An optional aid against replays and retries: remembers delivery ids for a while. A delivery is
 * retried (and may be redelivered by hand) with the same X-Webhook-Id, and a captured request can
 * be replayed within the timestamp tolerance, so a receiver that must act once per delivery
 * checks `firstSeen(id)` after verifying. In memory, per process: a receiver with several
 * processes keeps the ids in its own database instead.
 */
export class WebhookIdCache {
  private readonly seen = new Map<string, number>();

  /** Ids are kept `ttlSeconds` (default 24 h, longer than the whole retry schedule), at most `maxIds`. */
  constructor(
    private readonly ttlSeconds = 24 * 60 * 60,
    private readonly maxIds = 100_000,
  ) {}

  /** True the first time an id is seen (within its time to live), false for a repeat. */
  firstSeen(id: string, now: Date = new Date()): boolean {
    const at = now.getTime();
    const until = this.seen.get(id);
    if (until !== undefined && until > at) return false;
    this.seen.delete(id);
    // The map iterates in insertion order: the oldest entries go first.
    for (const [oldId, oldUntil] of this.seen) {
      if (this.seen.size < this.maxIds && oldUntil > at) break;
      this.seen.delete(oldId);
    }
    this.seen.set(id, at + this.ttlSeconds * 1000);
    return true;
  }
}

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof headers.get === "function") return headers.get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function parsePayload(rawBody: string | Uint8Array): WebhookPayload | null {
  try {
    const text = typeof rawBody === "string" ? rawBody : Buffer.from(rawBody).toString("utf8");
    const value = JSON.parse(text) as Partial<WebhookPayload> | null;
    if (!value || typeof value !== "object" || typeof value.event !== "string") return null;
    if (typeof value.timestamp !== "string" || typeof value.data !== "object" || value.data === null) {
      return null;
    }
    return value as WebhookPayload;
  } catch {
    return null;
  }
}
