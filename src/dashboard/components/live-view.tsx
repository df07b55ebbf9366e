import { useEffect, useState } from "preact/hooks";
import { authorizedFetch } from "../api.js";
import { formatTime } from "./ui.js";

/**
 * The next screenshot is asked for this long after the last one arrived: a view that moves, and
 * within the server's limit of one screenshot a second per bot (viewers share them).
 */
const REFRESH_MS = 1500;

/** Statuses in which the bot has a meeting page to show (GET /v1/bots/{id}/screenshot). */
export const WITH_A_PAGE = ["JOINING_CALL", "IN_WAITING_ROOM", "IN_CALL"];

/**
 * What the bot's page shows now, refreshed while it has one: for seeing why a join is stuck
 * without a display. Each screenshot needs the bearer token, so it is fetched and shown as a blob
 * URL, the previous one revoked once the next is on screen.
 */
export function LiveView({ botId }: { botId: number }) {
  const [shot, setShot] = useState<{ url: string; takenAt: string }>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let gone = false;
    let timer: number | undefined;
    let shown: string | undefined;
    const next = async () => {
      try {
        const response = await authorizedFetch(`/v1/bots/${botId}/screenshot`);
        if (!response.ok) {
          const body = (await response.json().catch(() => ({}))) as { detail?: string };
          throw new Error(body.detail ?? `HTTP ${response.status}`);
        }
        const url = URL.createObjectURL(await response.blob());
        if (gone) return URL.revokeObjectURL(url);
        if (shown) URL.revokeObjectURL(shown);
        shown = url;
        setShot({ url, takenAt: response.headers.get("x-screenshot-taken-at") ?? "" });
        setError(undefined);
      } catch (failure) {
        if (!gone) setError((failure as Error).message);
      }
      if (!gone) timer = window.setTimeout(() => void next(), REFRESH_MS);
    };
    void next();
    return () => {
      gone = true;
      window.clearTimeout(timer);
      if (shown) URL.revokeObjectURL(shown);
    };
  }, [botId]);

  return (
    <figure class="live-view">
      {shot ? (
        <img class="screenshot" src={shot.url} alt="What the bot's meeting page shows now" />
      ) : (
        <p class="muted">Waiting for the first screenshot…</p>
      )}
      <figcaption class="muted">
        {error ? <span class="error">{error}</span> : shot ? `Taken ${formatTime(shot.takenAt)}` : null}
      </figcaption>
    </figure>
  );
}
