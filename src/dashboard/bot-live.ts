import { useEffect, useState } from "preact/hooks";
import type { ChatMessageView, LiveEvent } from "../server/schemas/live.js";
import { authorizedFetch } from "./api.js";
import { readEvents } from "./live.js";

const RETRY_MS = 3000;

/** An utterance of the live transcript as the page shows it: growing until it is final. */
export interface LiveUtterance {
  utteranceId: string;
  speaker: { participantId: string; name: string } | null;
  text: string;
  startMs: number;
  final: boolean;
}

export interface BotLive {
  utterances: LiveUtterance[];
  chat: ChatMessageView[];
  /** The latest transcript.source note ("captions unavailable: …"), if any. */
  sourceNote: string | null;
}

const EMPTY: BotLive = { utterances: [], chat: [], sourceNote: null };

/**
 * Follows one bot's live stream (GET /v1/bots/{id}/live) from its first event while `active`:
 * the transcript as it grows (a partial replaces the last text of its utterance, the final
 * settles it) and the chat. A dropped connection resumes after the last id, missing nothing.
 */
export function useBotLive(botId: number, active: boolean): BotLive {
  const [live, setLive] = useState<BotLive>(EMPTY);

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
          setLive((current) => apply(current, event));
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

function apply(current: BotLive, event: LiveEvent): BotLive {
  const data = event.data;
  switch (event.type) {
    case "transcript.partial":
    case "transcript.final": {
      const utterance: LiveUtterance = {
        utteranceId: String(data.utteranceId),
        speaker: (data.speaker as LiveUtterance["speaker"]) ?? null,
        text: String(data.text),
        startMs: Number(data.startMs),
        final: event.type === "transcript.final",
      };
      const others = current.utterances.filter((u) => u.utteranceId !== utterance.utteranceId);
      const utterances = [...others, utterance].sort((a, b) => a.startMs - b.startMs);
      return { ...current, utterances };
    }
    case "chat.message":
      return { ...current, chat: [...current.chat, data as unknown as ChatMessageView] };
    case "transcript.source":
      return {
        ...current,
        sourceNote:
          data.state === "active"
            ? null
            : `${String(data.source)} ${String(data.state)}${data.reason ? `: ${String(data.reason)}` : ""}`,
      };
    default:
      return current;
  }
}
