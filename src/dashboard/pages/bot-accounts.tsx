import { useState } from "preact/hooks";
import type { BotAccount, BotAccountList } from "../../server/schemas/bot-accounts.js";
import { api, ApiFailure } from "../api.js";
import { PLATFORM_LABELS } from "../components/bot-meeting.js";
import { ErrorNote, formatTime, Panel, StatusBadge, useAction, useApi } from "../components/ui.js";

type Platform = BotAccount["platform"];

/** The API's most per page: a user has a handful of accounts, the page shows them all. */
export const ACCOUNTS_PATH = "/v1/bot-accounts?page_size=100";

/**
 * Bot accounts: platform accounts bots join meetings as, signed in. Added from the storage state a
 * person saved after signing in once; the session is never shown again, only where it stands.
 */
export function BotAccountsPage() {
  const accounts = useApi<BotAccountList>(ACCOUNTS_PATH);
  return (
    <>
      <h1>Bot accounts</h1>
      <p class="muted">
        A bot created with a login joins signed in as one of these accounts: past the walls meetings put up
        for guests, under the account's own name. Each holds a browser session (Playwright's storage state),
        stored encrypted and never shown again.
      </p>
      <AddAccountForm onAdded={accounts.reload} />
      <Panel
        title="Your bot accounts"
        actions={
          <button type="button" class="secondary" onClick={accounts.reload} disabled={accounts.loading}>
            {accounts.loading ? "Refreshing…" : "Refresh"}
          </button>
        }
      >
        <ErrorNote error={accounts.error} />
        {accounts.data ? (
          <AccountTable accounts={accounts.data.botAccounts} onChange={accounts.reload} />
        ) : null}
      </Panel>
    </>
  );
}

function AddAccountForm({ onAdded }: { onAdded(): Promise<void> }) {
  const [platform, setPlatform] = useState<Platform>("google");
  const [name, setName] = useState("");
  const [group, setGroup] = useState("");
  const [maxConcurrent, setMaxConcurrent] = useState("");
  const [file, setFile] = useState<File>();
  const [fileKey, setFileKey] = useState(0);
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    setFieldErrors({});
    const added = await action.run(async () => {
      if (!file) throw new Error("Choose the storage state file (JSON) saved after signing in.");
      let session: unknown;
      try {
        session = JSON.parse(await file.text());
      } catch {
        throw new Error(`${file.name} is not JSON: choose the storage state file Playwright saved.`);
      }
      try {
        return await api<BotAccount>("POST", "/v1/bot-accounts", {
          body: {
            platform,
            name,
            ...(group.trim() ? { group: group.trim() } : {}),
            ...(maxConcurrent ? { maxConcurrent: Number(maxConcurrent) } : {}),
            session,
          },
        });
      } catch (failure) {
        if (failure instanceof ApiFailure) setFieldErrors(failure.fieldErrors());
        throw failure;
      }
    });
    if (added) {
      setName("");
      setFile(undefined);
      setFileKey((key) => key + 1); // a new, empty file input
      await onAdded();
    }
  };

  const problem = (field: string) =>
    fieldErrors[field] ? <span class="field-error">{fieldErrors[field]}</span> : null;
  const sessionProblem = Object.entries(fieldErrors).find(([field]) => field.startsWith("session"));
  return (
    <Panel title="Add a bot account">
      <form class="webhook-form" onSubmit={submit} aria-label="Add a bot account">
        <div class="grid2">
          <label>
            Platform
            <select value={platform} onChange={(e) => setPlatform(e.currentTarget.value as Platform)}>
              {Object.entries(PLATFORM_LABELS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <label>
            Name
            <input
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              required
              maxLength={200}
              placeholder="e.g. Notetaker (notes@example.com)"
            />
            {problem("name")}
          </label>
          <label>
            Group
            <input
              value={group}
              onInput={(e) => setGroup(e.currentTarget.value)}
              maxLength={100}
              placeholder="default"
            />
            <span class="hint">Bots with a login pick a free account of their group.</span>
            {problem("group")}
          </label>
          <label>
            Bots at once
            <input
              type="number"
              min="1"
              max="50"
              value={maxConcurrent}
              onInput={(e) => setMaxConcurrent(e.currentTarget.value)}
              placeholder="1"
            />
            <span class="hint">How many bots may use the account at the same time.</span>
            {problem("maxConcurrent")}
          </label>
        </div>
        <label>
          Session file
          <input
            key={fileKey}
            type="file"
            accept=".json,application/json"
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
          <span class="hint">
            The storage state JSON saved after signing in to the account once, e.g. with Playwright's{" "}
            <code>context.storageState(&#123; path: "auth.json" &#125;)</code>. At most 1 MiB.
          </span>
          {sessionProblem ? (
            <span class="field-error">{`${sessionProblem[0]}: ${sessionProblem[1]}`}</span>
          ) : null}
        </label>
        <div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Adding…" : "Add account"}
          </button>
        </div>
      </form>
      <ErrorNote error={action.error} />
    </Panel>
  );
}

function AccountTable({ accounts, onChange }: { accounts: BotAccount[]; onChange(): Promise<void> }) {
  const action = useAction();
  if (accounts.length === 0) return <p class="empty">No bot accounts yet.</p>;
  const setDisabled = async (account: BotAccount, disabled: boolean) => {
    const body = { disabled };
    if (await action.run(() => api<BotAccount>("PATCH", `/v1/bot-accounts/${account.id}`, { body })))
      await onChange();
  };
  const remove = async (account: BotAccount) => {
    if (!window.confirm(`Delete the bot account "${account.name}" and its stored session?`)) return;
    const done = await action.run(() => api("DELETE", `/v1/bot-accounts/${account.id}`).then(() => true));
    if (done) await onChange();
  };
  return (
    <>
      <ErrorNote error={action.error} />
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Platform</th>
            <th>Group</th>
            <th>Status</th>
            <th>In use</th>
            <th>Signed in as</th>
            <th>Last used</th>
            <th>Last check</th>
            <th>
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {accounts.map((account) => (
            <tr key={account.id} aria-label={account.name}>
              <td>{account.name}</td>
              <td>{PLATFORM_LABELS[account.platform]}</td>
              <td>{account.group}</td>
              <td>
                <StatusBadge status={account.status} />
              </td>
              <td>{`${account.inUse} of ${account.maxConcurrent}`}</td>
              <td>{[account.accountName, account.accountEmail].filter(Boolean).join(", ") || "—"}</td>
              <td>{account.lastUsedAt ? formatTime(account.lastUsedAt) : "Never"}</td>
              <td>{account.lastCheckedAt ? formatTime(account.lastCheckedAt) : "Never"}</td>
              <td class="actions">
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setDisabled(account, account.status !== "disabled")}
                  disabled={action.busy}
                >
                  {account.status === "disabled" ? "Enable" : "Disable"}
                </button>
                <button type="button" class="danger" onClick={() => remove(account)} disabled={action.busy}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
