import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real OpenID provider (the `oidc-provider` package) on 127.0.0.1 for the OAuth sign-in tests,
 * with a tiny interaction handler in place of a login page: the test "signs in" as an account of
 * its choosing by POSTing to /interaction/{uid}/login, or declines with /interaction/{uid}/abort.
 * Plus `Browser`, a fetch with a cookie jar that follows redirects one at a time.
 */

// oidc-provider ships no type declarations: the few parts used here, typed by hand.
interface Interaction {
  uid: string;
  prompt: { name: string };
  params: Record<string, unknown>;
}
interface Grant {
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
}
interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: new (init: { accountId: string; clientId: string }) => Grant;
}
type ProviderClass = new (issuer: string, configuration: Record<string, unknown>) => Provider;

export interface TestAccount {
  sub: string;
  email?: string;
  emailVerified?: boolean;
  name?: string;
}

export interface TestClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export class TestOidcProvider {
  private provider: Provider | undefined;
  private readonly accounts = new Map<string, TestAccount>();

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
  ) {}

  /**
   * Listens first, so that the issuer URL is known before the clients' redirect URIs are (the
   * server under test needs the issuer, the provider needs that server's callback URL).
   */
  static async listen(): Promise<TestOidcProvider> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const self = new TestOidcProvider(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (req: IncomingMessage, res: ServerResponse) => void self.handle(req, res));
    return self;
  }

  async start(clients: TestClient[]): Promise<void> {
    // A variable specifier: TypeScript then types the untyped package as `any` instead of failing.
    const specifier: string = "oidc-provider";
    const { default: Provider } = (await import(specifier)) as { default: ProviderClass };
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.provider = new Provider(this.issuer, {
      clients: clients.map((c) => ({
        client_id: c.clientId,
        client_secret: c.clientSecret,
        redirect_uris: c.redirectUris,
        token_endpoint_auth_method: "client_secret_post",
      })),
      jwks: {
        keys: [{ ...privateKey.export({ format: "jwk" }), kid: "test-key", use: "sig", alg: "RS256" }],
      },
      cookies: { keys: [randomBytes(32).toString("hex")] },
      claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
      // Like Google and Microsoft: the scope's claims are in the ID token itself.
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      ttl: {
        AccessToken: 600,
        AuthorizationCode: 60,
        Grant: 600,
        IdToken: 600,
        Interaction: 600,
        Session: 600,
      },
      findAccount: (_ctx: unknown, sub: string) => {
        const account = this.accounts.get(sub);
        if (!account) return undefined;
        return {
          accountId: sub,
          claims: () => ({
            sub,
            ...(account.email === undefined ? {} : { email: account.email }),
            ...(account.emailVerified === undefined ? {} : { email_verified: account.emailVerified }),
            ...(account.name === undefined ? {} : { name: account.name }),
          }),
        };
      },
    });
  }

  addAccount(account: TestAccount): TestAccount {
    this.accounts.set(account.sub, account);
    return account;
  }

  /**
   * Drives `browser` from our server's start URL through the provider: signs in as `sub` (or
   * declines), and returns the URL the provider sends the browser back to (not yet fetched).
   */
  async authorize(browser: Browser, startUrl: string, as: { sub: string } | "decline"): Promise<URL> {
    const interaction = await browser.followUntil(
      startUrl,
      (url) => url.origin === this.issuer && url.pathname.startsWith("/interaction/"),
    );
    const action = as === "decline" ? "abort" : "login";
    const body = as === "decline" ? "" : new URLSearchParams({ sub: as.sub }).toString();
    const answered = await browser.fetch(`${interaction.href}/${action}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    const next = answered.headers.get("location");
    if (!next) throw new Error(`interaction ${action} answered ${answered.status}`);
    return browser.followUntil(new URL(next, this.issuer).href, (url) => url.origin !== this.issuer);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const provider = this.provider;
    if (!provider) {
      res.writeHead(503).end("not started");
      return;
    }
    const match = /^\/interaction\/[^/]+\/(login|abort)$/.exec(new URL(req.url ?? "/", this.issuer).pathname);
    if (!match || req.method !== "POST") {
      provider.callback()(req, res);
      return;
    }
    try {
      const details = await provider.interactionDetails(req, res);
      if (match[1] === "abort") {
        await provider.interactionFinished(
          req,
          res,
          { error: "access_denied", error_description: "The user declined" },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const sub = new URLSearchParams(await readBody(req)).get("sub") ?? "";
      if (!this.accounts.has(sub)) throw new Error(`no test account "${sub}"`);
      // Signed in and consented in one step: a grant for what the client asked for.
      const grant = new provider.Grant({ accountId: sub, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: sub }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    } catch (err) {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
    }
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** fetch with a cookie jar per origin (cookie paths are ignored), never following redirects itself. */
export class Browser {
  private readonly jar = new Map<string, Map<string, string>>();

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const { origin } = new URL(url);
    const cookies = [...(this.jar.get(origin) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`);
    const headers = new Headers(init.headers);
    if (cookies.length) headers.set("cookie", cookies.join("; "));
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of response.headers.getSetCookie()) this.store(origin, line);
    return response;
  }

  get(url: string): Promise<Response> {
    return this.fetch(url);
  }

  cookie(origin: string, name: string): string | undefined {
    return this.jar.get(origin)?.get(name);
  }

  setCookie(origin: string, name: string, value: string): void {
    const cookies = this.jar.get(origin) ?? new Map<string, string>();
    this.jar.set(origin, cookies.set(name, value));
  }

  dropCookies(origin: string): void {
    this.jar.delete(origin);
  }

  /** GETs `url` and the redirects after it until `stop` is true for the next URL, which is returned. */
  async followUntil(url: string, stop: (url: URL) => boolean, maxHops = 10): Promise<URL> {
    let current = new URL(url);
    for (let hop = 0; hop < maxHops; hop++) {
      const response = await this.get(current.href);
      await response.arrayBuffer();
      const location = response.headers.get("location");
      if (!location) throw new Error(`${current.href} answered ${response.status} without a redirect`);
      current = new URL(location, current);
      if (stop(current)) return current;
    }
    throw new Error(`more than ${maxHops} redirects from ${url}`);
  }

  private store(origin: string, line: string): void {
    const [pair = "", ...attributes] = line.split(";").map((part) => part.trim());
    const eq = pair.indexOf("=");
    if (eq <= 0) return;
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const cookies = this.jar.get(origin) ?? new Map<string, string>();
    this.jar.set(origin, cookies);
    const expired = attributes.some(
      (a) => /^max-age=0$/i.test(a) || (/^expires=/i.test(a) && Date.parse(a.slice(8)) <= Date.now()),
    );
    if (expired || value === "") cookies.delete(name);
    else cookies.set(name, value);
  }
}
