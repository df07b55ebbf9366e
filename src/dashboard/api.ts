import { lastRotation, recordRotation } from "./rotation.js";
import { currentTokens, saveTokens } from "./session.js";

/** An answer other than 2xx, with the API's `{detail}` made readable. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(describeDetail(status, detail));
  }

  /** A 422's field errors by field ("meetingInfo.meetingUrl"), to show each beside its input. */
  fieldErrors(): Record<string, string> {
    return Object.fromEntries(fieldErrorList(this.detail).filter(([field]) => field !== ""));
  }
}

/** `{detail}` is a string, or field errors `[{loc, msg}]` (the API's 422): one line either way. */
function describeDetail(status: number, detail: unknown): string {
  if (typeof detail === "string") return detail;
  const fields = fieldErrorList(detail);
  if (fields.length > 0) return fields.map(([field, msg]) => (field ? `${field}: ${msg}` : msg)).join("; ");
  return `The server answered ${status}`;
}

/** [field path without the leading "body", message] for each item of a 422's detail. */
function fieldErrorList(detail: unknown): [string, string][] {
  if (!Array.isArray(detail)) return [];
  return detail.map((item: { loc?: unknown[]; msg?: string }) => [
    (item.loc ?? []).filter((part) => part !== "body").join("."),
    item.msg ?? "invalid",
  ]);
}

interface CallOptions {
  body?: unknown;
  /** For the sign-in calls, which must not try to refresh. */
  anonymous?: boolean;
  signal?: AbortSignal;
}

/** One call to the /v1 API with the signed-in user's token; a 401 refreshes it once and retries. */
export async function api<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const token = currentTokens()?.access;
  let response = await send(method, path, options, token);
  if (response.status === 401 && !options.anonymous && (await refreshAccessToken(token))) {
    response = await send(method, path, options, currentTokens()?.access);
  }
  if (response.status === 401 && !options.anonymous) saveTokens(null);
  const text = await response.text();
  const body: unknown =
    text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text;
  if (!response.ok) {
    const detail = body && typeof body === "object" && "detail" in body ? body.detail : body;
    throw new ApiFailure(response.status, detail);
  }
  return body as T;
}

/** A fetch with the bearer token, for answers that are not JSON (SSE, images). */
export async function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const attempt = (token: string | undefined) =>
    fetch(relativeUrl(path), {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${token ?? ""}` },
    });
  const token = currentTokens()?.access;
  const response = await attempt(token);
  if (response.status === 401 && (await refreshAccessToken(token))) return attempt(currentTokens()?.access);
  return response;
}

/**
 * Paths are written "/v1/..." and fetched relative to the page, which the server serves at its
 * root: a proxy that mounts the server under a path keeps it working.
 */
export function relativeUrl(path: string): string {
  return path.replace(/^\//, "");
}

function send(
  method: string,
  path: string,
  options: CallOptions,
  token: string | undefined,
): Promise<Response> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (token && !options.anonymous) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  return fetch(relativeUrl(path), {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
  });
}

// Several calls failing at once share one refresh.
let refreshing: Promise<boolean> | null = null;

/**
 * After a 401 with the access token `stale`: true when a newer one is in place to retry with.
 * Refresh tokens work once (the server rotates them, and a used one coming back ends the sign-in
 * for everyone holding it), and every tab shares one pair, so tabs take turns (a Web Lock, where
 * the browser has them: https and localhost), and a tab whose pair another tab has renewed in the
 * meantime takes the new one (rotation.ts) instead of trading the old one again.
 */
function refreshAccessToken(stale: string | undefined): Promise<boolean> {
  refreshing ??= withRefreshLock(async () => {
    const tokens = currentTokens();
    if (!tokens) return false;
    if (tokens.access !== stale) return true;
    const done = await lastRotation();
    if (done?.used === tokens.refresh) {
      saveTokens({ access: done.access, refresh: done.refresh });
      return true;
    }
    const response = await fetch(relativeUrl("/v1/auth/refresh"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: tokens.refresh }),
    });
    if (!response.ok) return false;
    const { access_token, refresh_token } = (await response.json()) as {
      access_token: string;
      refresh_token: string;
    };
    // Stored before the lock goes to the next tab.
    await recordRotation({ used: tokens.refresh, access: access_token, refresh: refresh_token });
    saveTokens({ access: access_token, refresh: refresh_token });
    return true;
  }).finally(() => {
    refreshing = null;
  });
  return refreshing;
}

function withRefreshLock(run: () => Promise<boolean>): Promise<boolean> {
  // Absent outside secure contexts (plain http to another host): then tabs do not wait for each other.
  const locks = (navigator as Partial<Navigator>).locks;
  // (request's type says it resolves to the callback's promise; it resolves to what that gives)
  return locks ? locks.request("meetbot.refresh", run).then((granted) => granted) : run();
}
