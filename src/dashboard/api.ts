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
  let response = await send(method, path, options);
  if (response.status === 401 && !options.anonymous && (await refreshAccessToken())) {
    response = await send(method, path, options);
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
  const attempt = () =>
    fetch(relativeUrl(path), {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${currentTokens()?.access ?? ""}` },
    });
  const response = await attempt();
  if (response.status === 401 && (await refreshAccessToken())) return attempt();
  return response;
}

/**
 * Paths are written "/v1/..." and fetched relative to the page, which the server serves at its
 * root: a proxy that mounts the server under a path keeps it working.
 */
export function relativeUrl(path: string): string {
  return path.replace(/^\//, "");
}

function send(method: string, path: string, options: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: "application/json" };
  const token = currentTokens()?.access;
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

function refreshAccessToken(): Promise<boolean> {
  refreshing ??= (async () => {
    const tokens = currentTokens();
    if (!tokens) return false;
    const response = await fetch(relativeUrl("/v1/auth/refresh"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: tokens.refresh }),
    });
    if (!response.ok) return false;
    const { access_token } = (await response.json()) as { access_token: string };
    saveTokens({ access: access_token, refresh: tokens.refresh });
    return true;
  })().finally(() => {
    refreshing = null;
  });
  return refreshing;
}
