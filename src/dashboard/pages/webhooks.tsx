import { useState } from "preact/hooks";
import type {
  SigningSecret,
  Webhook,
  WebhookDeliveryList,
  WebhookDetail,
  WebhookList,
  WebhookStatistics,
  WebhookTestResult,
  WebhookWithSecret,
} from "../../server/schemas/webhooks.js";
import { api } from "../api.js";
import { SecretValue } from "../components/key-secret.js";
import { ErrorNote, formatTime, Panel, useAction, useApi } from "../components/ui.js";
import { DeliveryTable } from "../components/webhook-deliveries.js";
import { CreateWebhookForm } from "../components/webhook-form.js";

/**
 * Webhooks: each subscribes a URL to events of all the user's bots. Below them, the other channel:
 * the callbackUrl a bot is created with, signed with the user's signing secret.
 */
export function WebhooksPage() {
  const webhooks = useApi<WebhookList>("/v1/webhooks");
  const [created, setCreated] = useState<WebhookWithSecret>();

  return (
    <>
      <h1>Webhooks</h1>
      {created ? (
        <ShownSecret
          heading={`Webhook ${created.name} added`}
          label={`Signing secret of ${created.name}`}
          secret={created.secret}
          onDone={() => setCreated(undefined)}
        />
      ) : (
        <CreateWebhookForm
          onCreated={(webhook) => {
            setCreated(webhook);
            void webhooks.reload();
          }}
        />
      )}
      <ErrorNote error={webhooks.error} />
      {webhooks.data?.webhooks.length === 0 ? (
        <p class="empty">No webhooks yet.</p>
      ) : (
        webhooks.data?.webhooks.map((webhook) => (
          <WebhookPanel key={webhook.id} webhook={webhook} onChange={webhooks.reload} />
        ))
      )}
      <h1 class="section-title">Bot callback URLs</h1>
      <SigningSecretPanel />
      <CallbackDeliveries />
    </>
  );
}

/** A secret the API shows once (at creation and rotation). */
function ShownSecret({
  heading,
  label,
  secret,
  onDone,
}: {
  heading: string;
  label: string;
  secret: string;
  onDone(): void;
}) {
  return (
    <Panel title={heading}>
      <p class="notice">
        Receivers check each delivery's <code>X-Webhook-Signature</code> with this secret. Copy it now: you
        will not see it again (rotating makes a new one).
      </p>
      <SecretValue value={secret} label={label} focus />
      <p>
        <button type="button" class="secondary" onClick={onDone}>
          I have copied it
        </button>
      </p>
    </Panel>
  );
}

function WebhookPanel({ webhook, onChange }: { webhook: Webhook; onChange(): Promise<void> }) {
  const base = `/v1/webhooks/${webhook.id}`;
  const detail = useApi<WebhookDetail>(base);
  const deliveries = useApi<WebhookDeliveryList>(`${base}/deliveries`);
  const [tested, setTested] = useState<WebhookTestResult>();
  const [rotated, setRotated] = useState<string>();
  const action = useAction();
  const refresh = () => Promise.all([detail.reload(), deliveries.reload()]).then(() => undefined);

  const sendTest = async () => {
    setTested(undefined);
    const result = await action.run(() => api<WebhookTestResult>("POST", `${base}/test`));
    if (result) setTested(result);
    await refresh();
  };
  const setActive = async (isActive: boolean) => {
    if (await action.run(() => api<Webhook>("PATCH", base, { body: { isActive } }))) await onChange();
  };
  const rotate = async () => {
    if (
      !window.confirm(`Replace the signing secret of "${webhook.name}"? The old one stops working at once.`)
    )
      return;
    const result = await action.run(() => api<WebhookWithSecret>("POST", `${base}/rotate-secret`));
    if (result) setRotated(result.secret);
  };
  const remove = async () => {
    if (!window.confirm(`Delete the webhook "${webhook.name}" and its delivery log?`)) return;
    if (await action.run(() => api("DELETE", base).then(() => true))) await onChange();
  };

  const stats = detail.data?.statistics;
  return (
    <Panel
      title={webhook.name}
      actions={
        <>
          <button type="button" onClick={sendTest} disabled={action.busy}>
            Send test
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => setActive(!webhook.isActive)}
            disabled={action.busy}
          >
            {webhook.isActive ? "Pause" : "Resume"}
          </button>
          <button type="button" class="secondary" onClick={rotate} disabled={action.busy}>
            Rotate secret
          </button>
          <button type="button" class="danger" onClick={remove} disabled={action.busy}>
            Delete
          </button>
        </>
      }
    >
      <dl class="facts">
        <dt>URL</dt>
        <dd class="mono">{webhook.url}</dd>
        <dt>Events</dt>
        <dd class="mono">{webhook.events.includes("*") ? "all events" : webhook.events.join(", ")}</dd>
        <dt>State</dt>
        <dd>{webhook.isActive ? "Active" : "Paused: gets no new deliveries"}</dd>
        {stats ? (
          <>
            <dt>Deliveries</dt>
            <dd>{deliveryFigures(stats)}</dd>
          </>
        ) : null}
      </dl>
      {action.busy ? <p class="muted">Working…</p> : null}
      <ErrorNote error={action.error ?? detail.error} />
      {tested ? <TestOutcome result={tested} /> : null}
      {rotated ? (
        <ShownSecret
          heading="Secret rotated"
          label={`New signing secret of ${webhook.name}`}
          secret={rotated}
          onDone={() => setRotated(undefined)}
        />
      ) : null}
      <div class="subhead">
        <h3>Deliveries</h3>
        <button type="button" class="link" onClick={refresh} disabled={deliveries.loading}>
          {deliveries.loading ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      <DeliveryTable
        deliveries={deliveries}
        reload={refresh}
        redeliverPath={(delivery) => `${base}/deliveries/${delivery.id}/redeliver`}
      />
    </Panel>
  );
}

/** "2 (2 succeeded, 0 failed, 0 on their way) in 3 attempts; median response 4 ms" */
function deliveryFigures(stats: WebhookStatistics): string {
  const median =
    stats.p50ResponseTimeMs === null ? "" : `; median response ${Math.round(stats.p50ResponseTimeMs)} ms`;
  return (
    `${stats.deliveries} (${stats.succeeded} succeeded, ${stats.failed} failed, ${stats.pending} on their way) ` +
    `in ${stats.attempts} ${stats.attempts === 1 ? "attempt" : "attempts"}${median}`
  );
}

function TestOutcome({ result }: { result: WebhookTestResult }) {
  const answer = result.statusCode === null ? (result.error ?? "no answer") : `HTTP ${result.statusCode}`;
  return (
    <p class={result.success ? "notice" : "error"}>
      {result.success ? "Test delivered" : "Test failed"}: {answer} in {result.responseTimeMs} ms
      {result.errorMessage ? ` (${result.errorMessage})` : ""}.
    </p>
  );
}

/** The per-user secret that signs deliveries to bots' callbackUrl: shown only when asked for. */
function SigningSecretPanel() {
  const [secret, setSecret] = useState<SigningSecret>();
  const action = useAction();
  const show = async () => {
    const result = await action.run(() => api<SigningSecret>("GET", "/v1/webhooks/signing-secret"));
    if (result) setSecret(result);
  };
  const rotate = async () => {
    if (!window.confirm("Replace the callback signing secret? The old one stops working at once.")) return;
    const result = await action.run(() => api<SigningSecret>("POST", "/v1/webhooks/signing-secret/rotate"));
    if (result) setSecret(result);
  };
  return (
    <Panel
      title="Callback signing secret"
      actions={
        <>
          {secret ? (
            <button type="button" class="secondary" onClick={() => setSecret(undefined)}>
              Hide
            </button>
          ) : (
            <button type="button" class="secondary" onClick={show} disabled={action.busy}>
              Show secret
            </button>
          )}
          <button type="button" class="secondary" onClick={rotate} disabled={action.busy}>
            Rotate
          </button>
        </>
      }
    >
      <p class="muted">
        A bot created with a <code>callbackUrl</code> sends every event of its own there, signed with this
        secret (one for all your bots).
      </p>
      <ErrorNote error={action.error} />
      {secret ? (
        <>
          <SecretValue value={secret.secret} label="Callback signing secret" />
          <p class="hint">Made {formatTime(secret.createdAt)}.</p>
        </>
      ) : null}
    </Panel>
  );
}

function CallbackDeliveries() {
  const deliveries = useApi<WebhookDeliveryList>("/v1/webhooks/callback-deliveries");
  return (
    <Panel
      title="Callback deliveries"
      actions={
        <button type="button" class="secondary" onClick={deliveries.reload} disabled={deliveries.loading}>
          {deliveries.loading ? "Refreshing…" : "Refresh"}
        </button>
      }
    >
      <DeliveryTable
        deliveries={deliveries}
        reload={deliveries.reload}
        redeliverPath={(delivery) => `/v1/webhooks/callback-deliveries/${delivery.id}/redeliver`}
      />
    </Panel>
  );
}
