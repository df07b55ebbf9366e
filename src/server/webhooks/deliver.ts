import type { Kysely } from "kysely";
import { signWebhook } from "../../client/webhooks.js";
import { toIso } from "../db/database.js";
import type { Database } from "../db/schema.js";
import type { OutboundClient } from "./outbound.js";
import { type ClaimedDelivery, type RecordedAttempt, recordAttempt } from "./queue.js";
import { signingSecretOf } from "./secrets.js";

export interface DelivererDeps {
  db: Kysely<Database>;
  now(): Date;
  outbound: OutboundClient;
  /** Default: the spec's schedule (RETRY_DELAYS_MS). */
  retryDelaysMs?: readonly number[];
}

/**
 * One attempt of one claimed delivery: find where it goes and the secret that signs it (both read
 * now, so a changed webhook URL or a rotated secret applies to retries too), sign with this
 * attempt's timestamp, POST through the SSRF-safe outbound client, record the attempt.
 */
export class Deliverer {
  constructor(private readonly deps: DelivererDeps) {}

  /**
   * `retry`: whether a failure schedules the next retry (the test endpoint's sends do not).
   * `abandoned`: asked when the answer is in; true (the worker is shutting down) leaves the claim
   * to run out instead of recording, so the delivery is sent again rather than lost.
   */
  async attempt(
    claimed: ClaimedDelivery,
    opts: { retry: boolean; abandoned?: () => boolean },
  ): Promise<RecordedAttempt | null> {
    const target = await this.targetOf(claimed);
    if (!target) return null; // the webhook was deleted, and its deliveries with it
    const timestamp = Math.floor(this.deps.now().getTime() / 1000);
    const result = await this.deps.outbound.post(target.url, claimed.payload, {
      "Content-Type": "application/json",
      "User-Agent": "meetbot-webhooks/1",
      "X-Webhook-Signature": signWebhook(target.secret, timestamp, claimed.payload),
      "X-Webhook-Timestamp": String(timestamp),
      "X-Webhook-Id": claimed.public_id,
      "X-Webhook-Event": claimed.event,
    });
    if (opts.abandoned?.()) return null;
    return recordAttempt(this.deps.db, claimed, result, {
      now: this.deps.now(),
      retry: opts.retry,
      ...(this.deps.retryDelaysMs ? { retryDelaysMs: this.deps.retryDelaysMs } : {}),
    });
  }

  private async targetOf(claimed: ClaimedDelivery): Promise<{ url: string; secret: string } | null> {
    if (claimed.webhook_id !== null) {
      const webhook = await this.deps.db
        .selectFrom("webhooks")
        .select(["url", "secret"])
        .where("id", "=", claimed.webhook_id)
        .executeTakeFirst();
      return webhook ?? null;
    }
    const { secret } = await signingSecretOf(this.deps.db, claimed.user_id, toIso(this.deps.now()));
    return { url: claimed.target_url as string, secret };
  }
}
