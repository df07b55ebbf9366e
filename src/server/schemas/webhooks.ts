import { z } from "zod";
import { IdParam, Pagination } from "../validation.js";
import { SUBSCRIBABLE_NAMES } from "../webhooks/events.js";
import { DELIVERY_STATES, MAX_LOGGED_BODY_CHARS } from "../webhooks/queue.js";
import { HttpUrl, Timestamp } from "./common.js";

/** Longest webhook URL accepted. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const EventName = z.string().refine((name) => SUBSCRIBABLE_NAMES.includes(name), {
  message: `unknown event name; one of ${SUBSCRIBABLE_NAMES.join(", ")}`,
});

/** Subscribed names, duplicates dropped, in the order given. */
const EventNames = z
  .array(EventName)
  .min(1, 'subscribe to at least one event ("*" for all)')
  .max(50)
  .transform((names) => [...new Set(names)])
  .describe(
    `"*" (every event), or any of: ${SUBSCRIBABLE_NAMES.slice(1).join(", ")}. ` +
      "recording.available is another name for recording.ready.",
  );

const WebhookName = z.string().trim().min(1).max(200);
const WebhookUrl = HttpUrl.max(MAX_WEBHOOK_URL_LENGTH);

export const CreateWebhookBody = z.object({
  name: WebhookName,
  url: WebhookUrl,
  events: EventNames,
  isActive: z.boolean().default(true),
});
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

/** Any of the create fields; absent ones stay. Unknown fields (a typo, or `secret`) are a 422. */
export const UpdateWebhookBody = z.strictObject({
  name: WebhookName.optional(),
  url: WebhookUrl.optional(),
  events: EventNames.optional(),
  isActive: z.boolean().optional(),
});
export type UpdateWebhookBody = z.infer<typeof UpdateWebhookBody>;

export const Webhook = z.object({
  id: z.number().int(),
  name: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  isActive: z.boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Webhook = z.infer<typeof Webhook>;

/** Creation and secret rotation: the only answers that show the secret. */
export const WebhookWithSecret = Webhook.extend({
  secret: z.string().describe('"whsec_" + 64 hexadecimal characters; the HMAC key is this whole string'),
});
export type WebhookWithSecret = z.infer<typeof WebhookWithSecret>;

export const WebhookStatistics = z.object({
  deliveries: z.number().int().describe("deliveries queued for this webhook, test sends included"),
  pending: z.number().int().describe("waiting for their first attempt or a retry, or being sent"),
  succeeded: z.number().int(),
  failed: z.number().int().describe("no retry left; can be redelivered"),
  attempts: z.number().int(),
  successes: z.number().int().describe("attempts answered with a 2xx"),
  failures: z.number().int(),
  lastStatusCode: z.number().int().nullable().describe("of the latest attempt; null if it got no answer"),
  lastError: z.string().nullable(),
  lastAttemptAt: Timestamp.nullable(),
  p50ResponseTimeMs: z
    .number()
    .nullable()
    .describe("median response time of the latest 1000 attempts that got an answer"),
});
export type WebhookStatistics = z.infer<typeof WebhookStatistics>;

export const WebhookDetail = Webhook.extend({ statistics: WebhookStatistics });
export type WebhookDetail = z.infer<typeof WebhookDetail>;

export const WebhookList = z.object({ webhooks: z.array(Webhook), total: z.number().int() });
export type WebhookList = z.infer<typeof WebhookList>;

const body = (what: string) =>
  z.string().nullable().describe(`${what}, first ${MAX_LOGGED_BODY_CHARS} characters`);

export const WebhookDelivery = z.object({
  id: z.number().int().describe("for /deliveries/{deliveryId}"),
  deliveryId: z.string().describe('X-Webhook-Id: "whdel_" + hex, the same on every attempt'),
  webhookId: z.number().int().nullable().describe("null for a delivery to a bot's callbackUrl"),
  botId: z.number().int().nullable().describe("null for the test event"),
  event: z.string(),
  status: z.enum(DELIVERY_STATES),
  attempt: z.number().int().describe("number of the latest attempt; 0 before the first"),
  statusCode: z.number().int().nullable().describe("of the latest attempt; null without an HTTP answer"),
  error: z
    .string()
    .nullable()
    .describe(
      "of the latest attempt: bad_status (a non-2xx answer), invalid_url, refused_target, dns_failed, " +
        "connect_failed, connect_timeout, response_timeout or network_error; null on success",
    ),
  errorMessage: z.string().nullable(),
  responseTimeMs: z.number().int().nullable(),
  nextAttemptAt: Timestamp.nullable().describe("when pending: the next attempt"),
  lastAttemptAt: Timestamp.nullable(),
  createdAt: Timestamp,
  requestBody: z.string().describe(`the JSON body sent, first ${MAX_LOGGED_BODY_CHARS} characters`),
  responseBody: body("the latest answer's body"),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryAttempt = z.object({
  attempt: z.number().int(),
  attemptedAt: Timestamp,
  succeeded: z.boolean(),
  statusCode: z.number().int().nullable(),
  error: z.string().nullable(),
  errorMessage: z.string().nullable(),
  responseTimeMs: z.number().int(),
  responseBody: body("the answer's body"),
});
export type WebhookDeliveryAttempt = z.infer<typeof WebhookDeliveryAttempt>;

export const WebhookDeliveryDetail = WebhookDelivery.extend({
  attempts: z.array(WebhookDeliveryAttempt).describe("every attempt, oldest first"),
});
export type WebhookDeliveryDetail = z.infer<typeof WebhookDeliveryDetail>;

export const DeliveryListQuery = z.object({
  ...Pagination,
  status: z.enum(DELIVERY_STATES).optional(),
});
export type DeliveryListQuery = z.infer<typeof DeliveryListQuery>;

export const CallbackDeliveryListQuery = DeliveryListQuery.extend({
  bot_id: IdParam.optional().describe("one of the caller's bots"),
});
export type CallbackDeliveryListQuery = z.infer<typeof CallbackDeliveryListQuery>;

export const WebhookDeliveryList = z.object({
  deliveries: z.array(WebhookDelivery).describe("newest first"),
  total: z.number().int(),
  page: z.number().int(),
  page_size: z.number().int(),
});
export type WebhookDeliveryList = z.infer<typeof WebhookDeliveryList>;

export const WebhookTestResult = z.object({
  success: z.boolean().describe("the receiver answered with a 2xx"),
  statusCode: z.number().int().nullable(),
  responseTimeMs: z.number().int(),
  error: z.string().nullable(),
  errorMessage: z.string().nullable(),
  delivery: WebhookDelivery.describe("the test send, as recorded in the delivery log (never retried)"),
});
export type WebhookTestResult = z.infer<typeof WebhookTestResult>;

export const SigningSecret = z.object({
  secret: z.string().describe("signs deliveries to the callbackUrl of every bot of this user"),
  createdAt: Timestamp,
});
export type SigningSecret = z.infer<typeof SigningSecret>;

/** What a transcription provider's call about a job is answered. */
export const ProviderWebhookReceived = z.object({ received: z.literal(true) });
