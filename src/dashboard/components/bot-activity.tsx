import { useEffect, useState } from "preact/hooks";
import type { AggregatedEvent, BotEvent, BotLogEntry } from "../../server/schemas/events.js";
import { ErrorNote, formatTime, type Loaded, StatusBadge, useApi } from "./ui.js";

/**
 * A bot's statuses as they happened (the aggregated events of GET /v1/events, which carry each
 * status's sub-code and message), oldest first.
 */
export function StatusTimeline({ events }: { events: Loaded<{ events: AggregatedEvent[] }> }) {
  const items = [...(events.data?.events ?? [])].sort((a, b) => a.id - b.id);
  return (
    <>
      <ErrorNote error={events.error} />
      {events.data && items.length === 0 ? (
        <p class="empty">Nothing yet: the bot has not been deployed.</p>
      ) : null}
      <ol class="timeline" aria-label="Status timeline">
        {items.map((event) => (
          <li key={event.id}>
            <time dateTime={event.eventTime}>{formatTime(event.eventTime)}</time>
            <StatusBadge status={event.eventType} />
            <span>{describe(event)}</span>
          </li>
        ))}
      </ol>
    </>
  );
}

function describe(event: AggregatedEvent): string {
  const data = event.data;
  if (event.eventType === "RECORDING") {
    return typeof data.width === "number" ? `${data.width}×${data.height} at ${data.frameRate} fps` : "";
  }
  return [data.subCode, data.message].filter((part) => typeof part === "string" && part).join(": ");
}

interface Participant {
  id: string;
  name: string;
  joinedAt: string | null;
  leftAt: string | null;
}

/** Everyone the bot saw, from its PARTICIPANT_JOINED and _LEFT events (as the notes' meetings count them). */
export function participantsOf(events: BotEvent[]): Participant[] {
  const people = new Map<string, Participant>();
  for (const event of events) {
    if (event.eventType !== "PARTICIPANT_JOINED" && event.eventType !== "PARTICIPANT_LEFT") continue;
    const id = String(event.data?.participantId ?? "");
    const name = String(event.data?.participantName ?? "");
    const person = people.get(id) ?? { id, name, joinedAt: null, leftAt: null };
    if (event.eventType === "PARTICIPANT_JOINED") {
      person.joinedAt ??= event.eventTime;
      person.leftAt = null; // back again
      person.name = name;
    } else {
      person.leftAt = event.eventTime;
    }
    people.set(id, person);
  }
  return [...people.values()];
}

/** `finished`: the bot has left, so whoever never left was there to the end. */
export function Participants({ events, finished }: { events: Loaded<BotEvent[]>; finished: boolean }) {
  const people = participantsOf(events.data ?? []);
  return (
    <>
      <ErrorNote error={events.error} />
      {events.data && people.length === 0 ? <p class="empty">No one seen yet.</p> : null}
      {people.length > 0 ? (
        <table aria-label="Participants">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Joined</th>
              <th scope="col">Left</th>
            </tr>
          </thead>
          <tbody>
            {people.map((person) => (
              <tr key={person.id}>
                <td>{person.name ? <bdi>{person.name}</bdi> : <span class="muted">(no name)</span>}</td>
                <td class="nowrap">{formatTime(person.joinedAt)}</td>
                <td class="nowrap">
                  {person.leftAt ? formatTime(person.leftAt) : finished ? "stayed to the end" : "still there"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

const LEVELS = [
  ["info", "Everything"],
  ["warn", "Warnings and errors"],
  ["error", "Errors only"],
] as const;

/** The bot's newest log lines, at or above the chosen level; reloaded when `version` moves. */
export function BotLogs({ botId, version }: { botId: number; version: number }) {
  const [level, setLevel] = useState<string>("info");
  const logs = useApi<BotLogEntry[]>(`/v1/bots/${botId}/logs?level=${level}&limit=200`);
  const { reload } = logs;
  useEffect(() => {
    if (version > 0) void reload();
  }, [version, reload]);

  return (
    <>
      <div class="field inline">
        <label for="log-level">Level</label>
        <select id="log-level" value={level} onChange={(e) => setLevel(e.currentTarget.value)}>
          {LEVELS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <ErrorNote error={logs.error} />
      {logs.data && logs.data.length === 0 ? <p class="empty">No log lines at this level.</p> : null}
      {logs.data && logs.data.length > 0 ? (
        <div class="logs">
          <table aria-label="Log lines">
            <tbody>
              {logs.data.map((line) => (
                <tr key={line.id} class={`log-${line.level}`}>
                  <td class="nowrap">{formatTime(line.createdAt)}</td>
                  <td>{line.level}</td>
                  <td class="mono">{line.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
