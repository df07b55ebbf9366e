import type { Kysely, Transaction } from "kysely";
import { z } from "zod";
import type { ActionItem } from "../intelligence/types.js";
import { toIso } from "../server/db/database.js";
import type { Database, DialectName, WebhookRow } from "../server/db/schema.js";
import { ConflictError, NotFoundError, ValidationError } from "../server/errors.js";
import type { MeetingEvents } from "../server/meeting-events.js";
import { HttpUrl, Timestamp } from "../server/schemas/common.js";
import type { ServerConfig } from "../server/config.js";
import { MAX_WEBHOOKS_PER_USER } from "../server/services/webhooks.js";
import { checkTargetUrl } from "../server/webhooks/outbound.js";
import { deliveryPayload, webhookEndpointKey } from "../server/webhooks/outbox.js";
import { newDeliveryId, newWebhookSecret } from "../server/webhooks/secrets.js";
import { MeetingService } from "./meetings.js";

/** The notes interface's events; a webhook names the ones it wants (no wildcard: the list is short). */
export const NOTES_EVENTS = ["meeting.completed", "transcript.ready", "action_items.detected"] as const;
export type NotesEvent = (typeof NOTES_EVENTS)[number];

export const CreateNotesWebhookBody = z.strictObject({
  url: HttpUrl,
  events: z
    .array(z.enum(NOTES_EVENTS))
    .min(1)
    .max(NOTES_EVENTS.length)
    .refine((events) => new Set(events).size === events.length, "each event once")
    .describe(`any of ${NOTES_EVENTS.join(", ")}`),
});
export type CreateNotesWebhookBody = z.infer<typeof CreateNotesWebhookBody>;

export const NotesWebhook = z.object({
  id: z.number().int(),
  url: z.string(),
  events: z.array(z.enum(NOTES_EVENTS)),
  createdAt: Timestamp,
});
export type NotesWebhook = z.infer<typeof NotesWebhook>;
export const CreatedNotesWebhook = NotesWebhook.extend({
  secret: z.string().describe("whsec_…: verifies the X-Webhook-Signature of deliveries; shown only here"),
});
export const NotesWebhookList = z.object({ data: z.array(NotesWebhook) });

const NOTES_API = "notes";

/**
 * Webhooks of the notes interface: rows of the bot API's webhooks table marked `api = 'notes'`, so
 * their deliveries go through the same outbox, signing, retries and SSRF rules, and the bot API
 * never lists them (nor this interface the bot API's).
 */
export class NotesWebhookService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: Pick<ServerConfig, "outbound">,
    private readonly now: () => Date,
  ) {}

  async create(userId: number, input: CreateNotesWebhookBody) {
    const refusal = checkTargetUrl(input.url, this.config.outbound);
    if (refusal !== null)
      throw new ValidationError([{ loc: ["body", "url"], msg: refusal, type: "value_error" }]);
    const { count } = await this.db
      .selectFrom("webhooks")
      .select((eb) => eb.fn.countAll().as("count"))
      .where("user_id", "=", userId)
      .where("api", "=", NOTES_API)
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_WEBHOOKS_PER_USER) {
      throw new ConflictError(`A user can have at most ${MAX_WEBHOOKS_PER_USER} webhooks`);
    }
    const at = toIso(this.now());
    const row = await this.db
      .insertInto("webhooks")
      .values({
        user_id: userId,
        name: "notes",
        url: input.url,
        events: JSON.stringify(input.events),
        secret: newWebhookSecret(),
        is_active: 1,
        api: NOTES_API,
        created_at: at,
        updated_at: at,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...toNotesWebhook(row), secret: row.secret };
  }

  async list(userId: number) {
    const rows = await this.owned(userId).orderBy("id", "asc").execute();
    return { data: rows.map(toNotesWebhook) };
  }

  async get(userId: number, id: number): Promise<NotesWebhook> {
    const row = await this.owned(userId).where("id", "=", id).executeTakeFirst();
    if (!row) throw new NotFoundError("Webhook not found");
    return toNotesWebhook(row);
  }

  /** Deletes it; deliveries still queued for it are not sent (they go with it). */
  async remove(userId: number, id: number): Promise<void> {
    const result = await this.db
      .deleteFrom("webhooks")
      .where("id", "=", id)
      .where("user_id", "=", userId)
      .where("api", "=", NOTES_API)
      .executeTakeFirst();
    if (Number(result.numDeletedRows) !== 1) throw new NotFoundError("Webhook not found");
  }

  private owned(userId: number) {
    return this.db
      .selectFrom("webhooks")
      .selectAll()
      .where("user_id", "=", userId)
      .where("api", "=", NOTES_API);
  }
}

function toNotesWebhook(row: WebhookRow): NotesWebhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as NotesEvent[],
    createdAt: row.created_at,
  };
}

/**
 * Queues the notes interface's events of a bot's meeting, inside the transaction that stores what
 * they announce (the recording, the transcript, the summary): a delivery exists exactly when its
 * news does. Each returns how many deliveries it queued (0 when no notes webhook wants it).
 */
export class NotesEvents implements MeetingEvents {
  constructor(private readonly dialect: DialectName) {}

  /** meeting.completed: the recording is stored; the data is the meeting. */
  async recordingStored(trx: Transaction<Database>, botId: number, now: Date): Promise<number> {
    return this.queue(trx, botId, "meeting.completed", now, async (userId, meetingId) =>
      new MeetingService({ db: trx, dialect: this.dialect }).get(userId, meetingId),
    );
  }

  /** transcript.ready: `{meetingId, utterances}` (how many). */
  transcriptReady(trx: Transaction<Database>, botId: number, utterances: number, now: Date): Promise<number> {
    return this.queue(trx, botId, "transcript.ready", now, async (_userId, meetingId) => ({
      meetingId,
      utterances,
    }));
  }

  /** action_items.detected: a summary found some; `{meetingId, actionItems}`. */
  actionItemsDetected(
    trx: Transaction<Database>,
    botId: number,
    actionItems: readonly ActionItem[],
    now: Date,
  ): Promise<number> {
    if (actionItems.length === 0) return Promise.resolve(0);
    return this.queue(trx, botId, "action_items.detected", now, async (_userId, meetingId) => ({
      meetingId,
      actionItems,
    }));
  }

  private async queue(
    trx: Transaction<Database>,
    botId: number,
    event: NotesEvent,
    now: Date,
    data: (userId: number, meetingId: string) => Promise<object>,
  ): Promise<number> {
    const bot = await trx
      .selectFrom("bots")
      .select(["user_id", "meeting_id"])
      .where("id", "=", botId)
      .executeTakeFirst();
    // Only a bot that joined a call is a meeting.
    if (!bot?.meeting_id) return 0;
    const webhooks = (
      await trx
        .selectFrom("webhooks")
        .select(["id", "events"])
        .where("user_id", "=", bot.user_id)
        .where("api", "=", NOTES_API)
        .where("is_active", "=", 1)
        .orderBy("id")
        .execute()
    ).filter((webhook) => (JSON.parse(webhook.events) as string[]).includes(event));
    if (webhooks.length === 0) return 0;
    const at = toIso(now);
    const payload = deliveryPayload(event, botId, at, await data(bot.user_id, bot.meeting_id));
    await trx
      .insertInto("webhook_deliveries")
      .values(
        webhooks.map((webhook) => ({
          public_id: newDeliveryId(),
          user_id: bot.user_id,
          webhook_id: webhook.id,
          bot_id: botId,
          target_url: null,
          endpoint_key: webhookEndpointKey(webhook.id),
          event,
          payload,
          state: "pending",
          attempts: 0,
          round_failures: 0,
          next_attempt_at: at,
          created_at: at,
        })),
      )
      .execute();
    return webhooks.length;
  }
}
