import {
  EXPLICIT_ONLY_WEBHOOK_EVENTS,
  WEBHOOK_EVENT_NAMES,
  type WebhookEventName,
} from "../../core/index.js";

/**
 * What a webhook may subscribe to: every event name core's webhookEventsFor sends, "*" for all
 * of them, and the spec example's `recording.available` as another name for `recording.ready`.
 * Anything else is a validation error when the webhook is saved.
 */
export const WILDCARD = "*";
export const SUBSCRIPTION_ALIASES: Readonly<Record<string, WebhookEventName>> = {
  "recording.available": "recording.ready",
};
export const SUBSCRIBABLE_NAMES: readonly string[] = [
  WILDCARD,
  ...WEBHOOK_EVENT_NAMES,
  ...Object.keys(SUBSCRIPTION_ALIASES),
];

/** Sent by POST /v1/webhooks/{id}/test only; not subscribable, never queued by an event. */
export const TEST_EVENT = "webhook.test";

/** Whether a webhook subscribed to `subscriptions` receives `event` ("*" is not every event). */
export function isSubscribed(subscriptions: readonly string[], event: string): boolean {
  const wildcardTakes = !EXPLICIT_ONLY_WEBHOOK_EVENTS.includes(event);
  return subscriptions.some(
    (name) => (name === WILDCARD && wildcardTakes) || (SUBSCRIPTION_ALIASES[name] ?? name) === event,
  );
}
