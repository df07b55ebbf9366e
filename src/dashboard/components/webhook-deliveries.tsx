import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { WebhookDelivery, WebhookDeliveryList } from "../../server/schemas/webhooks.js";
import { api } from "../api.js";
import { hrefOf } from "../router.js";
import { ErrorNote, formatTime, type Loaded, StatusBadge, useAction } from "./ui.js";

/** How often a list with a delivery being sent looks again. */
const SENDING_POLL_MS = 1500;

/**
 * A delivery log (a webhook's, or the callbackUrl channel's), newest first, with Redeliver on each
 * finished delivery. While a delivery is on its way the list reloads itself: soon while one is
 * being sent, at its next attempt while one waits for a retry (minutes away, so no busy polling).
 */
export function DeliveryTable({
  deliveries,
  reload,
  redeliverPath,
}: {
  deliveries: Loaded<WebhookDeliveryList>;
  /** Loads the list again (and whatever the caller shows beside it). */
  reload(): Promise<void>;
  redeliverPath(delivery: WebhookDelivery): string;
}) {
  const [opened, setOpened] = useState<number>();
  const list = deliveries.data;
  useEffect(() => {
    const delay = nextLookMs(list?.deliveries ?? []);
    if (delay === null) return;
    const timer = setTimeout(() => void reload(), delay);
    return () => clearTimeout(timer);
  }, [list]);

  if (deliveries.error) return <ErrorNote error={deliveries.error} />;
  if (!list) return <p class="muted">Loading deliveries…</p>;
  if (list.deliveries.length === 0) return <p class="empty">No deliveries yet.</p>;
  return (
    <>
      <table class="deliveries">
        <thead>
          <tr>
            <th>Event</th>
            <th>Bot</th>
            <th>Status</th>
            <th>HTTP</th>
            <th class="num">Response time</th>
            <th class="num">Attempts</th>
            <th>Time</th>
            <th>
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {list.deliveries.map((delivery) => (
            <Fragment key={delivery.id}>
              <tr aria-label={`${delivery.event} ${delivery.deliveryId}`}>
                <td class="mono">{delivery.event}</td>
                <td>
                  {delivery.botId === null ? (
                    <span class="muted">—</span>
                  ) : (
                    <a href={hrefOf({ page: "bot", botId: delivery.botId })}>{delivery.botId}</a>
                  )}
                </td>
                <td>
                  <StatusBadge status={delivery.status} />
                  {delivery.status === "pending" && delivery.nextAttemptAt ? (
                    <span class="hint"> next {formatTime(delivery.nextAttemptAt)}</span>
                  ) : null}
                </td>
                <td>
                  {delivery.statusCode ??
                    (delivery.error ? <span class="muted">{delivery.error}</span> : "—")}
                </td>
                <td class="num">
                  {delivery.responseTimeMs === null ? "—" : `${delivery.responseTimeMs} ms`}
                </td>
                <td class="num">{delivery.attempt}</td>
                <td>{formatTime(delivery.lastAttemptAt ?? delivery.createdAt)}</td>
                <td class="actions">
                  <button
                    type="button"
                    class="secondary"
                    aria-expanded={opened === delivery.id}
                    onClick={() => setOpened(opened === delivery.id ? undefined : delivery.id)}
                  >
                    Details
                  </button>
                  <RedeliverButton delivery={delivery} path={redeliverPath(delivery)} onQueued={reload} />
                </td>
              </tr>
              {opened === delivery.id ? (
                <tr>
                  <td colSpan={8}>
                    <DeliveryDetails delivery={delivery} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
      {list.total > list.deliveries.length ? (
        <p class="hint">
          The latest {list.deliveries.length} of {list.total} deliveries.
        </p>
      ) : null}
    </>
  );
}

/** Null when nothing is on its way; else when to look again. */
function nextLookMs(deliveries: WebhookDelivery[]): number | null {
  let soonest: number | null = null;
  for (const delivery of deliveries) {
    let wait: number | null = null;
    if (delivery.status === "sending") wait = SENDING_POLL_MS;
    if (delivery.status === "pending") {
      const due = delivery.nextAttemptAt ? Date.parse(delivery.nextAttemptAt) - Date.now() : 0;
      wait = Math.max(SENDING_POLL_MS, due + SENDING_POLL_MS);
    }
    if (wait !== null) soonest = soonest === null ? wait : Math.min(soonest, wait);
  }
  return soonest;
}

function RedeliverButton({
  delivery,
  path,
  onQueued,
}: {
  delivery: WebhookDelivery;
  path: string;
  onQueued(): Promise<void>;
}) {
  const action = useAction();
  // A delivery still on its way goes out anyway; the API refuses to queue it twice (409).
  const finished = delivery.status === "succeeded" || delivery.status === "failed";
  const redeliver = async () => {
    const queued = await action.run(() => api<WebhookDelivery>("POST", path));
    if (queued) await onQueued();
  };
  return (
    <>
      <button type="button" class="secondary" onClick={redeliver} disabled={!finished || action.busy}>
        {action.busy ? "Queueing…" : "Redeliver"}
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

function DeliveryDetails({ delivery }: { delivery: WebhookDelivery }) {
  return (
    <div class="delivery-details">
      <p>
        <span class="muted">X-Webhook-Id</span> <code>{delivery.deliveryId}</code> ·{" "}
        <span class="muted">created</span> {formatTime(delivery.createdAt)}
      </p>
      {delivery.errorMessage ? <p class="error">{delivery.errorMessage}</p> : null}
      <h3>Request body</h3>
      <pre class="payload">{delivery.requestBody}</pre>
      <h3>Response body</h3>
      <pre class="payload">{delivery.responseBody ?? "(no answer)"}</pre>
    </div>
  );
}
