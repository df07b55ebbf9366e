import type { OAuthProviderName } from "./oauth-config.js";

/**
 * One sign-in attempt, from the redirect to the provider until its callback. It travels in a
 * cookie sealed by the server secret (encrypted, expiring), so any server process can finish a
 * flow another one started, and nothing is stored for abandoned attempts.
 */
export interface OAuthFlow {
  provider: OAuthProviderName;
  state: string;
  nonce: string;
  codeVerifier: string;
  /**
   * The `state` the client that started the sign-in gave (the dashboard: a random value it keeps in
   * the tab's sessionStorage); handed back with the tokens so that the client can tell its own
   * sign-in's result from a link carrying someone else's tokens.
   */
  clientState?: string;
}

/** What a client's `state` may be: 16 to 128 URL-safe characters. */
export const CLIENT_STATE = /^[A-Za-z0-9_-]{16,128}$/;

export const OAUTH_FLOW_COOKIE = "meetbot_oauth";
/** How long a user may take at the provider. */
export const OAUTH_FLOW_TTL_S = 10 * 60;

export interface CookieScope {
  /** Only the callbacks need the cookie. */
  path: string;
  /** Set when the server is reached over https. */
  secure: boolean;
}

/**
 * SameSite=Lax: the provider sends the browser back with a top-level GET, which carries Lax
 * cookies; HttpOnly: no script needs it.
 */
export function flowCookie(sealed: string, scope: CookieScope): string {
  return serialize(sealed, OAUTH_FLOW_TTL_S, scope);
}

export function clearedFlowCookie(scope: CookieScope): string {
  return serialize("", 0, scope);
}

function serialize(value: string, maxAge: number, { path, secure }: CookieScope): string {
  const attributes = [`Path=${path}`, `Max-Age=${maxAge}`, "HttpOnly", "SameSite=Lax"];
  if (secure) attributes.push("Secure");
  return [`${OAUTH_FLOW_COOKIE}=${value}`, ...attributes].join("; ");
}

/** The flow cookie's value from a Cookie header; our sealed value never needs decoding. */
export function readFlowCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === OAUTH_FLOW_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}
