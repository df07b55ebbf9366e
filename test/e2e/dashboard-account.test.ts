import { randomBytes, randomUUID } from "node:crypto";
import type { Browser, Locator } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeTabs, type DashboardTab, expectNoProblems, openSignedIn } from "../helpers/dashboard.js";
import { launchTestChromium } from "../helpers/mock-browser.js";
import {
  registerUser,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";

/**
 * The dashboard's account pages in real Chromium against a real server: bot accounts (added from a
 * storage state file, never shown again; a bot signs in with one), API keys (shown once,
 * last use, revoke), webhooks (test sends, deliveries, redelivery) to a real receiver on
 * 127.0.0.1 that verifies every signature, and the usage figures.
 */

let server: TestServer;
let browser: Browser;
let receiver: WebhookReceiver;
const tabs: DashboardTab[] = [];
beforeAll(async () => {
  server = await startTestServer({
    // Bot accounts keep their sessions encrypted with this key.
    env: { ...process.env, MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
    // The tests' polling is theirs, not a user's: no per-minute budget to run out of.
    rateLimit: { perMinute: 0, perHour: 0 },
    // The receiver is on 127.0.0.1, which production mode refuses as a webhook target.
    outbound: { allowPrivateTargets: true },
  });
  browser = await launchTestChromium();
  receiver = await new WebhookReceiver().start();
});
afterEach(() => closeTabs(tabs));
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.close();
});

/** A new user (registered through the API) with the dashboard open at `hash`, signed in. */
async function signedIn(hash: string): Promise<{ tab: DashboardTab; user: TestUser }> {
  const user = await registerUser(server.api);
  const tab = await openSignedIn(browser, server.url, user, hash);
  tabs.push(tab);
  return { tab, user };
}

const cellText = (row: Locator, column: number) => row.getByRole("cell").nth(column).textContent();

describe("the bot accounts page", () => {
  it("adds an account from a storage state file, disables, enables and deletes it; a bot signs in with it", async () => {
    const { tab, user } = await signedIn("#/bot-accounts");
    const { page } = tab;
    await page.getByText("No bot accounts yet.").waitFor();
    const marker = `cookie-${randomUUID()}`;
    const cookie = { name: "SID", value: marker, domain: ".google.com", path: "/", expires: -1 };
    const state = (cookies: object[]) => ({
      name: "auth.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify({ cookies, origins: [] })),
    });
    const form = page.getByRole("form", { name: "Add a bot account" });
    await form.getByLabel("Name").fill("Notetaker");
    await form.getByLabel("Group").fill("sales");

    // Not JSON: refused before anything is sent.
    const file = form.getByLabel("Session file");
    await file.setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("not json") });
    await form.getByRole("button", { name: "Add account" }).click();
    await page.getByRole("alert").getByText("notes.txt is not JSON").waitFor();
    // JSON the API refuses: its reason, beside the file.
    await file.setInputFiles(state([]));
    await form.getByRole("button", { name: "Add account" }).click();
    await form.getByText("session.cookies: a session signs in with cookies: give at least one").waitFor();

    await file.setInputFiles(state([{ ...cookie, httpOnly: true, secure: true, sameSite: "Lax" }]));
    await form.getByRole("button", { name: "Add account" }).click();
    // Name, platform, group, status, in use, signed in as, last used, last check.
    const row = page.getByRole("row", { name: "Notetaker" });
    await row.waitFor();
    expect(await row.getByRole("cell").allTextContents()).toEqual([
      "Notetaker",
      "Google Meet",
      "sales",
      "unchecked",
      "0 of 1",
      "—",
      "Never",
      "Never",
      "DisableDelete",
    ]);
    // The form is ready for the next one, and the session is nowhere on the page.
    expect(await form.getByLabel("Name").inputValue()).toBe("");
    expect(await page.content()).not.toContain(marker);

    await row.getByRole("button", { name: "Disable" }).click();
    await expect.poll(() => cellText(row, 3)).toBe("disabled");
    await row.getByRole("button", { name: "Enable" }).click();
    await expect.poll(() => cellText(row, 3)).toBe("unchecked");

    // The bot form offers the account for a login.
    const accountId = defined(
      (await server.api.get("/v1/bot-accounts", { token: user.token })).body.botAccounts[0],
      "the account",
    ).id;
    await page.getByRole("link", { name: "Bots", exact: true }).click();
    await page.getByRole("button", { name: "New bot" }).click();
    await page.getByLabel("Meeting link").fill("http://127.0.0.1:9/meet/abc-defg-hij");
    await page.getByLabel("Join the meeting").selectOption({ label: "Signed in to a bot account" });
    await page.getByLabel("Account group").waitFor();
    await page.getByLabel("Bot account", { exact: true }).selectOption({ label: "Notetaker (unchecked)" });
    expect(await page.getByLabel("Account group").count()).toBe(0);
    await page.getByRole("button", { name: "Create only" }).click();
    await expect
      .poll(async () => (await server.api.get("/v1/bots", { token: user.token })).body.bots[0]?.login)
      .toEqual({ mode: "always", accountId, group: null, assignedAccountId: null });

    await page.getByRole("link", { name: "Bot accounts" }).click();
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("row", { name: "Notetaker" }).getByRole("button", { name: "Delete" }).click();
    await page.getByText("No bot accounts yet.").waitFor();
    expect(await page.content()).not.toContain(marker);
    expectNoProblems(tab, { refusals: /^422 POST \/v1\/bot-accounts$/ });
  });
});

describe("the API keys page", () => {
  it("creates a key shown once, shows its last use, and revokes it", async () => {
    const { tab } = await signedIn("#/keys");
    const { page } = tab;
    await tab.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    await page.getByText("No API keys yet.").waitFor();

    await page.getByLabel("Name").fill("CI");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByLabel("New API key", { exact: true });
    const key = (await shown.textContent()) ?? "";
    expect(key).toMatch(/^mbk_[0-9a-f]{64}$/);
    await page.getByText("you will not see it again").waitFor();
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByText("Copied", { exact: true }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await page.getByRole("button", { name: "I have copied it" }).click();
    expect(await shown.count()).toBe(0);

    // Name, preview, created, last used, expires, state.
    const row = page.getByRole("row", { name: "CI" });
    expect(await cellText(row, 1)).toBe(`${key.slice(0, 10)}...${key.slice(-4)}`);
    expect(await cellText(row, 3)).toBe("Never");
    expect(await cellText(row, 5)).toBe("Active");

    const me = await fetch(`${server.url}/v1/users/me`, { headers: { authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    // The request log is written every 0.5 s: Refresh until the key's last use shows.
    const keys = page.getByRole("region", { name: "Your keys" });
    await expect
      .poll(async () => {
        await keys.getByRole("button", { name: "Refresh" }).click();
        return cellText(row, 3);
      })
      .toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

    await row.getByRole("button", { name: "Usage" }).click();
    await keys.getByText(/^1 request from/).waitFor();
    await keys.getByRole("cell", { name: "GET /v1/users/me", exact: true }).waitFor();

    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => cellText(row, 5)).toBe("Revoked");
    expect(await row.getByRole("button", { name: "Revoke" }).count()).toBe(0);
    const refused = await fetch(`${server.url}/v1/users/me`, { headers: { authorization: `Bearer ${key}` } });
    expect(refused.status).toBe(401);
    expectNoProblems(tab, { refusals: /^$/ });
  });

  it("creates a key from the keyboard alone", async () => {
    const { tab } = await signedIn("#/keys");
    const { page } = tab;
    await tab.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    await page.getByLabel("Name").focus();
    await page.keyboard.type("Typed");
    await page.keyboard.press("Enter");
    const key = (await page.getByLabel("New API key", { exact: true }).textContent()) ?? "";
    expect(key).toMatch(/^mbk_/);
    // The focus moves to Copy (once the key is on screen): no hunting for it.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Copy");
    await page.keyboard.press("Enter");
    await page.getByText("Copied", { exact: true }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    expectNoProblems(tab, { refusals: /^$/ });
  });

  it("shows the API's refusal of a bad expiry", async () => {
    const { tab } = await signedIn("#/keys");
    const { page } = tab;
    await page.getByLabel("Name").fill("Old");
    await page.getByLabel("Expires").fill("2001-01-01T10:00");
    await page.getByRole("button", { name: "Create key" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/expiresAt/);
    expect(await page.getByLabel("New API key", { exact: true }).count()).toBe(0);
    expectNoProblems(tab, { refusals: /^422 POST \/v1\/(api-keys|webhooks)$/ });
  });
});

describe("the webhooks page", () => {
  it("sends a test, lists deliveries with status and response time, and redelivers a failed one", async () => {
    const { tab, user } = await signedIn("#/webhooks");
    const { page } = tab;
    const hookPath = "/dashboard-hook";
    await page.getByLabel("Name").fill("Receiver");
    await page.getByLabel("URL").fill(receiver.endpoint(hookPath));
    await page.getByRole("checkbox", { name: "All events, including ones added later" }).uncheck();
    await page.getByRole("checkbox", { name: "bot.joined" }).check();
    await page.getByRole("checkbox", { name: "bot.ended" }).check();
    await page.getByRole("button", { name: "Add webhook" }).click();
    const secret = (await page.getByLabel("Signing secret of Receiver", { exact: true }).textContent()) ?? "";
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    receiver.setSecret(hookPath, secret);
    await page.getByRole("button", { name: "I have copied it" }).click();

    const panel = page.getByRole("region", { name: "Receiver", exact: true });
    await panel.getByText("bot.joined, bot.ended").waitFor();
    await panel.getByText("No deliveries yet.").waitFor();
    // The second request fails; the first and the third succeed.
    receiver.on(hookPath, (n) => (n === 2 ? { status: 500, body: "boom" } : { status: 200, body: "ok" }));

    await panel.getByRole("button", { name: "Send test" }).click();
    await panel.getByText(/^Test delivered: HTTP 200 in \d+ ms/).waitFor();
    const [first] = receiver.at(hookPath);
    expect(first?.verification.ok).toBe(true);
    expect(first?.headers["x-webhook-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(first?.event).toBe("webhook.test");
    // Event, bot, status, HTTP, response time, attempts, time.
    const succeeded = panel.getByRole("row", { name: `webhook.test ${first?.id}` });
    expect(await cellText(succeeded, 2)).toBe("succeeded");
    expect(await cellText(succeeded, 3)).toBe("200");
    expect(await cellText(succeeded, 4)).toMatch(/^\d+ ms$/);
    expect(await cellText(succeeded, 5)).toBe("1");

    await panel.getByRole("button", { name: "Send test" }).click();
    await panel.getByText(/^Test failed: HTTP 500 in \d+ ms/).waitFor();
    const failedId = receiver.at(hookPath)[1]?.id;
    expect(failedId).toMatch(/^whdel_/);
    const failed = panel.getByRole("row", { name: `webhook.test ${failedId}` });
    expect(await cellText(failed, 2)).toBe("failed");
    expect(await cellText(failed, 3)).toBe("500");
    await failed.getByRole("button", { name: "Details" }).click();
    await panel.getByText("boom").waitFor();

    await failed.getByRole("button", { name: "Redeliver" }).click();
    // The worker sends it at once; the list looks again by itself while it is on its way.
    await expect.poll(() => cellText(failed, 2), { timeout: 15_000 }).toBe("succeeded");
    expect(await cellText(failed, 3)).toBe("200");
    expect(await cellText(failed, 5)).toBe("2");
    expect(receiver.at(hookPath).map((r) => r.id)).toEqual([first?.id, failedId, failedId]);
    await panel
      .getByText(/^2 \(2 succeeded, 0 failed, 0 on their way\) in 3 attempts; median response \d+ ms$/)
      .waitFor();

    // A rotated secret is shown once, and the next delivery is signed with it.
    page.once("dialog", (dialog) => void dialog.accept());
    await panel.getByRole("button", { name: "Rotate secret" }).click();
    const rotated = (await panel.getByLabel("New signing secret of Receiver").textContent()) ?? "";
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    receiver.setSecret(hookPath, rotated);
    await panel.getByRole("button", { name: "I have copied it" }).click();
    await panel.getByRole("button", { name: "Send test" }).click();
    await panel.getByText(/^Test delivered: HTTP 200/).waitFor();
    expect(receiver.at(hookPath)[3]?.verification.ok).toBe(true);

    await panel.getByRole("button", { name: "Pause" }).click();
    await panel.getByText("Paused: gets no new deliveries").waitFor();
    expect((await server.api.get("/v1/webhooks", { token: user.token })).body.webhooks[0]?.isActive).toBe(
      false,
    );
    await panel.getByRole("button", { name: "Resume" }).click();
    await panel.getByText("Active", { exact: true }).waitFor();

    page.once("dialog", (dialog) => void dialog.accept());
    await panel.getByRole("button", { name: "Delete" }).click();
    await page.getByText("No webhooks yet.").waitFor();
    expect(await panel.count()).toBe(0);
    expectNoProblems(tab, { refusals: /^$/ });
  });

  it("shows the API's refusal of a webhook with no events, and keeps what was typed", async () => {
    const { tab } = await signedIn("#/webhooks");
    const { page } = tab;
    await page.getByLabel("Name").fill("Nothing");
    await page.getByLabel("URL").fill(receiver.endpoint("/nothing"));
    await page.getByRole("checkbox", { name: "All events, including ones added later" }).uncheck();
    await page.getByRole("button", { name: "Add webhook" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/at least one event/);
    expect(await page.getByLabel("Name").inputValue()).toBe("Nothing");
    expect(await page.getByText("No webhooks yet.").count()).toBe(1);
    expectNoProblems(tab, { refusals: /^422 POST \/v1\/(api-keys|webhooks)$/ });
  });

  it("shows the callback signing secret on demand and a bot's callback deliveries", async () => {
    const { tab, user } = await signedIn("#/webhooks");
    const { page } = tab;
    const signing = page.getByRole("region", { name: "Callback signing secret" });
    expect(await signing.getByLabel("Callback signing secret", { exact: true }).count()).toBe(0);
    await signing.getByRole("button", { name: "Show secret" }).click();
    const secret = (await signing.getByLabel("Callback signing secret", { exact: true }).textContent()) ?? "";
    const fromApi = await server.api.get("/v1/webhooks/signing-secret", { token: user.token });
    expect(secret).toBe(fromApi.body.secret);

    const callbackPath = "/dashboard-callback";
    receiver.setSecret(callbackPath, secret);
    const created = await server.api.post("/v1/bots", {
      token: user.token,
      body: {
        meetingInfo: TEST_MEETING,
        botDisplayName: "Notetaker",
        callbackUrl: receiver.endpoint(callbackPath),
      },
    });
    expect(created.status).toBe(201);
    expect((await server.api.post(`/v1/bots/${created.body.id}/deploy`, { token: user.token })).status).toBe(
      200,
    );
    await receiver.waitFor(() => receiver.at(callbackPath).length > 0);

    const callbacks = page.getByRole("region", { name: "Callback deliveries" });
    const row = callbacks.getByRole("row", { name: `bot.deploying ${receiver.at(callbackPath)[0]?.id}` });
    await expect
      .poll(async () => {
        await callbacks.getByRole("button", { name: /Refresh/ }).click();
        return row.count();
      })
      .toBe(1);
    await expect.poll(() => cellText(row, 2)).toBe("succeeded");
    expect(await row.getByRole("link").textContent()).toBe(String(created.body.id));
    expectNoProblems(tab, { refusals: /^$/ });
  });
});

describe("the usage page", () => {
  it("shows this month's figures, which follow the user's API calls", async () => {
    const { tab, user } = await signedIn("#/usage");
    const { page } = tab;
    const month = page.getByRole("region", { name: /^Month \d{4}-\d\d \(UTC\)$/ });
    const figure = (name: string) =>
      month.getByRole("row", { name, exact: true }).getByRole("cell").textContent();
    await month.getByRole("row", { name: "Bots created", exact: true }).waitFor();
    expect(await figure("Bots created")).toBe("0");
    const requestsBefore = Number(await figure("API requests"));

    for (const name of ["One", "Two"]) {
      const created = await server.api.post("/v1/bots", {
        token: user.token,
        body: { meetingInfo: TEST_MEETING, botDisplayName: name },
      });
      expect(created.status).toBe(201);
    }
    await page.getByRole("button", { name: "Refresh" }).click();
    await expect.poll(() => figure("Bots created")).toBe("2");
    expect(await figure("… now READY_TO_DEPLOY")).toBe("2");
    expect(Number(await figure("API requests"))).toBeGreaterThanOrEqual(requestsBefore + 2);
    const log = page.getByRole("region", { name: "Recent API requests" });
    await expect.poll(() => log.getByRole("cell", { name: "POST /v1/bots", exact: true }).count()).toBe(2);
    await page
      .getByRole("region", { name: "Last 30 days" })
      .getByText(/: 2 bots, 0 recorded minutes/)
      .waitFor();
    expectNoProblems(tab, { refusals: /^$/ });
  });
});
