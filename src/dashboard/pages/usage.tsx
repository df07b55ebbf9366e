import { useState } from "preact/hooks";
import type { Analytics, ApiLogList, Usage } from "../../server/schemas/users.js";
import { ErrorNote, formatTime, Panel, useApi } from "../components/ui.js";

/** What the user's bots and API calls added up to: a month, the last 30 days, the latest requests. */
export function UsagePage() {
  const [period, setPeriod] = useState("");
  const usage = useApi<Usage>(period ? `/v1/users/me/usage?period=${period}` : "/v1/users/me/usage");
  const analytics = useApi<Analytics>("/v1/users/me/analytics?days=30");
  const logs = useApi<ApiLogList>("/v1/users/me/api-logs?page_size=20");
  const loading = usage.loading || analytics.loading || logs.loading;
  const refresh = async () => {
    // One after another: each read counts as a request, and the log shows the ones before it.
    await usage.reload();
    await analytics.reload();
    await logs.reload();
  };

  return (
    <>
      <h1>Usage</h1>
      <div class="usage-bar">
        <label>
          Month
          <input
            type="month"
            value={period || usage.data?.period.name || ""}
            onChange={(e) => setPeriod(e.currentTarget.value)}
          />
        </label>
        <button type="button" class="secondary" onClick={refresh} disabled={loading}>
          {loading ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      <div class="columns">
        <Panel title={usage.data ? `Month ${usage.data.period.name} (UTC)` : "Month"}>
          <ErrorNote error={usage.error} />
          {usage.data ? <MonthFigures usage={usage.data} /> : null}
        </Panel>
        <Panel title="Last 30 days">
          <ErrorNote error={analytics.error} />
          {analytics.data ? <DailyFigures analytics={analytics.data} /> : null}
        </Panel>
      </div>
      <Panel title="Recent API requests">
        <ErrorNote error={logs.error} />
        {logs.data ? <RequestLog logs={logs.data} /> : null}
      </Panel>
    </>
  );
}

function MonthFigures({ usage }: { usage: Usage }) {
  return (
    <table class="figures">
      <tbody>
        <Figure name="Bots created" value={usage.bots.created} />
        {Object.entries(usage.bots.byStatus).map(([status, count]) => (
          <Figure key={status} name={`… now ${status}`} value={count} sub />
        ))}
        <Figure name="Recordings" value={usage.recordings.count} />
        <Figure name="Recorded minutes" value={usage.recordings.recordedMinutes} />
        <Figure name="API requests" value={usage.apiRequests} />
      </tbody>
    </table>
  );
}

function Figure({ name, value, sub = false }: { name: string; value: number; sub?: boolean }) {
  return (
    <tr aria-label={name}>
      <th scope="row" class={sub ? "sub" : undefined}>
        {name}
      </th>
      <td class="num">{value}</td>
    </tr>
  );
}

function DailyFigures({ analytics }: { analytics: Analytics }) {
  const { totals } = analytics;
  const active = analytics.days.filter(
    (day) => day.botsCreated > 0 || day.recordedMinutes > 0 || day.apiRequests > 0,
  );
  return (
    <>
      <p class="muted">
        {analytics.start} to {analytics.end}: {totals.botsCreated} bots, {totals.recordedMinutes} recorded
        minutes, {totals.apiRequests} API requests{failureText(totals.failures)}.
      </p>
      {active.length === 0 ? (
        <p class="empty">Nothing in these days.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Day</th>
              <th class="num">Bots</th>
              <th class="num">Minutes</th>
              <th class="num">API requests</th>
              <th>Failures</th>
            </tr>
          </thead>
          <tbody>
            {active.reverse().map((day) => (
              <tr key={day.date}>
                <td>{day.date}</td>
                <td class="num">{day.botsCreated}</td>
                <td class="num">{day.recordedMinutes}</td>
                <td class="num">{day.apiRequests}</td>
                <td>{failureText(day.failures).replace(/^; /, "") || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** "; 2 failed (JOIN_FAILED 1, KILLED 1)", or "" when none failed. */
function failureText(failures: Record<string, number>): string {
  const entries = Object.entries(failures);
  if (entries.length === 0) return "";
  const total = entries.reduce((n, [, count]) => n + count, 0);
  return `; ${total} failed (${entries.map(([code, count]) => `${code} ${count}`).join(", ")})`;
}

function RequestLog({ logs }: { logs: ApiLogList }) {
  if (logs.logs.length === 0) return <p class="empty">No requests logged yet.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Time</th>
          <th>Request</th>
          <th class="num">Status</th>
          <th class="num">Latency</th>
          <th>Credential</th>
        </tr>
      </thead>
      <tbody>
        {logs.logs.map((log) => (
          <tr key={log.id}>
            <td>{formatTime(log.createdAt)}</td>
            <td class="mono">
              {log.method} {log.path}
            </td>
            <td class="num">{log.statusCode}</td>
            <td class="num">{log.latencyMs.toFixed(1)} ms</td>
            <td class="mono">
              {log.credential.kind === "api_key"
                ? (log.credential.keyPreview ?? "a deleted key")
                : "signed in"}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
