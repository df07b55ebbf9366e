import { request } from "undici";
import { z } from "zod";
import { StartupError } from "../startup-error.js";
import { isLoopback } from "./oauth-config.js";

/**
 * Teams bot identification: a token minted by the OAuth 2.0 client-credentials flow for the
 * operator's Entra ID app, with scope https://ic3.teams.office.com/.default, that each Teams bot
 * gets in its BotConfig (`teamsBotToken`) and opens the meeting with (`#token=<TOKEN>`), so Teams
 * puts it in its ordinary lobby rather than under "Suspected threats".
 *
 * The client secret and the token are secrets: no log line, event, answer, webhook or error
 * message carries either (every error message here is built from the HTTP status and the
 * endpoint's error code alone, never from its body or the request).
 */
export interface TeamsBotIdentityConfig {
  tenantId: string;
  clientId: string;
  /** Never echoed. */
  clientSecret: string;
  /** Default `https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token`; https unless loopback. */
  tokenUrl: string;
}

export const TEAMS_BOT_TOKEN_SCOPE = "https://ic3.teams.office.com/.default";

/** A cached token is used until this long before it expires; after that the next deploy mints anew. */
export const REFRESH_BEFORE_EXPIRY_MS = 5 * 60 * 1000;

/** The whole mint (connect, request, answer) gives up after this long. */
export const MINT_TIMEOUT_MS = 15_000;

/** The BotConfig's own bound on `teamsBotToken`. */
const MAX_TOKEN_CHARS = 16_384;

const TENANT_ID = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$/;

/**
 * MEETBOT_TEAMS_BOT_TENANT_ID, _CLIENT_ID and _CLIENT_SECRET: all three or none (then no bot is
 * identified); MEETBOT_TEAMS_TOKEN_URL overrides Microsoft's endpoint (tests, a proxy) and needs
 * the three. Undefined: not configured.
 */
export function teamsBotIdentityFromEnv(env: {
  MEETBOT_TEAMS_BOT_TENANT_ID: string | undefined;
  MEETBOT_TEAMS_BOT_CLIENT_ID: string | undefined;
  MEETBOT_TEAMS_BOT_CLIENT_SECRET: string | undefined;
  MEETBOT_TEAMS_TOKEN_URL: string | undefined;
}): TeamsBotIdentityConfig | undefined {
  const tenantId = env.MEETBOT_TEAMS_BOT_TENANT_ID?.trim();
  const clientId = env.MEETBOT_TEAMS_BOT_CLIENT_ID?.trim();
  const clientSecret = env.MEETBOT_TEAMS_BOT_CLIENT_SECRET;
  const tokenUrl = env.MEETBOT_TEAMS_TOKEN_URL?.trim();
  const given = [tenantId, clientId, clientSecret].filter(Boolean).length;
  if (given === 0) {
    if (tokenUrl)
      throw new StartupError(
        "MEETBOT_TEAMS_TOKEN_URL is set but MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID and MEETBOT_TEAMS_BOT_CLIENT_SECRET are not: set all three to identify Teams bots",
      );
    return undefined;
  }
  if (!tenantId || !clientId || !clientSecret) {
    const missing = [
      ["MEETBOT_TEAMS_BOT_TENANT_ID", tenantId],
      ["MEETBOT_TEAMS_BOT_CLIENT_ID", clientId],
      ["MEETBOT_TEAMS_BOT_CLIENT_SECRET", clientSecret],
    ]
      .filter(([, value]) => !value)
      .map(([name]) => name);
    throw new StartupError(
      `MEETBOT_TEAMS_BOT_TENANT_ID, MEETBOT_TEAMS_BOT_CLIENT_ID and MEETBOT_TEAMS_BOT_CLIENT_SECRET: set all three, or none (missing ${missing.join(", ")})`,
    );
  }
  if (!TENANT_ID.test(tenantId))
    throw new StartupError(
      `MEETBOT_TEAMS_BOT_TENANT_ID must be a tenant id (a GUID) or a domain like contoso.onmicrosoft.com, got "${tenantId}"`,
    );
  return {
    tenantId,
    clientId,
    clientSecret,
    tokenUrl: tokenUrl
      ? checkTokenUrl(tokenUrl)
      : `https://login.microsoftonline.com/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`,
  };
}

/** https, or plain http on a loopback address (a stand-in started by a test). */
function checkTokenUrl(value: string): string {
  const url = URL.parse(value);
  if (!url) throw new StartupError(`MEETBOT_TEAMS_TOKEN_URL is not a URL: "${value}"`);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname)))
    throw new StartupError(
      `MEETBOT_TEAMS_TOKEN_URL must be an https URL (http only on a loopback address), got "${value}"`,
    );
  if (url.username || url.password || url.hash)
    throw new StartupError("MEETBOT_TEAMS_TOKEN_URL must not have credentials or a fragment");
  return url.toString();
}

/** A mint that failed; its message says why with no secret in it (safe for the bot's log). */
export class TeamsBotTokenError extends Error {
  override readonly name = "TeamsBotTokenError";
}

const TokenAnswer = z.object({
  access_token: z.string().min(1).max(MAX_TOKEN_CHARS),
  token_type: z.string().regex(/^bearer$/i),
  // Microsoft's v2.0 endpoint answers a number; v1.0 and some proxies a string of digits.
  expires_in: z.union([z.number().int().positive(), z.string().regex(/^\d+$/).transform(Number)]),
});

/**
 * The bot-identification token, minted on demand and shared: one token serves every Teams bot
 * until REFRESH_BEFORE_EXPIRY_MS before it expires; one mint is in flight at a time (bots
 * deploying together wait for the same one). A failed mint is not remembered: the next call tries
 * again.
 */
export class TeamsBotTokens {
  private cached: { token: string; refreshAt: number } | undefined;
  private minting: Promise<string> | undefined;

  constructor(
    private readonly config: TeamsBotIdentityConfig,
    private readonly now: () => Date = () => new Date(),
    private readonly timeoutMs = MINT_TIMEOUT_MS,
  ) {}

  /** A valid token, cached or minted now; rejects with a TeamsBotTokenError. */
  token(): Promise<string> {
    const cached = this.cached;
    if (cached && this.now().getTime() < cached.refreshAt) return Promise.resolve(cached.token);
    this.minting ??= this.mint().finally(() => {
      this.minting = undefined;
    });
    return this.minting;
  }

  private async mint(): Promise<string> {
    const sentAt = this.now().getTime();
    const body = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: this.config.clientId,
      client_secret: this.config.clientSecret,
      scope: TEAMS_BOT_TOKEN_SCOPE,
    }).toString();
    let status: number;
    let text: string;
    try {
      const response = await request(this.config.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      throw new TeamsBotTokenError(`the token endpoint could not be reached (${transportReason(error)})`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new TeamsBotTokenError(
        status >= 200 && status < 300
          ? "the token endpoint's answer is not JSON"
          : `the token endpoint answered HTTP ${status}`,
      );
    }
    if (status < 200 || status >= 300)
      throw new TeamsBotTokenError(`the token endpoint answered HTTP ${status}${errorCodes(json)}`);
    const answer = TokenAnswer.safeParse(json);
    if (!answer.success)
      throw new TeamsBotTokenError(
        "the token endpoint's answer has no usable token (access_token, token_type Bearer and expires_in expected)",
      );
    const { access_token: token, expires_in: expiresIn } = answer.data;
    this.cached = { token, refreshAt: sentAt + expiresIn * 1000 - REFRESH_BEFORE_EXPIRY_MS };
    return token;
  }
}

/** The transport failure's code (ECONNREFUSED, a timeout), never the request. */
function transportReason(error: unknown): string {
  const err = error as { name?: string; code?: string; cause?: { code?: string } };
  if (
    err.name === "TimeoutError" ||
    err.code === "UND_ERR_HEADERS_TIMEOUT" ||
    err.code === "UND_ERR_BODY_TIMEOUT"
  )
    return "no answer in time";
  const code = err.code ?? err.cause?.code;
  return typeof code === "string" && /^[A-Z_]{2,40}$/.test(code) ? code : "network error";
}

/**
 * The OAuth error code and Microsoft's AADSTS number of an error answer, checked to be codes: the
 * description's free text (which can quote the request) is left out.
 */
function errorCodes(json: unknown): string {
  if (!json || typeof json !== "object") return "";
  const { error, error_codes: codes } = json as { error?: unknown; error_codes?: unknown };
  const parts: string[] = [];
  if (typeof error === "string" && /^[a-z_]{1,64}$/.test(error)) parts.push(error);
  const first = Array.isArray(codes) ? (codes as unknown[])[0] : undefined;
  if (typeof first === "number" && Number.isInteger(first)) parts.push(`AADSTS${first}`);
  return parts.length > 0 ? `: ${parts.join(", ")}` : "";
}
