import { useEffect, useRef } from "preact/hooks";
import type { TranscriptUtterance } from "../../server/schemas/index.js";
import { formatClock } from "./ui.js";

/** The utterance being said at `ms`, or -1 between utterances. */
export function utteranceAt(utterances: readonly TranscriptUtterance[], ms: number): number {
  return utterances.findIndex((u) => u.startMs <= ms && ms < u.endMs);
}

/**
 * The transcript as a list of buttons, one per utterance: the one under the player's time is
 * marked current and kept in view; pressing one seeks the player to where it starts. The name and
 * the words are each a `<bdi>`: a right-to-left override in a name (U+202E) stays inside the name
 * instead of turning the words after it around.
 */
export function TranscriptList({
  utterances,
  currentMs,
  onSeek,
}: {
  utterances: readonly TranscriptUtterance[];
  currentMs: number;
  onSeek(ms: number): void;
}) {
  const list = useRef<HTMLOListElement>(null);
  const current = utteranceAt(utterances, currentMs);

  useEffect(() => {
    const box = list.current;
    const item = box?.children[current] as HTMLElement | undefined;
    if (!box || !item) return;
    // Scrolls the list only, never the page: the reader may be looking elsewhere on it.
    const top = item.offsetTop;
    const bottom = top + item.offsetHeight;
    if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) {
      box.scrollTo({ top: top - box.clientHeight / 3, behavior: "smooth" });
    }
  }, [current]);

  if (utterances.length === 0) return <p class="empty">No speech was recognized.</p>;
  return (
    <ol class="transcript" ref={list} aria-label="Transcript">
      {utterances.map((utterance, index) => (
        <li key={`${utterance.startMs}-${index}`}>
          <button
            type="button"
            class="utterance"
            aria-current={index === current ? "true" : undefined}
            onClick={() => onSeek(utterance.startMs)}
          >
            <time>{formatClock(utterance.startMs)}</time>
            <bdi class="speaker">{utterance.speaker?.name ?? "Unknown speaker"}</bdi>
            <bdi class="said">{utterance.text}</bdi>
          </button>
        </li>
      ))}
    </ol>
  );
}
