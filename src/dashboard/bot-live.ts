import { useEffect, useState } from "preact/hooks";
import type { LiveEvent } from "../server/schemas/live.js";
import { authorizedFetch } from "./api.js";
import { readEvents } from "./live.js";
import { applyLiveEvent, type BotLive, EMPTY_LIVE } from "./live-state.js";

export type { BotLive, LiveUtterance } from "./live-state.js";

const RETRY_MS = 3000;

/**
 * Follows one bot's live stream (GET /v1/bots/{id}/live) from its first event while `active`:
 * the transcript as it grows (a partial replaces the last text of its utterance, the final
 * settles it) and the chat. A dropped connection resumes after the last id, missing nothing.
 */
export function useBotLive(botId: number, active: boolean): BotLive {
  const [live, setLive] = useState<BotLive>(EMPTY_LIVE);

  useEffect(() => {
    if (!active) return;
    const abort = new AbortController();
    let lastId = "0";
    let retry: number | undefined;
    const connect = async () => {
      try {
        const response = await authorizedFetch(`/v1/bots/${botId}/live`, {
          headers: { "last-event-id": lastId },
          signal: abort.signal,
        });
        if (!response.ok || !response.body) throw new Error(`live stream: HTTP ${response.status}`);
        await readEvents(response.body, (id, data) => {
          lastId = id;
          const event = JSON.parse(data) as LiveEvent;
          setLive((current) => applyLiveEvent(current, event));
        });
      } catch {
        // Aborted, or the connection dropped: resumed below unless the page is going away.
      }
      if (!abort.signal.aborted) retry = window.setTimeout(connect, RETRY_MS);
    };
    void connect();
    return () => {
      abort.abort();
      window.clearTimeout(retry);
    };
  }, [botId, active]);
  return live;
}
