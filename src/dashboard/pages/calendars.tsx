import { useEffect, useState } from "preact/hooks";
import type {
  Calendar,
  CalendarEventList,
  CalendarList,
  SyncResult,
} from "../../server/schemas/calendars.js";
import { api, ApiFailure } from "../api.js";
import { PLATFORM_LABELS } from "../components/bot-meeting.js";
import { ErrorNote, formatTime, Panel, StatusBadge, useAction, useApi } from "../components/ui.js";

/**
 * Calendar feeds: a user's iCalendar feeds, when each was last read and how, and the upcoming
 * events with a meeting link with their bots. The feed's address is a secret: after it is added
 * the page shows only its host, as the API does.
 */
export function CalendarsPage() {
  const calendars = useApi<CalendarList>("/v1/calendars");
  // A calendar just added is read by the server in a moment: look again until it has been.
  const pending = calendars.data?.calendars.some((calendar) => calendar.lastSyncStatus === "pending");
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => void calendars.reload(), 1000);
    return () => clearTimeout(timer);
  }, [pending, calendars.data]);
  return (
    <>
      <h1>Calendars</h1>
      <p class="muted">
        Add a calendar's secret iCalendar address (Google Calendar: "Secret address in iCal format"; Outlook:
        a published calendar's ICS link). Every meeting in it with a Google Meet, Zoom or Teams link gets a
        bot that joins at its start; the calendar is read again every few minutes.
      </p>
      <AddCalendarForm onAdded={calendars.reload} />
      <ErrorNote error={calendars.error} />
      {calendars.data && calendars.data.calendars.length === 0 ? (
        <p class="empty">No calendars yet.</p>
      ) : null}
      {calendars.data?.calendars.map((calendar) => (
        <CalendarPanel key={calendar.id} calendar={calendar} onChange={calendars.reload} />
      ))}
    </>
  );
}

function AddCalendarForm({ onAdded }: { onAdded(): Promise<void> }) {
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [autoJoin, setAutoJoin] = useState<"all" | "none">("all");
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setFieldErrors({});
    const added = await action.run(async () => {
      try {
        return await api<Calendar>("POST", "/v1/calendars", { body: { name, url, autoJoin } });
      } catch (failure) {
        if (failure instanceof ApiFailure) setFieldErrors(failure.fieldErrors());
        throw failure;
      }
    });
    if (added) {
      setName("");
      setUrl("");
      await onAdded();
    }
  };
  const problem = (field: string) =>
    fieldErrors[field] ? <span class="field-error">{fieldErrors[field]}</span> : null;
  return (
    <Panel title="Add a calendar">
      <form class="webhook-form" onSubmit={submit} aria-label="Add a calendar">
        <div class="grid2">
          <label>
            Name
            <input value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
            {problem("name")}
          </label>
          <label>
            Bots
            <select value={autoJoin} onChange={(e) => setAutoJoin(e.currentTarget.value as "all" | "none")}>
              <option value="all">For every meeting</option>
              <option value="none">Only those I add</option>
            </select>
          </label>
        </div>
        <label>
          Feed address
          <input
            type="url"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
            required
            placeholder="https://calendar.google.com/calendar/ical/…/basic.ics"
          />
          <span class="hint">Stored encrypted and never shown again: it lets anyone read the calendar.</span>
          {problem("url")}
        </label>
        <div>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Adding…" : "Add calendar"}
          </button>
        </div>
      </form>
      <ErrorNote error={action.error} />
    </Panel>
  );
}

function CalendarPanel({ calendar, onChange }: { calendar: Calendar; onChange(): Promise<void> }) {
  const events = useApi<CalendarEventList>(`/v1/calendars/${calendar.id}/events`);
  const action = useAction();
  // Each sync (the server's own too) may have changed the events.
  const reloadEvents = events.reload;
  useEffect(() => {
    void reloadEvents();
  }, [calendar.lastSyncAt, reloadEvents]);
  const syncNow = async () => {
    const done = await action.run(() => api<SyncResult>("POST", `/v1/calendars/${calendar.id}/sync`));
    if (done) await onChange();
  };
  const remove = async () => {
    if (!window.confirm(`Delete the calendar "${calendar.name}" and the bots still only scheduled for it?`))
      return;
    const done = await action.run(() => api("DELETE", `/v1/calendars/${calendar.id}`).then(() => true));
    if (done) await onChange();
  };
  const setBot = async (uid: string, recurrenceId: string | null, method: "POST" | "DELETE") => {
    const query = recurrenceId ? `?recurrenceId=${encodeURIComponent(recurrenceId)}` : "";
    const path = `/v1/calendars/${calendar.id}/events/${encodeURIComponent(uid)}/bot${query}`;
    if (await action.run(() => api(method, path))) await events.reload();
  };
  return (
    <Panel
      title={calendar.name}
      actions={
        <>
          <button type="button" class="secondary" onClick={syncNow} disabled={action.busy}>
            {action.busy ? "Working…" : "Sync now"}
          </button>
          <button type="button" class="danger" onClick={remove} disabled={action.busy}>
            Delete
          </button>
        </>
      }
    >
      <p>
        {calendar.urlHost} · {calendar.autoJoin === "all" ? "bots for every meeting" : "bots added by hand"} ·
        last sync <StatusBadge status={calendar.lastSyncStatus} /> {formatTime(calendar.lastSyncAt)}
      </p>
      {calendar.lastSyncError ? (
        <p class="error" role="alert">
          {calendar.lastSyncError}
        </p>
      ) : null}
      <ErrorNote error={action.error ?? events.error} />
      {events.data && events.data.events.length === 0 ? <p class="empty">No upcoming meetings.</p> : null}
      {events.data && events.data.events.length > 0 ? (
        <table aria-label={`Upcoming meetings of ${calendar.name}`}>
          <thead>
            <tr>
              <th>Meeting</th>
              <th>Starts</th>
              <th>Platform</th>
              <th>Bot</th>
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {events.data.events.map((event) => (
              <tr
                key={`${event.uid} ${event.recurrenceId ?? ""}`}
                aria-label={`${event.title} ${event.start}`}
              >
                <td>{event.title}</td>
                <td>{formatTime(event.start)}</td>
                <td>{PLATFORM_LABELS[event.meetingInfo.platform]}</td>
                <td>
                  {event.botId === null ? (
                    "—"
                  ) : (
                    <a href={`#/bots/${event.botId}`}>
                      <StatusBadge status={event.botStatus ?? "deleted"} />
                    </a>
                  )}
                </td>
                <td class="actions">
                  <button
                    type="button"
                    class="secondary"
                    onClick={() =>
                      setBot(event.uid, event.recurrenceId, event.botId === null ? "POST" : "DELETE")
                    }
                    disabled={action.busy}
                  >
                    {event.botId === null ? "Add bot" : "Remove bot"}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </Panel>
  );
}
