import { useEffect, useRef, useState } from "preact/hooks";
import type { CreatedShare, ShareInfo } from "../../server/schemas/index.js";
import { api, ApiFailure } from "../api.js";
import { ErrorNote, formatTime, Panel, useAction, useCopy } from "./ui.js";

/** The lifetimes offered for a new link, in seconds (the API allows 60 s to 30 days). */
const LIFETIMES = [
  { label: "1 hour", seconds: 60 * 60 },
  { label: "1 day", seconds: 24 * 60 * 60 },
  { label: "7 days", seconds: 7 * 24 * 60 * 60 },
  { label: "30 days", seconds: 30 * 24 * 60 * 60 },
] as const;
const DEFAULT_LIFETIME = 7 * 24 * 60 * 60;

/**
 * A recording's public link: create it (replacing the previous one), copy it, revoke it. The API
 * shows a link's address only when it is made, so after a reload a live link can be revoked or
 * replaced but not copied.
 */
export function ShareLink({ botId }: { botId: number }) {
  const path = `/v1/recordings/${botId}/share`;
  // undefined: loading; null: no live link.
  const [live, setLive] = useState<ShareInfo | null>();
  const [created, setCreated] = useState<CreatedShare>();
  const [revoked, setRevoked] = useState(false);
  const [lifetime, setLifetime] = useState<number>(DEFAULT_LIFETIME);
  const action = useAction();

  useEffect(() => {
    void action.run(async () => {
      try {
        setLive(await api<ShareInfo>("GET", path));
      } catch (failure) {
        if (!(failure instanceof ApiFailure && failure.status === 404)) throw failure;
        setLive(null);
      }
    });
  }, [path]);

  const create = () => {
    if (live && !window.confirm("Replace the current share link? The old link will stop working.")) return;
    void action.run(async () => {
      const share = await api<CreatedShare>("POST", path, { body: { expiresIn: lifetime } });
      setCreated(share);
      setLive({ expiresAt: share.expiresAt, createdAt: share.createdAt });
      setRevoked(false);
    });
  };

  const revoke = () => {
    if (!window.confirm("Revoke the share link? Anyone who has it will no longer be able to open it."))
      return;
    void action.run(async () => {
      await api("DELETE", path);
      setLive(null);
      setCreated(undefined);
      setRevoked(true);
    });
  };

  return (
    <Panel title="Share link">
      {live === undefined && !action.error ? <p class="muted">Loading…</p> : null}
      {revoked ? (
        <p class="notice" role="status">
          The share link was revoked: it no longer opens.
        </p>
      ) : null}
      {live === null && !revoked ? <p class="empty">This recording has no share link.</p> : null}
      {live && created ? <CopyableLink url={created.url} /> : null}
      {live && !created ? (
        <p>
          A share link is live. Its address is shown only when it is made: create a new one to copy it (the
          old one then stops working).
        </p>
      ) : null}
      {live ? (
        <p class="muted">
          Created {formatTime(live.createdAt)} · expires {formatTime(live.expiresAt)}
        </p>
      ) : null}
      {live === undefined ? null : (
        <div class="share-controls">
          <label>
            Link expires after
            <select
              value={String(lifetime)}
              onChange={(event) => setLifetime(Number(event.currentTarget.value))}
            >
              {LIFETIMES.map((option) => (
                <option key={option.seconds} value={String(option.seconds)}>
                  {option.label}
                </option>
              ))}
            </select>
          </label>
          <button type="button" disabled={action.busy} onClick={create}>
            {action.busy ? "Working…" : live ? "Create a new share link" : "Create share link"}
          </button>
          {live ? (
            <button type="button" class="danger" disabled={action.busy} onClick={revoke}>
              Revoke share link
            </button>
          ) : null}
        </div>
      )}
      <ErrorNote error={action.error} />
    </Panel>
  );
}

/** The link in a read-only field with a Copy button; without clipboard access, it is selected. */
function CopyableLink({ url }: { url: string }) {
  const field = useRef<HTMLInputElement>(null);
  const { copy, message, reset } = useCopy();
  useEffect(reset, [url]);

  return (
    <div class="share-copy">
      <label class="share-url">
        Share link
        <input ref={field} readOnly value={url} onFocus={(event) => event.currentTarget.select()} />
      </label>
      <button type="button" class="secondary" onClick={() => void copy(url, () => field.current?.select())}>
        Copy
      </button>
      <span role="status" class="muted">
        {message ?? ""}
      </span>
    </div>
  );
}
