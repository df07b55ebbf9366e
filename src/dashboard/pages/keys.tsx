import { Fragment } from "preact";
import { useState } from "preact/hooks";
import type { ApiKey, ApiKeyList, CreatedApiKey } from "../../server/schemas/api-keys.js";
import { api } from "../api.js";
import { SecretValue } from "../components/key-secret.js";
import { KeyUsage } from "../components/key-usage.js";
import { ErrorNote, formatTime, Panel, useAction, useApi } from "../components/ui.js";

/** API keys: create one (shown once), list them with their last use, revoke. */
export function KeysPage() {
  const keys = useApi<ApiKeyList>("/v1/api-keys");
  const [created, setCreated] = useState<CreatedApiKey>();

  return (
    <>
      <h1>API keys</h1>
      <p class="muted">
        An API key calls the API as you, from scripts and servers: send it as{" "}
        <code>Authorization: Bearer mbk_…</code>.
      </p>
      {created ? (
        <NewKey created={created} onDone={() => setCreated(undefined)} />
      ) : (
        <CreateKeyForm
          onCreated={(key) => {
            setCreated(key);
            void keys.reload();
          }}
        />
      )}
      <Panel
        title="Your keys"
        actions={
          <button type="button" class="secondary" onClick={keys.reload} disabled={keys.loading}>
            {keys.loading ? "Refreshing…" : "Refresh"}
          </button>
        }
      >
        <ErrorNote error={keys.error} />
        {keys.data ? <KeyTable keys={keys.data.apiKeys} onChange={keys.reload} /> : null}
      </Panel>
    </>
  );
}

function CreateKeyForm({ onCreated }: { onCreated(key: CreatedApiKey): void }) {
  const [name, setName] = useState("");
  const [expires, setExpires] = useState("");
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    const key = await action.run(() =>
      api<CreatedApiKey>("POST", "/v1/api-keys", {
        // datetime-local is the viewer's local time; the API takes an instant.
        body: { name, expiresAt: expires ? new Date(expires).toISOString() : null },
      }),
    );
    if (key) {
      setName("");
      setExpires("");
      onCreated(key);
    }
  };

  return (
    <Panel title="Create an API key">
      <form class="key-form" onSubmit={submit}>
        <label>
          Name
          <input
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            required
            maxLength={200}
            placeholder="e.g. CI, CRM sync"
          />
        </label>
        <label>
          Expires
          <input type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
          <span class="hint">Leave empty for a key that never expires.</span>
        </label>
        <div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Creating…" : "Create key"}
          </button>
        </div>
      </form>
      <ErrorNote error={action.error} />
    </Panel>
  );
}

function NewKey({ created, onDone }: { created: CreatedApiKey; onDone(): void }) {
  return (
    <Panel title="Your new API key">
      <p class="notice">
        Copy the key <strong>{created.name}</strong> now and keep it somewhere safe: this is the only time it
        is shown, you will not see it again.
      </p>
      <SecretValue value={created.key} label="New API key" focus />
      <p>
        <button type="button" class="secondary" onClick={onDone}>
          I have copied it
        </button>
      </p>
    </Panel>
  );
}

function KeyTable({ keys, onChange }: { keys: ApiKey[]; onChange(): Promise<void> }) {
  const [shownUsage, setShownUsage] = useState<number>();
  if (keys.length === 0) return <p class="empty">No API keys yet.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Name</th>
          <th>Key</th>
          <th>Created</th>
          <th>Last used</th>
          <th>Expires</th>
          <th>State</th>
          <th>
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {keys.map((key) => (
          <Fragment key={key.id}>
            <tr aria-label={key.name}>
              <td>{key.name}</td>
              <td class="mono">{key.keyPreview}</td>
              <td>{formatTime(key.createdAt)}</td>
              <td>{key.lastUsedAt ? formatTime(key.lastUsedAt) : "Never"}</td>
              <td>{key.expiresAt ? formatTime(key.expiresAt) : "Never"}</td>
              <td>{keyState(key)}</td>
              <td class="actions">
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={shownUsage === key.id}
                  onClick={() => setShownUsage(shownUsage === key.id ? undefined : key.id)}
                >
                  Usage
                </button>
                {key.isRevoked ? null : <RevokeButton apiKey={key} onRevoked={onChange} />}
              </td>
            </tr>
            {shownUsage === key.id ? (
              <tr>
                <td colSpan={7}>
                  <KeyUsage keyId={key.id} />
                </td>
              </tr>
            ) : null}
          </Fragment>
        ))}
      </tbody>
    </table>
  );
}

function keyState(key: ApiKey): string {
  if (key.isRevoked) return "Revoked";
  if (key.expiresAt && Date.parse(key.expiresAt) <= Date.now()) return "Expired";
  return "Active";
}

function RevokeButton({ apiKey, onRevoked }: { apiKey: ApiKey; onRevoked(): Promise<void> }) {
  const action = useAction();
  const revoke = async () => {
    if (!window.confirm(`Revoke the key "${apiKey.name}"? Anything using it stops working at once.`)) return;
    const done = await action.run(async () => {
      await api("DELETE", `/v1/api-keys/${apiKey.id}`);
      return true;
    });
    if (done) await onRevoked();
  };
  return (
    <>
      <button type="button" class="danger" onClick={revoke} disabled={action.busy}>
        {action.busy ? "Revoking…" : "Revoke"}
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}
