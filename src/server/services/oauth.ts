import * as oidc from "openid-client";
import { z } from "zod";
import {
  isLoopback,
  isOAuthProvider,
  OAUTH_PROVIDERS,
  type OAuthProviderConfig,
  type OAuthProviderName,
} from "../auth/oauth-config.js";
import {
  CLIENT_STATE,
  clearedFlowCookie,
  type CookieScope,
  flowCookie,
  OAUTH_FLOW_TTL_S,
  type OAuthFlow,
} from "../auth/oauth-flow.js";
import { NO_PASSWORD } from "../auth/passwords.js";
import { isUniqueViolation, toIso } from "../db/database.js";
import { ApiError, BadRequestError, ConflictError, NotFoundError } from "../errors.js";
import type { ServiceContext } from "./context.js";
import { normalizeEmail, type UserService } from "./users.js";

const LABELS: Record<OAuthProviderName, string> = { google: "Google", microsoft: "Microsoft" };
const SCOPE = "openid email profile";
/** Seconds for each request to a provider (discovery, token, keys). */
const PROVIDER_TIMEOUT_S = 10;

/** The provider could not be reached, or answered something we cannot use: not the user's fault. */
export class ProviderError extends ApiError {
  constructor(detail: string) {
    super(502, detail);
  }
}

/** A browser redirect with the flow cookie to set (or clear). */
export interface OAuthRedirect {
  location: string;
  setCookie: string;
}

/** What the callback received: its parsed query and the raw query string (for openid-client). */
export interface OAuthCallbackInput {
  state?: string;
  error?: string;
  error_description?: string;
  rawQuery: string;
  cookie: string | undefined;
}

const ProviderEmail = z.email().max(320);

/**
 * OpenID Connect sign-in (authorization code + PKCE, openid-client): redirect to the provider,
 * then at the callback validate the ID token and find, link or create the user.
 */
export class OAuthService {
  /** One discovery per provider and process; a failed one is retried on the next sign-in. */
  private readonly clients = new Map<OAuthProviderName, Promise<oidc.Configuration>>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly users: UserService,
  ) {}

  /** The providers this server is configured for, for sign-in pages to offer. */
  configuredProviders(): { name: OAuthProviderName; label: string }[] {
    return OAUTH_PROVIDERS.filter((name) => this.ctx.config.oauth.providers[name]).map((name) => ({
      name,
      label: LABELS[name],
    }));
  }

  /**
   * The redirect to the provider's authorization endpoint, and the sealed flow cookie.
   * `clientState` (checked by the route) comes back with the tokens as `state`.
   */
  async start(name: string, clientState?: string): Promise<OAuthRedirect> {
    const provider = this.provider(name);
    const config = await this.client(provider);
    const flow: OAuthFlow = {
      provider,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      codeVerifier: oidc.randomPKCECodeVerifier(),
      ...(clientState === undefined ? {} : { clientState }),
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.callbackUrl(provider),
      scope: SCOPE,
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: "S256",
    });
    const sealed = await this.ctx.jwt.seal({ ...flow }, OAUTH_FLOW_TTL_S, this.ctx.now());
    return { location: url.href, setCookie: flowCookie(sealed, this.cookieScope()) };
  }

  /** The cookie header that ends a flow; the callback sends it whatever the outcome. */
  clearCookie(): string {
    return clearedFlowCookie(this.cookieScope());
  }

  /** Completes the sign-in; the redirect carries access_token, refresh_token and the client's state. */
  async finish(name: string, input: OAuthCallbackInput): Promise<string> {
    const provider = this.provider(name);
    const flow = await this.openFlow(provider, input.cookie);
    if (input.state !== flow.state) {
      throw new BadRequestError(
        "The sign-in response does not belong to this browser's sign-in attempt (state mismatch); start again",
      );
    }
    if (input.error) {
      const description = input.error_description ? `: ${input.error_description.slice(0, 200)}` : "";
      throw new BadRequestError(
        `${LABELS[provider]} did not complete the sign-in (${input.error.slice(0, 64)}${description})`,
      );
    }

    const config = await this.client(provider);
    const malformed = malformedCallbackQuery(input.rawQuery, config.serverMetadata().issuer);
    if (malformed) throw new BadRequestError(`The sign-in response is malformed (${malformed}); start again`);
    const currentUrl = new URL(this.callbackUrl(provider));
    currentUrl.search = input.rawQuery;
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      throw this.providerFailure(provider, err);
    }
    if (!claims) throw new ProviderError(`${LABELS[provider]} returned no ID token`);

    const userId = await this.userFor(provider, claims);
    const { access_token, refresh_token } = await this.users.issueTokens(userId);
    const target = new URL(this.ctx.config.oauth.redirectUrl ?? `${this.ctx.publicBaseUrl()}/auth/callback`);
    target.searchParams.set("access_token", access_token);
    target.searchParams.set("refresh_token", refresh_token);
    if (flow.clientState !== undefined) target.searchParams.set("state", flow.clientState);
    return target.href;
  }

  /** The provider's name if it is known and configured; a 404 otherwise. */
  private provider(name: string): OAuthProviderName {
    if (!isOAuthProvider(name)) {
      throw new NotFoundError(`Unknown sign-in provider; the providers are ${OAUTH_PROVIDERS.join(" and ")}`);
    }
    if (!this.ctx.config.oauth.providers[name]) {
      throw new NotFoundError(`Sign-in with ${LABELS[name]} is not configured on this server`);
    }
    return name;
  }

  /** The redirect_uri registered with the provider: always under /v1, whichever prefix started the flow. */
  private callbackUrl(provider: OAuthProviderName): string {
    return `${this.ctx.publicBaseUrl()}/v1/auth/oauth/${provider}/callback`;
  }

  private cookieScope(): CookieScope {
    const base = new URL(`${this.ctx.publicBaseUrl()}/v1/auth/oauth`);
    return { path: base.pathname, secure: base.protocol === "https:" };
  }

  private async openFlow(provider: OAuthProviderName, cookie: string | undefined): Promise<OAuthFlow> {
    const payload = cookie ? await this.ctx.jwt.unseal(cookie, this.ctx.now()) : null;
    const flow = payload as Partial<OAuthFlow> | null;
    if (
      !flow ||
      flow.provider !== provider ||
      typeof flow.state !== "string" ||
      typeof flow.nonce !== "string" ||
      typeof flow.codeVerifier !== "string"
    ) {
      throw new BadRequestError(
        `This sign-in attempt has expired or was started in another browser; start again at /v1/auth/oauth/${provider}`,
      );
    }
    const { state, nonce, codeVerifier, clientState } = flow;
    return {
      provider,
      state,
      nonce,
      codeVerifier,
      ...(typeof clientState === "string" && CLIENT_STATE.test(clientState) ? { clientState } : {}),
    };
  }

  private client(provider: OAuthProviderName): Promise<oidc.Configuration> {
    let client = this.clients.get(provider);
    if (!client) {
      const settings = this.ctx.config.oauth.providers[provider] as OAuthProviderConfig;
      client = discover(settings).catch((err: unknown) => {
        this.clients.delete(provider);
        this.ctx.log.warn({ err, provider }, "OpenID discovery failed");
        throw new ProviderError(
          `${LABELS[provider]} sign-in is unavailable: its OpenID configuration could not be read`,
        );
      });
      this.clients.set(provider, client);
    }
    return client;
  }

  private providerFailure(provider: OAuthProviderName, err: unknown): ApiError {
    const label = LABELS[provider];
    if (err instanceof oidc.AuthorizationResponseError) {
      return new BadRequestError(`${label} did not complete the sign-in (${err.error})`);
    }
    if (err instanceof oidc.ResponseBodyError) {
      // e.g. invalid_grant: the code was used already, or has expired
      return new BadRequestError(`${label} refused the sign-in code (${err.error}); start again`);
    }
    if (err instanceof oidc.ClientError) {
      this.ctx.log.warn({ err, provider }, "OpenID sign-in failed");
      return new ProviderError(`${label} sign-in failed: its response could not be verified`);
    }
    throw err;
  }

  /**
   * The user behind a validated ID token: the one already linked to (provider, sub); else the
   * user with the same e-mail when the provider says it verified it (the identity is linked);
   * else a new user without a password.
   */
  private async userFor(provider: OAuthProviderName, claims: oidc.IDToken): Promise<number> {
    const parsed = ProviderEmail.safeParse(claims.email);
    const email = parsed.success ? normalizeEmail(parsed.data) : null;
    const verified = claims.email_verified === true || claims.email_verified === "true";
    const name = displayName(claims, email);
    try {
      return await this.linkOrCreate(provider, claims.sub, email, verified, name);
    } catch (err) {
      // Two callbacks for the same new person at once: the second finds what the first made.
      if (!isUniqueViolation(err)) throw err;
      return this.linkOrCreate(provider, claims.sub, email, verified, name);
    }
  }

  private linkOrCreate(
    provider: OAuthProviderName,
    subject: string,
    email: string | null,
    verified: boolean,
    name: string,
  ): Promise<number> {
    const now = toIso(this.ctx.now());
    return this.ctx.db.transaction().execute(async (trx) => {
      const identity = await trx
        .selectFrom("user_identities")
        .select("user_id")
        .where("provider", "=", provider)
        .where("subject", "=", subject)
        .executeTakeFirst();
      if (identity) return identity.user_id;

      if (!email) {
        throw new BadRequestError(
          `${LABELS[provider]} did not share an e-mail address; allow access to it and sign in again`,
        );
      }
      const existing = await trx
        .selectFrom("users")
        .select("id")
        .where("email", "=", email)
        .executeTakeFirst();
      if (existing && !verified) {
        throw new ConflictError(
          `An account with this e-mail already exists, and ${LABELS[provider]} does not confirm that the address is yours; sign in with your password`,
        );
      }
      const userId =
        existing?.id ??
        (
          await trx
            .insertInto("users")
            .values({ email, name, password_hash: NO_PASSWORD, created_at: now })
            .returning("id")
            .executeTakeFirstOrThrow()
        ).id;
      await trx
        .insertInto("user_identities")
        .values({ user_id: userId, provider, subject, email, created_at: now })
        .execute();
      return userId;
    });
  }
}

/** Discovery with the ID token's signature checked against the provider's keys. */
function discover(settings: OAuthProviderConfig): Promise<oidc.Configuration> {
  const issuer = new URL(settings.issuer);
  const execute = [oidc.enableNonRepudiationChecks];
  // Plain http is accepted by configuration only on loopback (checkIssuer); openid-client must be told.
  if (issuer.protocol === "http:" && isLoopback(issuer.hostname)) execute.push(oidc.allowInsecureRequests);
  return oidc.discovery(issuer, settings.clientId, settings.clientSecret, undefined, {
    execute,
    timeout: PROVIDER_TIMEOUT_S,
  });
}

function displayName(claims: oidc.IDToken, email: string | null): string {
  const given = [claims.given_name, claims.family_name].filter((p) => typeof p === "string").join(" ");
  const candidates = [claims.name, given, email?.split("@")[0]];
  for (const candidate of candidates) {
    if (typeof candidate === "string" && candidate.trim()) return candidate.trim().slice(0, 200);
  }
  return "User";
}

/**
 * What the browser brought back that openid-client would refuse as an invalid response (and we
 * would then report as the provider's failure, a 502): it is the request's fault, a 400. Null when
 * the query is fit to exchange. A templated issuer (Microsoft's multi-tenant `{tenantid}`) cannot
 * be compared here; openid-client checks `iss` against it.
 */
export function malformedCallbackQuery(rawQuery: string, issuer: string): string | null {
  const query = new URLSearchParams(rawQuery);
  if (query.has("error")) return "an empty or repeated error parameter";
  const codes = query.getAll("code");
  if (codes.length !== 1 || codes[0] === "") return "exactly one non-empty code is required";
  const iss = query.getAll("iss");
  if (iss.length > 1) return "more than one iss";
  if (iss.length === 1 && !issuer.includes("{") && iss[0] !== issuer) return "iss is not this provider";
  return null;
}
