import { randomBytes } from "node:crypto";
import type { Browser } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FeedServer, icsFeed, startFeedServer, wallClock } from "../helpers/calendar-feed.js";
import { closeTabs, type DashboardTab, expectNoProblems, openSignedIn } from "../helpers/dashboard.js";
import { launchTestChromium } from "../helpers/mock-browser.js";
import { registerUser, startTestServer, type TestServer } from "../helpers/server-harness.js";

/**
 * The calendars page in real Chromium against a real server whose own sync worker reads a real
 * feed on 127.0.0.1: add a feed, see its meetings with their bots, take a bot away and give it
 * back, and a sync that fails says why while the meetings stay.
 */

let server: TestServer;
let browser: Browser;
let feed: FeedServer;
const tabs: DashboardTab[] = [];
beforeAll(async () => {
  server = await startTestServer({
    env: { ...process.env, MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
    rateLimit: { perMinute: 0, perHour: 0 },
    // The feed is on 127.0.0.1, which production mode refuses as it refuses webhook targets.
    outbound: { allowPrivateTargets: true },
    webhooks: { worker: false },
    schedule: { worker: false },
  });
  browser = await launchTestChromium();
  feed = await startFeedServer();
});
afterEach(() => closeTabs(tabs));
afterAll(async () => {
  await browser?.close();
  await feed?.close();
  await server?.close();
});

describe("the calendars page", () => {
  it("adds a feed, lists its meetings and their bots, takes a bot away and back, shows a failed sync", async () => {
    const start = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 2 * 86_400_000 + 9 * 3_600_000);
    const end = new Date(start.getTime() + 3_600_000);
    feed.serve({
      body: icsFeed([
        {
          uid: "standup@test",
          summary: "Standup",
          start: `${wallClock(start)}Z`,
          end: `${wallClock(end)}Z`,
          location: "https://meet.google.com/abc-defg-hij",
        },
        { uid: "lunch@test", summary: "Lunch", start: `${wallClock(start)}Z`, end: `${wallClock(end)}Z` },
      ]),
    });
    const user = await registerUser(server.api);
    const tab = await openSignedIn(browser, server.url, user, "#/calendars");
    tabs.push(tab);
    const { page } = tab;
    await page.getByText("No calendars yet.").waitFor();

    const form = page.getByRole("form", { name: "Add a calendar" });
    await form.getByLabel("Name").fill("Work");
    await form.getByLabel("Feed address").fill(feed.url);
    await form.getByRole("button", { name: "Add calendar" }).click();

    // The server's worker reads it; the meeting with a link is listed with its scheduled bot.
    const panel = page.getByRole("region", { name: "Work" });
    const row = panel.getByRole("row", { name: `Standup ${start.toISOString()}` });
    await row.getByText("READY_TO_DEPLOY").waitFor();
    await panel.getByText("ok", { exact: true }).waitFor();
    expect(await panel.getByRole("row").count()).toBe(2); // the header and the one meeting
    expect(await page.content()).not.toContain(new URL(feed.url).pathname);

    await row.getByRole("button", { name: "Remove bot" }).click();
    await row.getByRole("button", { name: "Add bot" }).click();
    await row.getByText("READY_TO_DEPLOY").waitFor();

    feed.serve({ status: 500, body: "down" });
    await panel.getByRole("button", { name: "Sync now" }).click();
    await panel.getByRole("alert").getByText("the feed's server answered 500").waitFor();
    await row.getByText("READY_TO_DEPLOY").waitFor();
    expectNoProblems(tab);
  });
});
