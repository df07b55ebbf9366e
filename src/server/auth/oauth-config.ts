import { StartupError } from "../startup-error.js";

/** The OpenID Connect providers users can sign in with; the names are the path segment. */
export const OAUTH_PROVIDERS = ["google", "microsoft"] as const;
export type OAuthProviderName = (typeof OAUTH_PROVIDERS)[number];

export interface OAuthProviderConfig {
  /** The OpenID issuer; its discovery document is read on first use. */
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface OAuthConfig {
  /** Only configured providers are here; the others answer 404. */
  providers: Partial<Record<OAuthProviderName, OAuthProviderConfig>>;
  /** Where the browser goes after sign-in, with access_token and refresh_token; default `<publicBaseUrl>/auth/callback`. */
  redirectUrl: string | undefined;
}

/**
 * Microsoft's multi-tenant "common" endpoint publishes the issuer template
 * `https://login.microsoftonline.com/{tenantid}/v2.0`; openid-client recognises it and checks each
 * ID token's `iss` against the template filled with the token's own `tid`.
 */
export const DEFAULT_ISSUERS: Record<OAuthProviderName, string> = {
  google: "https://accounts.google.com",
  microsoft: "https://login.microsoftonline.com/common/v2.0",
};

export function isOAuthProvider(name: string): name is OAuthProviderName {
  return (OAUTH_PROVIDERS as readonly string[]).includes(name);
}

/**
 * Per provider: MEETBOT_OAUTH_<NAME>_CLIENT_ID and _CLIENT_SECRET (both, or neither: the provider
 * is then off), _ISSUER (optional). MEETBOT_OAUTH_REDIRECT_URL: the post-login page.
 */
export function oauthConfigFromEnv(env: NodeJS.ProcessEnv): OAuthConfig {
  const providers: OAuthConfig["providers"] = {};
  for (const name of OAUTH_PROVIDERS) {
    const prefix = `MEETBOT_OAUTH_${name.toUpperCase()}_`;
    const clientId = env[`${prefix}CLIENT_ID`] || undefined;
    const clientSecret = env[`${prefix}CLIENT_SECRET`] || undefined;
    if (!clientId && !clientSecret) continue;
    if (!clientId || !clientSecret) {
      throw new StartupError(`${prefix}CLIENT_ID and ${prefix}CLIENT_SECRET must be set together`);
    }
    const issuer = checkIssuer(`${prefix}ISSUER`, env[`${prefix}ISSUER`] || DEFAULT_ISSUERS[name]);
    providers[name] = { issuer, clientId, clientSecret };
  }
  const redirect = env.MEETBOT_OAUTH_REDIRECT_URL || undefined;
  return { providers, redirectUrl: redirect && checkRedirectUrl(redirect) };
}

/** HTTPS only, except plain HTTP on a loopback address (a provider started by a test or on this machine). */
export function checkIssuer(name: string, value: string): string {
  const url = parseUrl(name, value);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname))) {
    throw new StartupError(`${name} must be an https URL (http only on a loopback address), got "${value}"`);
  }
  if (url.search || url.hash) throw new StartupError(`${name} must not have a query or fragment`);
  return value;
}

export function isLoopback(hostname: string): boolean {
  return (
    hostname === "localhost" ||
    hostname === "[::1]" ||
    /^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/.test(hostname)
  );
}

function checkRedirectUrl(value: string): string {
  const url = parseUrl("MEETBOT_OAUTH_REDIRECT_URL", value);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new StartupError(`MEETBOT_OAUTH_REDIRECT_URL must be an http(s) URL, got "${value}"`);
  }
  if (url.hash) throw new StartupError("MEETBOT_OAUTH_REDIRECT_URL must not have a fragment");
  return value;
}

function parseUrl(name: string, value: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new StartupError(`${name} is not a URL: "${value}"`);
  }
}
