import { randomUUID } from "node:crypto";
import type { Browser } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_CSP } from "../../src/server/http/dashboard.js";
import {
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
afterAll(async () => {
  for (const tab of tabs) await tab.context.close();
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
  afterAll(async () => {
    // First the pages: a signed-in dashboard holds its event stream open against the server.
    for (const tab of oauthTabs) await tab.context.close();
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
    expect(await page.evaluate(() => sessionStorage.getItem("meetbot.oauth-pending"))).toBeNull();
    // Only the stand-in's own page (it has none for GET /interaction/…) failed to load.
    expect(tab.problems.filter((p) => !p.includes("404"))).toEqual([]);
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
