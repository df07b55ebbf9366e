import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Browser, BrowserContext, Page } from "playwright";
import { expect } from "vitest";

/**
 * The web dashboard in real Chromium, for test/e2e/dashboard-*.test.ts and the screenshot script.
 * Every page opened here records what went wrong in the browser: script errors, failed console
 * messages and Content-Security-Policy violations (Chromium reports those as console errors), and
 * the API's 4xx answers, so that `expectNoProblems` can tell an expected refusal (which Chromium
 * also logs as a console error) from anything else.
 */
export interface DashboardTab {
  context: BrowserContext;
  page: Page;
  problems: string[];
  /** "404 GET /v1/recordings/3", one per 4xx answer the page received. */
  refused: string[];
}

/**
 * The refusals a bot's page meets in normal use: 404 for what the bot does not have yet (a
 * transcript or summary looked for again when the other one settles, a share link), 409 for a
 * transcript or summary asked for while one is on its way; and for the live view of what the bot
 * sees, 409 when the bot left between the page's look at its status and the screenshot, 504 when
 * its runner did not answer (the test's stand-in runners never do), 502 when the runner answered
 * that it could not take one (a starved bot's page.screenshot timed out in CI).
 */
export const NONE_YET =
  /^(404 GET \/v1\/((transcripts|summaries)\/\d+(\/status)?|recordings\/\d+\/share)|409 POST \/v1\/(transcripts\/\d+\/transcribe|summaries\/\d+\/summarize)|(409|502|504) GET \/v1\/bots\/\d+\/screenshot)$/;

/**
 * Every refusal matches `refusals`, and the console holds exactly Chromium's line for each of them
 * plus lines matching `alsoAllowed` — nothing else: no CSP violation, no script error.
 */
export function expectNoProblems(
  tab: DashboardTab,
  { refusals = NONE_YET, alsoAllowed = [] }: { refusals?: RegExp; alsoAllowed?: RegExp[] } = {},
): void {
  for (const refusal of tab.refused) expect(refusal).toMatch(refusals);
  const expectedLines = tab.refused.map((refusal) => {
    const status = Number(refusal.slice(0, 3));
    return `Failed to load resource: the server responded with a status of ${status} (${STATUS_CODES[status]})`;
  });
  const unexplained = tab.problems.filter((line) => !alsoAllowed.some((allowed) => allowed.test(line)));
  expect(unexplained.sort()).toEqual(expectedLines.sort());
}

/** A laptop's screen. */
export const LAPTOP = { width: 1366, height: 800 };

export async function openDashboard(browser: Browser, baseUrl: string, hash = ""): Promise<DashboardTab> {
  const context = await browser.newContext({ viewport: LAPTOP });
  const page = await context.newPage();
  const problems: string[] = [];
  const refused: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("response", (response) => {
    const status = response.status();
    const path = new URL(response.url()).pathname;
    // A screenshot the bot's runner did not answer in time (504) or could not take (502) is one
    // the page shows and retries.
    const screenshotMissed = (status === 502 || status === 504) && path.endsWith("/screenshot");
    if ((status >= 400 && status < 500) || screenshotMissed)
      refused.push(`${status} ${response.request().method()} ${path}`);
  });
  const response = await page.goto(`${baseUrl}/${hash}`);
  expect(response?.status()).toBe(200);
  return { context, page, problems, refused };
}

/**
 * Closes the tabs in `tabs` and empties it, after each test: an open dashboard keeps polling the
 * API and holds its event stream open (tabs left open to the file's end cost the four dashboard
 * files 217 core-seconds instead of 188).
 */
export async function closeTabs(tabs: DashboardTab[]): Promise<void> {
  for (const tab of tabs.splice(0)) await tab.context.close();
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

/**
 * The dashboard at `hash`, signed in with an API session (put where the dashboard keeps it) whose
 * user's e-mail is shown once the page is ready; a missing element fails naming its locator, well
 * before a test's own timeout.
 */
export async function openSignedIn(
  browser: Browser,
  baseUrl: string,
  user: { token: string; refreshToken: string; email: string },
  hash: string,
): Promise<DashboardTab> {
  const tab = await openDashboard(browser, baseUrl, hash);
  tab.page.setDefaultTimeout(10_000);
  await tab.context.addInitScript(
    ([access, refresh]) => localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh })),
    [user.token, user.refreshToken] as const,
  );
  await tab.page.reload();
  await tab.page.getByText(user.email).waitFor();
  return tab;
}
