import { randomUUID } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright";
import { expect } from "vitest";

/**
 * The web dashboard in real Chromium, for test/e2e/dashboard-*.test.ts and the screenshot script.
 * Every page opened here records what went wrong in the browser: script errors, failed console
 * messages and Content-Security-Policy violations (Chromium reports those as console errors), so
 * a test can say "nothing was blocked" by asserting `problems` is empty.
 */
export interface DashboardTab {
  context: BrowserContext;
  page: Page;
  problems: string[];
}

/** A laptop's screen. */
export const LAPTOP = { width: 1366, height: 800 };

export async function openDashboard(browser: Browser, baseUrl: string, hash = ""): Promise<DashboardTab> {
  const context = await browser.newContext({ viewport: LAPTOP });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  const response = await page.goto(`${baseUrl}/${hash}`);
  expect(response?.status()).toBe(200);
  return { context, page, problems };
}

/** Registers a new account through the register form and waits for the signed-in frame. */
export async function registerThroughUi(tab: DashboardTab, name = "Dana Dashboard") {
  const email = `dash-${randomUUID()}@example.com`;
  const password = "correct horse battery";
  const { page } = tab;
  await page.getByRole("link", { name: /register/i }).click();
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Register" }).click();
  await page.getByRole("navigation", { name: "Sections" }).waitFor();
  await page.getByText(email).waitFor();
  return { email, password };
}
