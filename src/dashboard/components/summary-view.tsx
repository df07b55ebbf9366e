import type { Summary } from "../../server/schemas/index.js";
import { formatClock } from "./ui.js";

/**
 * A summary: its overview, key points, action items with their owners and dues, decisions. An
 * owner's name and the item's words are each a `<bdi>` (see TranscriptList).
 */
export function SummaryView({ summary, onSeek }: { summary: Summary; onSeek(ms: number): void }) {
  return (
    <div class="summary">
      <h3>Overview</h3>
      <p>{summary.overview || "—"}</p>
      {summary.keyPoints.length > 0 ? (
        <>
          <h3>Key points</h3>
          <ul>
            {summary.keyPoints.map((point, i) => (
              <li key={i}>{point}</li>
            ))}
          </ul>
        </>
      ) : null}
      <h3>Action items</h3>
      {summary.actionItems.length === 0 ? (
        <p class="empty">None.</p>
      ) : (
        <ul class="action-items" aria-label="Action items">
          {summary.actionItems.map((item, i) => (
            <li key={i}>
              <bdi class="owner">{item.owner ?? "No owner"}</bdi>: <bdi>{item.text}</bdi>
              {item.due ? <span class="muted"> · due {item.due}</span> : null}
              {item.startMs === null ? null : (
                <>
                  {" "}
                  <button
                    type="button"
                    class="link"
                    aria-label={`Play from ${formatClock(item.startMs)}`}
                    onClick={() => onSeek(item.startMs ?? 0)}
                  >
                    {formatClock(item.startMs)}
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      <h3>Decisions</h3>
      {summary.decisions.length === 0 ? (
        <p class="empty">None.</p>
      ) : (
        <ul aria-label="Decisions">
          {summary.decisions.map((decision, i) => (
            <li key={i}>{decision}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
