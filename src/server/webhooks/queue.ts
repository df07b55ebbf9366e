import { randomBytes } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { toIso } from "../db/database.js";
import type { Database, DialectName, WebhookDeliveryRow } from "../db/schema.js";
import type { OutboundResult } from "./outbound.js";

/**
 * The delivery queue's states and moves, on the webhook_deliveries table:
 *
 *   pending ──claim──▶ sending ──2xx──▶ succeeded
 *      ▲                  │
 *      └──failed, retry ──┤ (next_attempt_at = now + the next delay)
 *                         └──failed, no retry left──▶ failed
 *
 * A claim is a lease: a "sending" row whose lease has run out (its worker died or was stopped
 * mid-send) is due again, so a restart loses nothing. Each attempt is recorded only by the holder
 * of the current claim (claim_token). Redelivery puts a succeeded or failed row back to pending
 * with a fresh retry schedule.
 */
export type DeliveryState = "pending" | "sending" | "succeeded" | "failed";
export const DELIVERY_STATES = ["pending", "sending", "succeeded", "failed"] as const;

/** Spec §6: retries 30 s, 1 min, 2 min, 4 min and 8 min after each failed attempt; then failed. */
export const RETRY_DELAYS_MS: readonly number[] = [30_000, 60_000, 120_000, 240_000, 480_000];

/**
 * How long a claim holds a delivery (and its endpoint's queue): longer than any attempt can take
 * (DNS and connect, then the response), with room to record it. A sender that died mid-attempt
 * (a worker, or the server during POST /v1/webhooks/{id}/test) holds the endpoint no longer.
 */
export function attemptLeaseMs(timeouts: { connectTimeoutMs: number; responseTimeoutMs: number }): number {
  return timeouts.connectTimeoutMs + timeouts.responseTimeoutMs + 30_000;
}

/** Request and response bodies are kept (and shown) up to this many characters. */
export const MAX_LOGGED_BODY_CHARS = 4096;

/** The `error` of an attempt that got an answer, but not a 2xx one (redirects are not followed). */
export const BAD_STATUS_ERROR = "bad_status";

export type ClaimedDelivery = Pick<
  WebhookDeliveryRow,
  | "id"
  | "public_id"
  | "user_id"
  | "webhook_id"
  | "bot_id"
  | "target_url"
  | "endpoint_key"
  | "event"
  | "payload"
  | "attempts"
  | "round_failures"
> & { claim_token: string };

const CLAIMED_COLUMNS = [
  "id",
  "public_id",
  "user_id",
  "webhook_id",
  "bot_id",
  "target_url",
  "endpoint_key",
  "event",
  "payload",
  "attempts",
  "round_failures",
  "claim_token",
] as const;

/**
 * Claims up to `limit` due deliveries for `leaseMs`, at most one per endpoint: for each endpoint
 * with nothing in flight, its oldest due delivery (a delivery waiting for a retry does not hold
 * later ones back). One UPDATE: on SQLite it runs alone (one writer); on PostgreSQL the
 * candidates are locked FOR UPDATE SKIP LOCKED, so workers in several processes never claim the
 * same row, and a row another worker is claiming right now also keeps the later deliveries of its
 * endpoint out of this claim. With `endpointKey`, only that endpoint's next delivery: an index
 * lookup, where the general claim reads every due row.
 */
export async function claimDueDeliveries(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; leaseMs: number; endpointKey?: string },
): Promise<ClaimedDelivery[]> {
  const endpointKey = opts.endpointKey;
  const now = toIso(opts.now);
  // The state IN (...) is redundant but lets the (state, ...) and (endpoint_key, state, id) indexes
  // skip the finished rows, which pile up.
  const due = (alias: "d" | "q") => {
    const col = (name: string) => sql.ref(`${alias}.${name}`);
    return sql<boolean>`(${col("state")} in ('pending', 'sending')
      and ((${col("state")} = 'pending' and ${col("next_attempt_at")} <= ${now})
        or (${col("state")} = 'sending' and ${col("lease_until")} <= ${now})))`;
  };
  const rows = await db
    .updateTable("webhook_deliveries")
    .set({
      state: "sending",
      lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
      claim_token: randomBytes(12).toString("hex"),
    })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("webhook_deliveries as d")
        .select("d.id")
        // Checked on the row itself too: PostgreSQL re-checks it on the latest version of a row
        // that another worker claimed and committed since this statement's snapshot, and skips it.
        .where(due("d"))
        .$if(endpointKey !== undefined, (qb) => qb.where("d.endpoint_key", "=", endpointKey as string))
        // Each endpoint's oldest due delivery...
        .where("d.id", "in", (sub) =>
          sub
            .selectFrom("webhook_deliveries as q")
            .select((q) => q.fn.min("q.id").as("id"))
            .where(due("q"))
            .$if(endpointKey !== undefined, (qb) => qb.where("q.endpoint_key", "=", endpointKey as string))
            .groupBy("q.endpoint_key"),
        )
        // ...unless another of its deliveries is in flight.
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("webhook_deliveries as busy")
                .select("busy.id")
                .whereRef("busy.endpoint_key", "=", "d.endpoint_key")
                .where("busy.state", "=", "sending")
                .where("busy.lease_until", ">", now),
            ),
          ),
        )
        .orderBy("d.id")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returning(CLAIMED_COLUMNS)
    .execute();
  return (rows as ClaimedDelivery[]).sort((a, b) => a.id - b.id);
}

export interface RecordedAttempt {
  attempt: number;
  state: DeliveryState;
  succeeded: boolean;
  statusCode: number | null;
  error: string | null;
  errorMessage: string | null;
  responseTimeMs: number;
  responseBody: string | null;
  nextAttemptAt: string | null;
}

/**
 * Records one attempt of a claimed delivery and moves it on: succeeded on a 2xx, else pending for
 * the next retry (when `retry` and one is left), else failed. Null when the claim is no longer
 * this caller's (the lease ran out and another worker took over, or the webhook was deleted).
 */
export async function recordAttempt(
  db: Kysely<Database>,
  claimed: ClaimedDelivery,
  result: OutboundResult,
  opts: { now: Date; retry: boolean; retryDelaysMs?: readonly number[] },
): Promise<RecordedAttempt | null> {
  const delays = opts.retryDelaysMs ?? RETRY_DELAYS_MS;
  const succeeded = result.ok && result.statusCode >= 200 && result.statusCode < 300;
  const roundFailures = succeeded ? claimed.round_failures : claimed.round_failures + 1;
  const delay = delays[roundFailures - 1];
  const state: DeliveryState = succeeded
    ? "succeeded"
    : opts.retry && delay !== undefined
      ? "pending"
      : "failed";
  const now = toIso(opts.now);
  const record: RecordedAttempt = {
    attempt: claimed.attempts + 1,
    state,
    succeeded,
    statusCode: result.ok ? result.statusCode : null,
    error: succeeded ? null : result.ok ? BAD_STATUS_ERROR : result.error,
    errorMessage: succeeded ? null : result.ok ? badStatusMessage(result.statusCode) : result.message,
    responseTimeMs: Math.round(result.responseTimeMs),
    responseBody: result.ok ? truncateBody(result.responseBody) : null,
    nextAttemptAt: state === "pending" ? toIso(new Date(opts.now.getTime() + (delay as number))) : null,
  };
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable("webhook_deliveries")
      .set({
        state,
        attempts: record.attempt,
        round_failures: roundFailures,
        next_attempt_at: record.nextAttemptAt,
        lease_until: null,
        claim_token: null,
        last_attempt_at: now,
        last_status_code: record.statusCode,
        last_error: record.error,
        last_error_message: record.errorMessage,
        last_response_time_ms: record.responseTimeMs,
        last_response_body: record.responseBody,
      })
      .where("id", "=", claimed.id)
      .where("state", "=", "sending")
      .where("claim_token", "=", claimed.claim_token)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== 1) return null;
    await trx
      .insertInto("webhook_delivery_attempts")
      .values({
        delivery_id: claimed.id,
        webhook_id: claimed.webhook_id,
        attempt: record.attempt,
        attempted_at: now,
        succeeded: succeeded ? 1 : 0,
        status_code: record.statusCode,
        error: record.error,
        error_message: record.errorMessage,
        response_time_ms: record.responseTimeMs,
        response_body: record.responseBody,
      })
      .execute();
    return record;
  });
}

/**
 * Redelivery by hand: a succeeded or failed delivery goes back to pending, due now, with a fresh
 * retry schedule (same X-Webhook-Id and body; attempt numbers carry on). False if it is still
 * queued or being sent.
 */
export async function requeueDelivery(db: Kysely<Database>, deliveryId: number, now: Date): Promise<boolean> {
  const result = await db
    .updateTable("webhook_deliveries")
    .set({ state: "pending", round_failures: 0, next_attempt_at: toIso(now) })
    .where("id", "=", deliveryId)
    .where("state", "in", ["succeeded", "failed"])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export function truncateBody(body: string): string {
  return body.length > MAX_LOGGED_BODY_CHARS ? body.slice(0, MAX_LOGGED_BODY_CHARS) : body;
}

function badStatusMessage(statusCode: number): string {
  const redirect = statusCode >= 300 && statusCode < 400 ? " (redirects are not followed)" : "";
  return `the receiver answered HTTP ${statusCode}${redirect}`;
}

/**
 * Deletes finished deliveries (succeeded or failed) whose last attempt, or creation when never
 * attempted, is before `before`; their attempts go with them. Pending ones stay however old.
 * Returns how many deliveries were deleted.
 */
export async function pruneFinishedDeliveries(db: Kysely<Database>, before: Date): Promise<number> {
  const cutoff = before.toISOString();
  const result = await db
    .deleteFrom("webhook_deliveries")
    .where("state", "in", ["succeeded", "failed"])
    .where((eb) =>
      eb.or([
        eb("last_attempt_at", "<", cutoff),
        eb.and([eb("last_attempt_at", "is", null), eb("created_at", "<", cutoff)]),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
