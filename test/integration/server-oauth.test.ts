import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe } from "vitest";
import { DEFAULT_ISSUERS, oauthConfigFromEnv } from "../../src/server/auth/oauth-config.js";
import { Browser, TestOidcProvider } from "../helpers/oidc-provider.js";
import {
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  errorDetail,
} from "../helpers/server-harness.js";
import { expect, readRow, test } from "../helpers/fixtures.js";

/**
 * OAuth sign-in against a real OpenID provider (oidc-provider) on 127.0.0.1, driven over plain HTTP
 * like a browser: our start URL → the provider → its interaction → back to our callback.
 * Both of our providers point at it, each with its own client.
 */

const ENV = {
  MEETBOT_OAUTH_GOOGLE_CLIENT_ID: "meetbot-google",
  MEETBOT_OAUTH_GOOGLE_CLIENT_SECRET: "google-secret-0123456789",
  MEETBOT_OAUTH_MICROSOFT_CLIENT_ID: "meetbot-microsoft",
  MEETBOT_OAUTH_MICROSOFT_CLIENT_SECRET: "microsoft-secret-0123456789",
};

let idp: TestOidcProvider;
let server: TestServer;

beforeAll(async () => {
  idp = await TestOidcProvider.listen();
});
// The server reads its providers from the environment, as in production: this one with both
// issuers pointing at the provider started above.
test.override("serverOptions", { scope: "file" }, () => ({
  env: {
    ...process.env,
    ...ENV,
    MEETBOT_OAUTH_GOOGLE_ISSUER: idp.issuer,
    MEETBOT_OAUTH_MICROSOFT_ISSUER: idp.issuer,
  },
}));
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  await idp.start([
    {
      clientId: ENV.MEETBOT_OAUTH_GOOGLE_CLIENT_ID,
      clientSecret: ENV.MEETBOT_OAUTH_GOOGLE_CLIENT_SECRET,
      redirectUris: [`${server.url}/v1/auth/oauth/google/callback`],
    },
    {
      clientId: ENV.MEETBOT_OAUTH_MICROSOFT_CLIENT_ID,
      clientSecret: ENV.MEETBOT_OAUTH_MICROSOFT_CLIENT_SECRET,
      redirectUris: [`${server.url}/v1/auth/oauth/microsoft/callback`],
    },
  ]);
});
afterAll(() => idp?.close());

const newAccount = (extra: { email?: string; emailVerified?: boolean } = {}) =>
  idp.addAccount({
    sub: `sub-${randomUUID()}`,
    email: `oauth-${randomUUID()}@example.com`,
    emailVerified: true,
    name: "Olivia Auth",
    ...extra,
  });

/** The whole flow; returns our callback's response (a redirect to the post-login URL, or an error). */
async function signIn(sub: string, provider = "google", browser = new Browser()) {
  const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/${provider}`, { sub });
  expect(back.href.startsWith(`${server.url}/v1/auth/oauth/${provider}/callback?`)).toBe(true);
  return { response: await browser.get(back.href), browser, callbackUrl: back };
}

/** access_token and refresh_token from a successful callback's redirect. */
function tokensFrom(response: Response) {
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get("location") ?? "");
  expect(`${location.origin}${location.pathname}`).toBe(`${server.url}/auth/callback`);
  const access = location.searchParams.get("access_token") ?? "";
  const refresh = location.searchParams.get("refresh_token") ?? "";
  return { access, refresh, userId: Number(decodeJwt(access).sub), location };
}

describe("GET /v1/auth/oauth/{provider}", () => {
  test("redirects to the provider with state, nonce and an S256 PKCE challenge, and sets the flow cookie", async () => {
    const res = await new Browser().get(`${server.url}/v1/auth/oauth/google`);
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get("location") ?? "");
    expect(to.origin).toBe(idp.issuer);
    const q = to.searchParams;
    expect(q.get("client_id")).toBe(ENV.MEETBOT_OAUTH_GOOGLE_CLIENT_ID);
    expect(q.get("response_type")).toBe("code");
    expect(q.get("redirect_uri")).toBe(`${server.url}/v1/auth/oauth/google/callback`);
    expect(q.get("scope")?.split(" ")).toEqual(expect.arrayContaining(["openid", "email"]));
    expect(q.get("state")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get("nonce")).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get("code_challenge_method")).toBe("S256");
    expect(q.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("meetbot_oauth="));
    expect(cookie).toMatch(/; Path=\/v1\/auth\/oauth; Max-Age=600; HttpOnly; SameSite=Lax$/);
    // Sealed: neither the verifier nor the state can be read from it.
    expect(cookie).not.toContain(q.get("state"));
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  test("answers 404 with a clear detail for an unknown provider", async () => {
    const res = await server.api.get("/v1/auth/oauth/github");
    expect(res.status).toBe(404);
    expect(errorDetail(res.body)).toMatch(/Unknown sign-in provider.*google and microsoft/);
  });
});

describe("the OAuth callback", () => {
  test("creates a user without a password and redirects to /auth/callback with working tokens", async ({
    db,
  }) => {
    const account = newAccount();
    const { response, browser } = await signIn(account.sub);
    const { access, refresh } = tokensFrom(response);
    expect(decodeJwt(access).typ).toBe("access");
    expect(decodeJwt(refresh).typ).toBe("refresh");
    expect((await server.api.get("/v1/bots", { token: access })).status).toBe(200);
    const refreshed = await server.api.post("/v1/auth/refresh", { body: { refresh_token: refresh } });
    expect(refreshed.status).toBe(200);
    expect(new URL(tokensFrom(response).location).searchParams.has("state")).toBe(false);
    // the flow cookie is gone
    expect(browser.cookie(server.url, "meetbot_oauth")).toBeUndefined();

    // No password works for this account, and the answer is the usual one.
    const login = await server.api.post("/v1/auth/login", {
      body: { email: account.email, password: "any password at all" },
    });
    expect(login.status).toBe(401);
    expect(login.body).toEqual({ detail: "Invalid email or password" });

    const user = await readRow(db, "users", account.email ?? "", "email");
    expect(user?.name).toBe("Olivia Auth");
    expect(user?.password_hash).not.toMatch(/^\$argon2/);
  });

  test("starts a sign-in whose refresh tokens rotate, and a reused one ends it", async () => {
    const { access, refresh } = tokensFrom((await signIn(newAccount().sub)).response);
    const refreshOnce = (token: string) =>
      server.api.post("/v1/auth/refresh", { body: { refresh_token: token } });
    const first = await refreshOnce(refresh);
    expect(first.status).toBe(200);
    const second = await refreshOnce(first.body.refresh_token);
    expect(second.status).toBe(200);
    expect((await server.api.get("/v1/bots", { token: second.body.access_token })).status).toBe(200);

    expect((await refreshOnce(refresh)).status).toBe(401);
    expect((await refreshOnce(second.body.refresh_token)).status).toBe(401);
    for (const token of [access, first.body.access_token, second.body.access_token]) {
      expect((await server.api.get("/v1/bots", { token })).status).toBe(401);
    }
  });

  test("hands the start's state back with the tokens, and refuses a malformed one", async () => {
    const state = "a-client-state_0123456789";
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google?state=${state}`, {
      sub: newAccount().sub,
    });
    const { location, access } = tokensFrom(await browser.get(back.href));
    expect(location.searchParams.get("state")).toBe(state);
    // Not the state we gave the provider: that one is ours, and stays in the sealed cookie.
    expect(back.searchParams.get("state")).not.toBe(state);
    expect((await server.api.get("/v1/bots", { token: access })).status).toBe(200);

    for (const bad of ["short", "x".repeat(129), "has space in it 0123"]) {
      const res = await new Browser().get(
        `${server.url}/v1/auth/oauth/google?state=${encodeURIComponent(bad)}`,
      );
      expect(res.status, bad).toBe(422);
      expect((await res.json()).detail[0].loc).toEqual(["query", "state"]);
    }
  });

  test("signs the same provider subject in as the same user again", async () => {
    const account = newAccount();
    const first = tokensFrom((await signIn(account.sub)).response);
    const bot = await server.api.post("/v1/bots", {
      token: first.access,
      body: { meetingInfo: TEST_MEETING },
    });
    expect(bot.status).toBe(201);

    const second = tokensFrom((await signIn(account.sub)).response);
    expect(second.userId).toBe(first.userId);
    const seen = await server.api.get(`/v1/bots/${bot.body.id}`, { token: second.access });
    expect(seen.status).toBe(200);
  });

  test("links a verified e-mail to the existing password account, which keeps its password", async () => {
    const user = await registerUser(server.api, "Pat Password");
    const account = newAccount({ email: user.email.toUpperCase(), emailVerified: true });
    const { userId } = tokensFrom((await signIn(account.sub)).response);
    expect(userId).toBe(Number(user.userId.slice(4)));

    const login = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(login.status).toBe(200);
    // The other provider's identity with the same verified e-mail joins the same account.
    const viaMicrosoft = tokensFrom((await signIn(account.sub, "microsoft")).response);
    expect(viaMicrosoft.userId).toBe(userId);
  });

  test("does not link an unverified e-mail to an existing account (409, no tokens)", async ({ user }) => {
    const account = newAccount({ email: user.email, emailVerified: false });
    const { response } = await signIn(account.sub);
    expect(response.status).toBe(409);
    expect((await response.json()).detail).toMatch(/already exists.*sign in with your password/);
  });

  test("refuses a callback whose state was tampered with (400), and creates no user", async ({ db }) => {
    const account = newAccount();
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google`, { sub: account.sub });
    back.searchParams.set("state", `${back.searchParams.get("state")}x`);
    const res = await browser.get(back.href);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/state mismatch/);
    expect(res.headers.getSetCookie().some((c) => /^meetbot_oauth=;.*Max-Age=0/.test(c))).toBe(true);

    expect(await readRow(db, "users", account.email ?? "", "email")).toBeUndefined();
  });

  test.each([
    ["without a code", (q: URLSearchParams) => q.delete("code")],
    ["with an empty code", (q: URLSearchParams) => q.set("code", "")],
    ["with two codes", (q: URLSearchParams) => q.append("code", "second")],
    ["with another issuer", (q: URLSearchParams) => q.set("iss", "http://evil.example")],
    ["with an empty error", (q: URLSearchParams) => q.set("error", "")],
  ])("answers 400, not a provider failure, for a callback %s", async (_name, spoil) => {
    const account = newAccount();
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google`, { sub: account.sub });
    spoil(back.searchParams);
    const res = await browser.get(back.href);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/malformed/);
  });

  test("refuses a callback in a browser that did not start the flow (no flow cookie)", async () => {
    const account = newAccount();
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google`, { sub: account.sub });
    browser.dropCookies(server.url);
    const res = await browser.get(back.href);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/expired or was started in another browser/);
  });

  test("answers a clear 400 when the user declines at the provider (error=access_denied)", async () => {
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google`, "decline");
    expect(back.searchParams.get("error")).toBe("access_denied");
    const res = await browser.get(back.href);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/Google did not complete the sign-in \(access_denied/);
  });

  test("refuses a replayed callback: the provider will not take a code twice", async () => {
    const account = newAccount();
    const browser = new Browser();
    const back = await idp.authorize(browser, `${server.url}/v1/auth/oauth/google`, { sub: account.sub });
    const flowCookie = browser.cookie(server.url, "meetbot_oauth") ?? "";
    tokensFrom(await browser.get(back.href));
    // Someone who copied both the cookie and the callback URL tries again.
    const copy = new Browser();
    copy.setCookie(server.url, "meetbot_oauth", flowCookie);
    const res = await copy.get(back.href);
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/Google refused the sign-in code \(invalid_grant\)/);
  });
});

describe("GET /auth/callback (the default post-login page)", () => {
  test("shows the tokens, uncached, with a strict content security policy", async () => {
    const { location, access } = tokensFrom((await signIn(newAccount().sub)).response);
    const res = await fetch(location);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("content-security-policy")).toMatch(/default-src 'none'; script-src 'sha256-/);
    const html = await res.text();
    expect(html).toContain(access);
    // What a tab shows when the result is not its own sign-in's (the page's script unhides it).
    expect(html).toMatch(/<div id="refused" hidden>[\s\S]*nothing was kept/);
  });

  test("says so when there is no sign-in result", async () => {
    const res = await fetch(`${server.url}/auth/callback?access_token=%3Cscript%3E`);
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain("Not signed in");
    expect(html).not.toContain("<script>");
  });
});

describe("providers that are not configured or not reachable", () => {
  let other: TestServer;
  let deadIssuer: string;
  beforeAll(async () => {
    deadIssuer = `http://127.0.0.1:${await closedPort()}`;
    other = await startTestServer({
      oauth: {
        providers: { microsoft: { issuer: deadIssuer, clientId: "id", clientSecret: "secret" } },
        redirectUrl: undefined,
      },
    });
  });
  afterAll(() => other?.close());

  test("answers 404 for a provider without configuration", async () => {
    const res = await other.api.get("/v1/auth/oauth/google");
    expect(res.status).toBe(404);
    expect(errorDetail(res.body)).toBe("Sign-in with Google is not configured on this server");
    const callback = await other.api.get("/v1/auth/oauth/google/callback?code=x&state=y");
    expect(callback.status).toBe(404);
  });

  test("answers 502 when the provider cannot be reached", async () => {
    const res = await other.api.get("/v1/auth/oauth/microsoft");
    expect(res.status).toBe(502);
    expect(errorDetail(res.body)).toMatch(/Microsoft sign-in is unavailable/);
  });
});

describe("OAuth configuration from the environment", () => {
  test("defaults the issuers, and needs the client id and secret together", () => {
    expect(oauthConfigFromEnv({})).toEqual({ providers: {}, redirectUrl: undefined });
    const config = oauthConfigFromEnv({ ...ENV, MEETBOT_OAUTH_REDIRECT_URL: "https://app.example.com/done" });
    expect(config.providers.google?.issuer).toBe(DEFAULT_ISSUERS.google);
    expect(config.providers.microsoft?.issuer).toBe("https://login.microsoftonline.com/common/v2.0");
    expect(config.redirectUrl).toBe("https://app.example.com/done");
    expect(() => oauthConfigFromEnv({ MEETBOT_OAUTH_GOOGLE_CLIENT_ID: "x" })).toThrow(/must be set together/);
  });

  test("accepts plain http issuers on loopback only", () => {
    const env = { ...ENV, MEETBOT_OAUTH_GOOGLE_ISSUER: "http://127.0.0.1:9000" };
    expect(oauthConfigFromEnv(env).providers.google?.issuer).toBe("http://127.0.0.1:9000");
    expect(() =>
      oauthConfigFromEnv({ ...env, MEETBOT_OAUTH_GOOGLE_ISSUER: "http://idp.example.com" }),
    ).toThrow(/https URL/);
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
