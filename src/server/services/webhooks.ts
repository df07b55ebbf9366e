import { randomBytes } from "node:crypto";
import type { Expression, ExpressionBuilder, SqlBool } from "kysely";
import { toIso } from "../db/database.js";
import type { Database, WebhookDeliveryRow, WebhookRow } from "../db/schema.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type {
  CallbackDeliveryListQuery,
  CreateWebhookBody,
  DeliveryListQuery,
  SigningSecret,
  UpdateWebhookBody,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookDeliveryList,
  WebhookDetail,
  WebhookList,
  WebhookStatistics,
  WebhookTestResult,
  WebhookWithSecret,
} from "../schemas/index.js";
import type { Deliverer } from "../webhooks/deliver.js";
import { TEST_EVENT } from "../webhooks/events.js";
import { checkTargetUrl } from "../webhooks/outbound.js";
import { deliveryPayload, webhookEndpointKey } from "../webhooks/outbox.js";
import { attemptLeaseMs, type DeliveryState, requeueDelivery, truncateBody } from "../webhooks/queue.js";
import {
  newDeliveryId,
  newWebhookSecret,
  rotateSigningSecret,
  signingSecretOf,
} from "../webhooks/secrets.js";
import type { ServiceContext } from "./context.js";

/** Each event is queued once per subscribed webhook: this bounds one event's fan-out. */
export const MAX_WEBHOOKS_PER_USER = 20;
/** p50ResponseTimeMs is the median of this many latest attempts that got an answer. */
const P50_WINDOW = 1000;

/** /v1/webhooks: endpoints, their delivery logs, redelivery, and the callbackUrl signing secret. */
export class WebhookService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly deliverer: Deliverer,
  ) {}

  async create(userId: number, input: CreateWebhookBody): Promise<WebhookWithSecret> {
    this.checkUrl(input.url);
    const now = toIso(this.ctx.now());
    const { count } = await this.ctx.db
      .selectFrom("webhooks")
      .select((eb) => eb.fn.countAll().as("count"))
      .where("user_id", "=", userId)
      .where("api", "=", "bot")
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_WEBHOOKS_PER_USER) {
      throw new ConflictError(`A user can have at most ${MAX_WEBHOOKS_PER_USER} webhooks`);
    }
    const row = await this.ctx.db
      .insertInto("webhooks")
      .values({
        user_id: userId,
        name: input.name,
        url: input.url,
        events: JSON.stringify(input.events),
        secret: newWebhookSecret(),
        is_active: input.isActive ? 1 : 0,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...toWebhook(row), secret: row.secret };
  }

  async list(userId: number): Promise<WebhookList> {
    const rows = await this.ctx.db
      .selectFrom("webhooks")
      .selectAll()
      .where("user_id", "=", userId)
      .where("api", "=", "bot")
      .orderBy("id", "asc")
      .execute();
    return { webhooks: rows.map(toWebhook), total: rows.length };
  }

  async get(userId: number, webhookId: number): Promise<WebhookDetail> {
    const row = await this.requireOwned(userId, webhookId);
    return { ...toWebhook(row), statistics: await this.statistics(webhookId) };
  }

  async update(userId: number, webhookId: number, input: UpdateWebhookBody): Promise<Webhook> {
    await this.requireOwned(userId, webhookId);
    if (input.url !== undefined) this.checkUrl(input.url);
    await this.ctx.db
      .updateTable("webhooks")
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.events !== undefined ? { events: JSON.stringify(input.events) } : {}),
        ...(input.isActive !== undefined ? { is_active: input.isActive ? 1 : 0 } : {}),
        updated_at: toIso(this.ctx.now()),
      })
      .where("id", "=", webhookId)
      .execute();
    return toWebhook(await this.requireOwned(userId, webhookId));
  }

  /** Deletes the webhook with its delivery log; its queued deliveries are not sent. */
  async remove(userId: number, webhookId: number): Promise<void> {
    const result = await this.ctx.db
      .deleteFrom("webhooks")
      .where("id", "=", webhookId)
      .where("user_id", "=", userId)
      .where("api", "=", "bot")
      .executeTakeFirst();
    if (Number(result.numDeletedRows) !== 1) throw new WebhookNotFoundError();
  }

  /** A new secret at once: every delivery from now on (queued retries too) is signed with it. */
  async rotateSecret(userId: number, webhookId: number): Promise<WebhookWithSecret> {
    await this.requireOwned(userId, webhookId);
    const secret = newWebhookSecret();
    await this.ctx.db
      .updateTable("webhooks")
      .set({ secret, updated_at: toIso(this.ctx.now()) })
      .where("id", "=", webhookId)
      .execute();
    return { ...toWebhook(await this.requireOwned(userId, webhookId)), secret };
  }

  /**
   * Sends a signed `webhook.test` event now (active or not), through the same signing and
   * outbound client as every delivery, and answers how the receiver took it. Recorded in the
   * delivery log as a delivery with one attempt; never retried.
   */
  async test(userId: number, webhookId: number): Promise<WebhookTestResult> {
    const webhook = await this.requireOwned(userId, webhookId);
    const now = this.ctx.now();
    const claimToken = randomBytes(12).toString("hex");
    const row = await this.ctx.db
      .insertInto("webhook_deliveries")
      .values({
        public_id: newDeliveryId(),
        user_id: userId,
        webhook_id: webhookId,
        bot_id: null,
        target_url: null,
        endpoint_key: webhookEndpointKey(webhookId),
        event: TEST_EVENT,
        payload: deliveryPayload(TEST_EVENT, null, toIso(now), {
          webhookId,
          name: webhook.name,
          message: "This is a test delivery from meetbot.",
        }),
        // Claimed from the start: the worker leaves it alone, and holds this endpoint's queue
        // back meanwhile (one delivery in flight per endpoint).
        state: "sending",
        attempts: 0,
        round_failures: 0,
        next_attempt_at: null,
        // As long as a worker's claim: if this process dies mid-send, the endpoint's queue waits
        // no longer than after a worker's crash, and a worker then sends the test once more.
        lease_until: toIso(new Date(now.getTime() + attemptLeaseMs(this.ctx.config.outbound))),
        claim_token: claimToken,
        created_at: toIso(now),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const recorded = await this.deliverer.attempt({ ...row, claim_token: claimToken }, { retry: false });
    const delivery = await this.ctx.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where("id", "=", row.id)
      .executeTakeFirst();
    // Deleted while the test ran: nothing recorded, nothing left to show.
    if (!recorded || !delivery) throw new WebhookNotFoundError();
    this.ctx.outbox.notify(); // the endpoint's queue may have waited on this send
    return {
      success: recorded.succeeded,
      statusCode: recorded.statusCode,
      responseTimeMs: recorded.responseTimeMs,
      error: recorded.error,
      errorMessage: recorded.errorMessage,
      delivery: toDelivery(delivery),
    };
  }

  async deliveries(
    userId: number,
    webhookId: number,
    query: DeliveryListQuery,
  ): Promise<WebhookDeliveryList> {
    await this.requireOwned(userId, webhookId);
    return this.listDeliveries((eb) => eb("webhook_id", "=", webhookId), query);
  }

  async delivery(userId: number, webhookId: number, deliveryId: number): Promise<WebhookDeliveryDetail> {
    await this.requireOwned(userId, webhookId);
    return this.deliveryDetail((eb) => eb.and([eb("id", "=", deliveryId), eb("webhook_id", "=", webhookId)]));
  }

  async redeliver(userId: number, webhookId: number, deliveryId: number): Promise<WebhookDelivery> {
    await this.requireOwned(userId, webhookId);
    return this.requeue((eb) => eb.and([eb("id", "=", deliveryId), eb("webhook_id", "=", webhookId)]));
  }

  // ---- The bots' callbackUrl ---------------------------------------------------------------------

  /** The secret that signs deliveries to the callbackUrl of the user's bots (made on first use). */
  signingSecret(userId: number): Promise<SigningSecret> {
    return signingSecretOf(this.ctx.db, userId, toIso(this.ctx.now()));
  }

  rotateSigningSecret(userId: number): Promise<SigningSecret> {
    return rotateSigningSecret(this.ctx.db, userId, toIso(this.ctx.now()));
  }

  callbackDeliveries(userId: number, query: CallbackDeliveryListQuery): Promise<WebhookDeliveryList> {
    return this.listDeliveries(
      (eb) =>
        eb.and([
          eb("user_id", "=", userId),
          eb("webhook_id", "is", null),
          ...(query.bot_id !== undefined ? [eb("bot_id", "=", query.bot_id)] : []),
        ]),
      query,
    );
  }

  callbackDelivery(userId: number, deliveryId: number): Promise<WebhookDeliveryDetail> {
    return this.deliveryDetail(callbackDeliveryOf(userId, deliveryId));
  }

  redeliverCallback(userId: number, deliveryId: number): Promise<WebhookDelivery> {
    return this.requeue(callbackDeliveryOf(userId, deliveryId));
  }

  // ---- Shared ------------------------------------------------------------------------------------

  private async requireOwned(userId: number, webhookId: number): Promise<WebhookRow> {
    const row = await this.ctx.db
      .selectFrom("webhooks")
      .selectAll()
      .where("id", "=", webhookId)
      .where("user_id", "=", userId)
      // The notes interface's webhooks are its own (src/notes/webhooks.ts).
      .where("api", "=", "bot")
      .executeTakeFirst();
    if (!row) throw new WebhookNotFoundError();
    return row;
  }

  /** Save-time SSRF check (the connect-time one happens at every attempt). */
  private checkUrl(url: string): void {
    const refusal = checkTargetUrl(url, this.ctx.config.outbound);
    if (refusal !== null) {
      throw new ValidationError([{ loc: ["body", "url"], msg: refusal, type: "value_error" }]);
    }
  }

  private async listDeliveries(scope: DeliveryScope, query: DeliveryListQuery): Promise<WebhookDeliveryList> {
    const base = this.ctx.db
      .selectFrom("webhook_deliveries")
      .where(scope)
      .$if(query.status !== undefined, (qb) => qb.where("state", "=", query.status as DeliveryState));
    const { total } = await base.select((eb) => eb.fn.countAll().as("total")).executeTakeFirstOrThrow();
    const rows = await base
      .selectAll()
      .orderBy("id", "desc")
      .limit(query.page_size)
      .offset((query.page - 1) * query.page_size)
      .execute();
    return {
      deliveries: rows.map(toDelivery),
      total: Number(total),
      page: query.page,
      page_size: query.page_size,
    };
  }

  private async deliveryDetail(scope: DeliveryScope): Promise<WebhookDeliveryDetail> {
    const row = await this.ctx.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where(scope)
      .executeTakeFirst();
    if (!row) throw new DeliveryNotFoundError();
    const attempts = await this.ctx.db
      .selectFrom("webhook_delivery_attempts")
      .selectAll()
      .where("delivery_id", "=", row.id)
      .orderBy("id", "asc")
      .execute();
    return {
      ...toDelivery(row),
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        attemptedAt: a.attempted_at,
        succeeded: a.succeeded === 1,
        statusCode: a.status_code,
        error: a.error,
        errorMessage: a.error_message,
        responseTimeMs: a.response_time_ms,
        responseBody: a.response_body,
      })),
    };
  }

  /** 409 while the delivery is still queued or being sent: it will go out anyway. */
  private async requeue(scope: DeliveryScope): Promise<WebhookDelivery> {
    const row = await this.ctx.db
      .selectFrom("webhook_deliveries")
      .select("id")
      .where(scope)
      .executeTakeFirst();
    if (!row) throw new DeliveryNotFoundError();
    if (!(await requeueDelivery(this.ctx.db, row.id, this.ctx.now()))) {
      throw new ConflictError("Delivery is still queued or being sent");
    }
    this.ctx.outbox.notify();
    const updated = await this.ctx.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where("id", "=", row.id)
      .executeTakeFirstOrThrow();
    return toDelivery(updated);
  }

  private async statistics(webhookId: number): Promise<WebhookStatistics> {
    const db = this.ctx.db;
    const byState = await db
      .selectFrom("webhook_deliveries")
      .select((eb) => ["state", eb.fn.countAll().as("count")])
      .where("webhook_id", "=", webhookId)
      .groupBy("state")
      .execute();
    const count = (...states: DeliveryState[]) =>
      byState
        .filter((r) => states.includes(r.state as DeliveryState))
        .reduce((n, r) => n + Number(r.count), 0);
    const totals = await db
      .selectFrom("webhook_delivery_attempts")
      .select((eb) => [
        eb.fn.countAll().as("attempts"),
        eb.fn.sum<number | null>("succeeded").as("successes"),
      ])
      .where("webhook_id", "=", webhookId)
      .executeTakeFirstOrThrow();
    const last = await db
      .selectFrom("webhook_delivery_attempts")
      .select(["status_code", "error", "attempted_at"])
      .where("webhook_id", "=", webhookId)
      .orderBy("id", "desc")
      .limit(1)
      .executeTakeFirst();
    const times = await db
      .selectFrom("webhook_delivery_attempts")
      .select("response_time_ms")
      .where("webhook_id", "=", webhookId)
      .where("status_code", "is not", null)
      .orderBy("id", "desc")
      .limit(P50_WINDOW)
      .execute();
    const attempts = Number(totals.attempts);
    const successes = Number(totals.successes ?? 0);
    return {
      deliveries: count("pending", "sending", "succeeded", "failed"),
      pending: count("pending", "sending"),
      succeeded: count("succeeded"),
      failed: count("failed"),
      attempts,
      successes,
      failures: attempts - successes,
      lastStatusCode: last?.status_code ?? null,
      lastError: last?.error ?? null,
      lastAttemptAt: last?.attempted_at ?? null,
      p50ResponseTimeMs: median(times.map((t) => t.response_time_ms)),
    };
  }
}

export class WebhookNotFoundError extends NotFoundError {
  constructor() {
    super("Webhook not found");
  }
}

export class DeliveryNotFoundError extends NotFoundError {
  constructor() {
    super("Delivery not found");
  }
}

/** Which deliveries a query may see: the caller's, and of the webhook in the path. */
type DeliveryScope = (eb: ExpressionBuilder<Database, "webhook_deliveries">) => Expression<SqlBool>;

function callbackDeliveryOf(userId: number, deliveryId: number): DeliveryScope {
  return (eb) =>
    eb.and([eb("id", "=", deliveryId), eb("user_id", "=", userId), eb("webhook_id", "is", null)]);
}

function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    isActive: row.is_active === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toDelivery(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    deliveryId: row.public_id,
    webhookId: row.webhook_id,
    botId: row.bot_id,
    event: row.event,
    status: row.state as DeliveryState,
    attempt: row.attempts,
    statusCode: row.last_status_code,
    error: row.last_error,
    errorMessage: row.last_error_message,
    responseTimeMs: row.last_response_time_ms,
    nextAttemptAt: row.state === "pending" ? row.next_attempt_at : null,
    lastAttemptAt: row.last_attempt_at,
    createdAt: row.created_at,
    requestBody: truncateBody(row.payload),
    responseBody: row.last_response_body,
  };
}

/** The lower median (nearest rank), or null for no values. */
function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length / 2) - 1] as number;
}
