import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import {
  type CallbackEvent,
  EXPLICIT_ONLY_WEBHOOK_EVENTS,
  type WebhookEventData,
  webhookEventsFor,
} from "../../core/index.js";
import type { Database } from "../db/schema.js";
import { isSubscribed } from "./events.js";
import { newDeliveryId } from "./secrets.js";

/**
 * The write side of the outbox. Callers run `enqueueWebhookEvents` inside the transaction that
 * records the event itself, so a delivery exists exactly when its event does (a rolled-back event
 * leaves none; a duplicate runner event, refused by the (bot, seq) check, makes none). Once that
 * transaction has committed, the context's `outbox` WakeSignal wakes this process's worker at
 * once; other processes find the rows by polling.
 */

export interface OutboxBot {
  id: number;
  user_id: number;
  callback_url: string | null;
}

/** Deliveries to one endpoint go one at a time in order; this names the endpoint. */
export function webhookEndpointKey(webhookId: number): string {
  return `webhook:${webhookId}`;
}

export function callbackEndpointKey(url: string): string {
  return `callback:${createHash("sha256").update(url).digest("hex").slice(0, 40)}`;
}

/** The delivery body: spec §6's `{event, botId, timestamp, data}`. */
export function deliveryPayload(
  event: string,
  botId: number | null,
  timestamp: string,
  data: object,
): string {
  return JSON.stringify({ event, botId, timestamp, data });
}

/**
 * Queues one delivery per event for each of the owner's active webhooks subscribed to it, and
 * one to the bot's callbackUrl (which gets all of its bot's events). Rows are inserted event by
 * event, so each endpoint's deliveries have ids in event order. Returns how many were queued.
 */
export async function enqueueWebhookEvents(
  db: Kysely<Database>,
  bot: Omit<OutboxBot, "id"> & { id: number | null },
  events: readonly WebhookEventData[],
  eventTime: string,
  now: string,
): Promise<number> {
  if (events.length === 0) return 0;
  const webhooks = await db
    .selectFrom("webhooks")
    .select(["id", "events"])
    .where("user_id", "=", bot.user_id)
    .where("is_active", "=", 1)
    .where("api", "=", "bot")
    .orderBy("id")
    .execute();
  const rows = [];
  for (const { event, data } of events) {
    const payload = deliveryPayload(event, bot.id, eventTime, data);
    const common = {
      user_id: bot.user_id,
      bot_id: bot.id,
      event,
      payload,
      state: "pending",
      attempts: 0,
      round_failures: 0,
      next_attempt_at: now,
      created_at: now,
    };
    for (const webhook of webhooks) {
      if (!isSubscribed(JSON.parse(webhook.events) as string[], event)) continue;
      rows.push({
        ...common,
        public_id: newDeliveryId(),
        webhook_id: webhook.id,
        target_url: null,
        endpoint_key: webhookEndpointKey(webhook.id),
      });
    }
    // The bot's callbackUrl takes what "*" would: not the explicit-only events (transcript.partial).
    if (bot.callback_url && !EXPLICIT_ONLY_WEBHOOK_EVENTS.includes(event)) {
      rows.push({
        ...common,
        public_id: newDeliveryId(),
        webhook_id: null,
        target_url: bot.callback_url,
        endpoint_key: callbackEndpointKey(bot.callback_url),
      });
    }
  }
  if (rows.length > 0) await db.insertInto("webhook_deliveries").values(rows).execute();
  return rows.length;
}

/**
 * Queues events about something of the user's other than one bot (a bot account) for the user's
 * active webhooks subscribed to them; no callbackUrl gets them. `botId`: the bot whose report
 * caused them (the delivery's `botId`), or null.
 */
export function enqueueUserEvents(
  db: Kysely<Database>,
  userId: number,
  botId: number | null,
  events: readonly WebhookEventData[],
  eventTime: string,
  now: string,
): Promise<number> {
  return enqueueWebhookEvents(db, { id: botId, user_id: userId, callback_url: null }, events, eventTime, now);
}

/** The bot columns the outbox needs to turn a bot's event into deliveries. */
export type OutboxBotRow = OutboxBot & { meeting_title: string; platform: string };

/**
 * `enqueueWebhookEvents` for a reported (or server-made) bot event, through core's mapping.
 * `holdEnded`: the bot.ended of this event is kept on the bot instead, for `releaseBotEnded`: a
 * bot the server ends (a kill) still hears from its runner, whose recording.ready must not come
 * after bot.ended.
 */
export async function enqueueBotEvent(
  db: Kysely<Database>,
  bot: OutboxBotRow,
  event: CallbackEvent,
  eventTime: string,
  now: string,
  opts: { holdEnded?: boolean } = {},
): Promise<number> {
  const events = webhookEventsFor(event, { meetingTitle: bot.meeting_title, platform: bot.platform });
  const held = opts.holdEnded ? events.filter((e) => e.event === ENDED) : [];
  if (held.length > 0) {
    const heldBotEnded = JSON.stringify({ eventTime, events: held } satisfies HeldBotEnded);
    await db.updateTable("bots").set({ held_bot_ended: heldBotEnded }).where("id", "=", bot.id).execute();
  }
  const queuedNow = events.filter((e) => !held.includes(e));
  return enqueueWebhookEvents(db, bot, queuedNow, eventTime, now);
}

const ENDED = "bot.ended";
interface HeldBotEnded {
  eventTime: string;
  events: WebhookEventData[];
}

/** Queues the bot's held bot.ended, if any (its runner is done, or will never report). */
export async function releaseBotEnded(
  db: Kysely<Database>,
  bot: OutboxBot & { held_bot_ended: string | null },
  now: string,
): Promise<number> {
  if (bot.held_bot_ended === null) return 0;
  const held = JSON.parse(bot.held_bot_ended) as HeldBotEnded;
  await db.updateTable("bots").set({ held_bot_ended: null }).where("id", "=", bot.id).execute();
  return enqueueWebhookEvents(db, bot, held.events, held.eventTime, now);
}
