import { request, type Dispatcher } from "undici";
import { EngineError } from "./types.js";

/**
 * The one way the provider engines talk HTTP: undici with explicit timeouts, the caller's abort
 * signal, and every failure turned into an EngineError with the documented codes:
 * 401/403 → `credentials_invalid` (final), 429 → `rate_limited` (retryable, with Retry-After),
 * 5xx → `provider_error` (retryable), 400/404/413/422 and other 4xx → `request_rejected` (final),
 * no answer in time → `timeout`, no connection → `unreachable` (both retryable).
 */
export interface ProviderCall {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: Dispatcher.RequestOptions["body"];
  /** How long to wait for the answer's headers once the request is sent, and between body bytes. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface ProviderAnswer {
  status: number;
  json: unknown;
}

/** Sends the call and answers the parsed JSON of a 2xx; anything else throws an EngineError. */
export async function callProvider(provider: string, call: ProviderCall): Promise<ProviderAnswer> {
  call.signal?.throwIfAborted();
  let response;
  try {
    response = await request(call.url, {
      method: call.method,
      headers: call.headers,
      body: call.body,
      headersTimeout: call.timeoutMs,
      bodyTimeout: call.timeoutMs,
      signal: call.signal,
    });
  } catch (error) {
    throw transportError(provider, error, call.signal);
  }
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    throw transportError(provider, error, call.signal);
  }
  if (response.statusCode >= 200 && response.statusCode < 300) {
    try {
      return { status: response.statusCode, json: JSON.parse(text) as unknown };
    } catch {
      throw new EngineError("provider_error", `${provider} answered non-JSON: ${text.slice(0, 200)}`, true);
    }
  }
  throw statusError(provider, response.statusCode, response.headers["retry-after"], text);
}

export function statusError(
  provider: string,
  status: number,
  retryAfter: string | string[] | undefined,
  body: string,
): EngineError {
  const message = `${provider} answered HTTP ${status}: ${body.slice(0, 300)}`;
  if (status === 401 || status === 403) return new EngineError("credentials_invalid", message, false);
  if (status === 429) return new EngineError("rate_limited", message, true, parseRetryAfter(retryAfter));
  if (status >= 500) return new EngineError("provider_error", message, true);
  return new EngineError("request_rejected", message, false);
}

/** Retry-After is either seconds or an HTTP date; anything else is ignored. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw.trim())) return Math.round(Number(raw) * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"]);

function transportError(provider: string, error: unknown, signal: AbortSignal | undefined): unknown {
  // An abort is the caller's decision, not the provider's failure: it keeps the signal's reason.
  if (signal?.aborted) return signal.reason;
  const code = (error as { code?: string }).code ?? "";
  const message = `${provider}: ${(error as Error).message ?? String(error)}`;
  if (TIMEOUT_CODES.has(code)) return new EngineError("timeout", message, true);
  return new EngineError("unreachable", message, true);
}

/** Waits `ms`, or less when `early` settles first; rejects with the signal's reason on abort. */
export function waitUnless(
  ms: number,
  early: Promise<unknown> | undefined,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve();
    };
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
    early?.then(done, done);
  });
}
