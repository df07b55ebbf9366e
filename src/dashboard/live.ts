import { useEffect, useRef, useState } from "preact/hooks";
import { authorizedFetch } from "./api.js";

/** An item of GET /v1/events, as the stream sends it. */
export interface LiveEvent {
  id: number;
  botId: number;
  botName: string;
  platform: string;
  eventType: string;
  eventTime: string;
  data: Record<string, unknown>;
}

export type LiveState = "connecting" | "live" | "reconnecting";

const RETRY_MS = 3000;

type Listener = (event: LiveEvent) => void;
const listeners = new Set<Listener>();

/** Calls `onEvent` for each live event while the component is shown. */
export function useLiveEvent(onEvent: Listener): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const listener: Listener = (event) => handler.current(event);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
}

/**
 * The one connection of the page (the app shell holds it while signed in): follows
 * GET /v1/events/stream and hands each event to every useLiveEvent, resuming after a dropped
 * connection from the last id seen (Last-Event-ID), so that no event is missed. EventSource cannot
 * send the Authorization header, hence fetch() and a small reader of the SSE format.
 */
export function useLiveConnection(): LiveState {
  const [state, setState] = useState<LiveState>("connecting");

  useEffect(() => {
    const abort = new AbortController();
    let lastId: string | undefined;
    let retry: number | undefined;

    const connect = async () => {
      try {
        const response = await authorizedFetch("/v1/events/stream", {
          headers: lastId ? { "last-event-id": lastId } : {},
          signal: abort.signal,
        });
        if (!response.ok || !response.body) throw new Error(`event stream: HTTP ${response.status}`);
        setState("live");
        await readEvents(response.body, (id, data) => {
          lastId = id;
          const event = JSON.parse(data) as LiveEvent;
          for (const listener of listeners) listener(event);
        });
      } catch {
        // Aborted, or the connection failed: retried below unless the page is going away.
      }
      if (abort.signal.aborted) return;
      setState("reconnecting");
      retry = window.setTimeout(connect, RETRY_MS);
    };
    void connect();
    return () => {
      abort.abort();
      window.clearTimeout(retry);
    };
  }, []);
  return state;
}

/** Reads `id:` and `data:` fields of server-sent events until the stream ends. */
export async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (id: string, data: string) => void,
) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = "";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length > 0) onEvent(id, data.join("\n"));
    }
  }
}
