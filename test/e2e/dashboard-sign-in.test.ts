import { randomUUID } from "node:crypto";
import { decodeJwt } from "jose";
import type { Browser } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import { DASHBOARD_CSP } from "../../src/server/http/dashboard.js";
import {
  closeTabs,
  type DashboardTab,
  expectNoProblems,
  openDashboard,
  registerThroughUi,
} from "../helpers/dashboard.js";
import { launchTestChromium } from "../helpers/mock-browser.js";
import { TestOidcProvider } from "../helpers/oidc-provider.js";
import { registerUser, startTestServer, type TestServer } from "../helpers/server-harness.js";

let server: TestServer;
let browser: Browser;
const tabs: DashboardTab[] = [];
beforeAll(async () => {
  server = await startTestServer();
  browser = await launchTestChromium();
});
afterEach(() => closeTabs(tabs));
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function open(hash = "") {
  const tab = await openDashboard(browser, server.url, hash);
  tabs.push(tab);
  return tab;
}

describe("the dashboard's front door", () => {
  it("is served at / with a same-origin policy, its assets cached for ever, and loads nothing else", async () => {
    const index = await fetch(`${server.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("content-security-policy")).toBe(DASHBOARD_CSP);
    const html = await index.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(3);
    for (const asset of assets) {
      expect(asset).toMatch(/^assets\/(app-[0-9a-f]{12}\.(js|css)|icon-[0-9a-f]{12}\.svg)$/);
      const answer = await fetch(`${server.url}/${asset}`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get("cache-control")).toContain("immutable");
    }
    expect((await fetch(`${server.url}/assets/app-000000000000.js`)).status).toBe(404);

    // Every request the page makes goes to this server.
    const tab = await open();
    const origins = new Set<string>();
    tab.page.on("request", (request) => origins.add(new URL(request.url()).origin));
    await tab.page.reload();
    await tab.page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect([...origins]).toEqual([server.url]);
    expect(tab.problems).toEqual([]);
  });

  it("registers, stays signed in across a reload, signs out, and signs in again", async () => {
    const tab = await open();
    const { email, password } = await registerThroughUi(tab);
    await tab.page.reload();
    await tab.page.getByText(email).waitFor();
    await expect.poll(() => tab.page.getByRole("status").textContent()).toBe("Live");

    await tab.page.getByRole("button", { name: "Sign out" }).click();
    await tab.page.getByRole("heading", { name: "Sign in" }).waitFor();
    await tab.page.getByLabel("E-mail").fill(email);
    await tab.page.getByLabel("Password").fill("not the password");
    await tab.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await expect.poll(() => tab.page.getByRole("alert").textContent()).toMatch(/e-?mail or password/i);

    await tab.page.getByLabel("Password").fill(password);
    await tab.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await tab.page.getByText(email).waitFor();
    // The wrong password's 401 is the only thing the console saw.
    expectNoProblems(tab, { refusals: /^401 POST \/v1\/auth\/login$/ });
  });

  it("refreshes an expired access token, keeps the rotated refresh token, and two tabs take turns", async () => {
    const user = await registerUser(server.api);
    const { gen, fam } = decodeJwt(user.token) as { gen: number; fam: string };
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const expired = await jwt.sign(Number(user.userId.slice(4)), "access", new Date(Date.now() - 3_600_000), {
      gen,
      fam,
    });
    const tab = await open();
    const { page } = tab;
    // A missing element fails the test naming its locator, well before the test's own timeout.
    tab.context.setDefaultTimeout(10_000);
    const stored = () =>
      page.evaluate(
        () => JSON.parse(localStorage.getItem("meetbot.session") ?? "null") as Record<string, string>,
      );
    const expire = (refresh: string) =>
      page.evaluate(
        ([access, refresh]) => localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh })),
        [expired, refresh] as const,
      );

    // Every call of the page meets a 401 at first; one refresh serves them all.
    await expire(user.refreshToken);
    await page.reload();
    await page.getByText(user.email).waitFor();
    const first = await stored();
    expect(first.access).not.toBe(expired);
    expect(first.refresh).not.toBe(user.refreshToken);

    // Expired again: the refresh token kept is the rotated one, and it works.
    await expire(first.refresh!);
    await page.reload();
    await page.getByText(user.email).waitFor();
    const second = await stored();
    expect(second.refresh).not.toBe(first.refresh);

    // Two tabs of one browser, one pair of tokens, both expired at once: they take turns, so no
    // refresh token is used twice (which would end the sign-in), and both stay signed in.
    await expire(second.refresh!);
    const other = await tab.context.newPage();
    await Promise.all([page.reload(), other.goto(`${server.url}/`)]);
    await page.getByText(user.email).waitFor();
    await other.getByText(user.email).waitFor();
    const last = await stored();
    expect((await server.api.get("/v1/bots", { token: last.access })).status).toBe(200);
    const next = await server.api.post("/v1/auth/refresh", { body: { refresh_token: last.refresh } });
    expect(next.status).toBe(200);
    expectNoProblems(tab, { refusals: /^401 (GET|POST) \/v1\/(?!auth\/refresh)/ });
  });

  it("shows the API's own words when registering fails, and keeps what was typed", async () => {
    const taken = await registerUser(server.api);
    const tab = await open("#/register");
    await tab.page.getByLabel("Name").fill("Someone");
    await tab.page.getByLabel("E-mail").fill(taken.email);
    await tab.page.getByLabel("Password").fill("long enough password");
    await tab.page.getByRole("button", { name: "Register" }).click();
    await expect.poll(() => tab.page.getByRole("alert").textContent()).toMatch(/already/i);
    expect(await tab.page.getByLabel("E-mail").inputValue()).toBe(taken.email);
  });

  it("can be used from the keyboard alone", async () => {
    const tab = await open();
    const { page } = tab;
    const { email } = await registerThroughUi(tab);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("type"))).toBe("email");
    await page.keyboard.type(email);
    await page.keyboard.press("Tab");
    await page.keyboard.type("correct horse battery");
    await page.keyboard.press("Enter");
    await page.getByText(email).waitFor();
    // The first Tab on a signed-in page reaches the skip link, Enter moves focus to the content
    // and stays on the page it was on.
    await page.getByRole("link", { name: "API keys" }).click();
    // Loaded afresh, so that Tab starts from the top of the page.
    await page.reload();
    await page.getByRole("heading", { name: "API keys" }).first().waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    expect(new URL(page.url()).hash).toBe("#/keys");
  });

  it("offers no OAuth buttons when no provider is configured", async () => {
    const providers = await server.api.get("/v1/auth/oauth");
    expect(providers.status).toBe(200);
    expect(providers.body).toEqual({ providers: [] });
    const tab = await open();
    await tab.page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await tab.page.getByRole("button", { name: /Sign in with/ }).count()).toBe(0);
  });
});

describe("signing in with an OAuth provider", () => {
  let idp: TestOidcProvider;
  let oauthServer: TestServer;
  beforeAll(async () => {
    idp = await TestOidcProvider.listen();
    const saved = { ...process.env };
    Object.assign(process.env, {
      MEETBOT_OAUTH_GOOGLE_CLIENT_ID: "dashboard-google",
      MEETBOT_OAUTH_GOOGLE_CLIENT_SECRET: "google-secret-0123456789",
      MEETBOT_OAUTH_GOOGLE_ISSUER: idp.issuer,
    });
    try {
      oauthServer = await startTestServer();
    } finally {
      process.env = saved;
    }
    await idp.start([
      {
        clientId: "dashboard-google",
        clientSecret: "google-secret-0123456789",
        redirectUris: [`${oauthServer.url}/v1/auth/oauth/google/callback`],
      },
    ]);
  });
  const oauthTabs: DashboardTab[] = [];
  afterEach(() => closeTabs(oauthTabs));
  afterAll(async () => {
    // First the pages: a signed-in dashboard holds its event stream open against the server.
    await closeTabs(oauthTabs);
    await oauthServer?.close();
    await idp?.close();
  });

  it("offers the configured provider and comes back to the dashboard signed in, tokens out of the address", async () => {
    const account = idp.addAccount({
      sub: `sub-${randomUUID()}`,
      email: `oauth-${randomUUID()}@example.com`,
      emailVerified: true,
      name: "Olivia Auth",
    });
    const tab = await openDashboard(browser, oauthServer.url);
    oauthTabs.push(tab);
    const { page } = tab;
    await page.getByRole("button", { name: "Sign in with Google" }).click();
    // The stand-in provider has no login page of its own: the test plays the person who signs in.
    await page.waitForURL((url) => url.origin === idp.issuer && url.pathname.startsWith("/interaction/"));
    await page.evaluate((sub) => {
      const form = document.createElement("form");
      form.method = "POST";
      form.action = `${location.pathname}/login`;
      const field = Object.assign(document.createElement("input"), { name: "sub", value: sub });
      form.append(field);
      document.body.append(form);
      form.submit();
    }, account.sub);
    await page.waitForURL(`${oauthServer.url}/`);
    await page.getByText(account.email!).waitFor();
    expect(page.url()).not.toContain("token");
    expect(await page.evaluate(() => sessionStorage.getItem("meetbot.oauth-state"))).toBeNull();
    // Only the stand-in's own page (it has none for GET /interaction/…) failed to load.
    expect(tab.problems.filter((p) => !p.includes("404"))).toEqual([]);
  });

  it("keeps no tokens from a link opened in a tab whose own sign-in is under way, and says so", async () => {
    // Someone signs in to their own account and sends the result as a link.
    const attacker = await registerUser(oauthServer.api);
    const link = `${oauthServer.url}/auth/callback?access_token=${attacker.token}&refresh_token=${attacker.refreshToken}`;
    for (const forged of [link, `${link}&state=${"0".repeat(64)}`]) {
      const tab = await openDashboard(browser, oauthServer.url);
      oauthTabs.push(tab);
      const { page } = tab;
      // The victim starts signing in with Google, then opens the link in the same tab.
      const start = page.waitForRequest((request) => request.url().includes("/v1/auth/oauth/google"));
      await page.getByRole("button", { name: "Sign in with Google" }).click();
      // The sign-in carries the tab's own state (kept in its sessionStorage, not readable from here).
      expect(new URL((await start).url()).searchParams.get("state")).toMatch(/^[0-9a-f]{64}$/);
      await page.waitForURL((url) => url.origin === idp.issuer);
      await page.goto(forged);

      await page.getByRole("heading", { name: "Not signed in" }).waitFor();
      expect(await page.getByRole("alert").textContent()).toMatch(
        /not started from the dashboard in this tab.*nothing was kept/s,
      );
      expect(await page.locator("textarea").count()).toBe(0);
      expect(new URL(page.url()).search).toBe("");
      expect(await page.evaluate(() => localStorage.getItem("meetbot.session"))).toBeNull();
      // Nor does a second look at it: the tab's state is used up.
      expect(await page.evaluate(() => sessionStorage.getItem("meetbot.oauth-state"))).toBeNull();
      await page.goto(`${oauthServer.url}/`);
      await page.getByRole("heading", { name: "Sign in" }).waitFor();
      expect(tab.problems.filter((p) => !p.includes("404"))).toEqual([]);
    }
  });

  it("keeps no tokens from a link with a state in a tab that started no sign-in", async () => {
    const attacker = await registerUser(oauthServer.api);
    const tab = await openDashboard(browser, oauthServer.url);
    oauthTabs.push(tab);
    await tab.page.goto(
      `${oauthServer.url}/auth/callback?access_token=${attacker.token}&refresh_token=${attacker.refreshToken}&state=${"1".repeat(64)}`,
    );
    await tab.page.getByRole("heading", { name: "Not signed in" }).waitFor();
    expect(await tab.page.evaluate(() => localStorage.getItem("meetbot.session"))).toBeNull();
    expect(tab.problems).toEqual([]);
  });

  it("leaves /auth/callback showing the tokens when the dashboard did not start the sign-in", async () => {
    const user = await registerUser(oauthServer.api);
    const tab = await openDashboard(browser, oauthServer.url);
    oauthTabs.push(tab);
    await tab.page.goto(
      `${oauthServer.url}/auth/callback?access_token=${user.token}&refresh_token=${user.refreshToken}`,
    );
    await tab.page.getByRole("heading", { name: "Signed in" }).waitFor();
    expect(await tab.page.getByLabel("Access token").inputValue()).toBe(user.token);
    expect(new URL(tab.page.url()).search).toBe("");
    expect(tab.problems).toEqual([]);
  });
});
