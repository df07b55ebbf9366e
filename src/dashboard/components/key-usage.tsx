import type { ApiKeyUsage } from "../../server/schemas/users.js";
import { ErrorNote, formatTime, useApi } from "./ui.js";

/** One API key's requests over the last 30 days, by endpoint (from the API request log). */
export function KeyUsage({ keyId }: { keyId: number }) {
  const usage = useApi<ApiKeyUsage>(`/v1/api-keys/${keyId}/usage`);
  if (usage.error) return <ErrorNote error={usage.error} />;
  if (!usage.data) return <p class="muted">Loading usage…</p>;
  const { totalRequests, start, end, endpoints, lastUsedAt } = usage.data;
  return (
    <div class="key-usage">
      <p>
        <strong>{totalRequests}</strong> {totalRequests === 1 ? "request" : "requests"} from {start} to {end};
        last used {formatTime(lastUsedAt)}.
      </p>
      {endpoints.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th>Endpoint</th>
              <th class="num">Requests</th>
              <th>Last used</th>
            </tr>
          </thead>
          <tbody>
            {endpoints.map((endpoint) => (
              <tr key={`${endpoint.method} ${endpoint.route}`}>
                <td class="mono">
                  {endpoint.method} {endpoint.route}
                </td>
                <td class="num">{endpoint.requests}</td>
                <td>{formatTime(endpoint.lastUsedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
