/**
 * The README's pictures of the dashboard, taken from a real run: the control plane, real bots in
 * the mock meetings (one records the scripted meeting and gets its transcript and summary, one is
 * refused at the door, one waits in a lobby), a real webhook receiver and an API key — then
 * Chromium at laptop size saves the main pages to docs/screenshots/*.png.
 *
 * `make screenshots` (needs `make build`); takes about a minute. Nothing is asserted: a page that
 * does not come up in time stops the script with the reason.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Page } from "playwright";
import { findRepoRoot } from "../src/server/launcher/local-process.js";
import { LAPTOP } from "../test/helpers/dashboard.js";
import { notesUser, recordScriptedMeeting } from "../test/helpers/meeting-notes.js";
import { launchTestChromium } from "../test/helpers/mock-browser.js";
import { startStack } from "../test/helpers/stack.js";
import { WebhookReceiver } from "../test/helpers/webhook-receiver.js";

const OUT = path.join(findRepoRoot(), "docs", "screenshots");
const WAIT = { timeout: 60_000 };

const stack = await startStack({ env: { MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1" } });
const receiver = await new WebhookReceiver().start();
const browser = await launchTestChromium();
try {
  const baseUrl = stack.api.baseUrl;
  const user = await notesUser(baseUrl, { email: "alex@example.com", name: "Alex Example" });
  const { api } = user;
  const call = async (method: string, route: string, body?: unknown) => {
    const answer = await user.request(method, route, body);
    if (answer.status >= 300)
      throw new Error(`${method} ${route}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };

  await call("POST", "/v1/api-keys", { name: "CRM sync" });
  await call("POST", "/v1/api-keys", { name: "Zapier" });
  const webhook = (await call("POST", "/v1/webhooks", {
    name: "CRM",
    url: receiver.endpoint("/meetbot"),
    events: ["bot.joined", "bot.ended", "recording.ready", "transcript.ready", "summary.ready"],
  })) as { id: number; secret: string };
  receiver.setSecret("/meetbot", webhook.secret);

  // A meeting refused at the door (FATAL with its screenshot), one waiting in its lobby.
  await stack.control.configure("zoom", "83200000077", { admit: "deny", admitAfterMs: 2000 });
  const refused = await api.createBot({
    meetingInfo: { platform: "zoom", meetingId: "83200000077" },
    botDisplayName: "Notetaker",
    meetingTitle: "Vendor call",
  });
  await api.deploy(refused.id);
  // The scripted meeting, recorded, transcribed and summarized.
  const { bot } = await recordScriptedMeeting(stack, user, "google", { meetingTitle: "Weekly planning" });
  await api.waitForStatus(refused.id, ["FATAL", "DONE"], { timeoutMs: 90_000 });
  await user.settled(`/v1/summaries/${bot.id}/status`, 120_000);
  await call("POST", `/v1/webhooks/${webhook.id}/test`);
  await stack.control.configure("teams", "screenshotlobby01", { admit: "manual" });
  const waiting = await api.createBot({
    meetingInfo: { platform: "teams", meetingId: "screenshotlobby01", tenantId: "t", organizerId: "o" },
    botDisplayName: "Notetaker",
    meetingTitle: "Quarterly planning",
  });
  await api.deploy(waiting.id);
  await api.waitForStatus(waiting.id, ["IN_WAITING_ROOM"], { timeoutMs: 90_000 });

  await mkdir(OUT, { recursive: true });
  const context = await browser.newContext({ viewport: LAPTOP });
  await context.addInitScript(
    ([access, refresh]) => localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh })),
    [user.token, user.refreshToken],
  );
  const page = await context.newPage();
  await shoot(page, `${baseUrl}/#/bots`, "bots", (p) =>
    p.getByText("Quarterly planning").first().waitFor(WAIT),
  );
  await shoot(page, `${baseUrl}/#/bots/${bot.id}`, "bot", async (p) => {
    await p.locator(".utterance").first().waitFor(WAIT);
    // On the third line, the player showing its picture.
    await p.locator("video").evaluate(
      (video: HTMLVideoElement) =>
        new Promise((resolve) => {
          video.addEventListener("seeked", resolve, { once: true });
          video.currentTime = 12;
        }),
    );
  });
  await shoot(page, `${baseUrl}/#/bots/${refused.id}`, "bot-failed", (p) =>
    p.locator("img.screenshot").first().waitFor(WAIT),
  );
  await shoot(page, `${baseUrl}/#/webhooks`, "webhooks", (p) =>
    p.getByText("/meetbot").first().waitFor(WAIT),
  );
  await shoot(page, `${baseUrl}/#/keys`, "keys", (p) => p.getByText("Zapier").first().waitFor(WAIT));
  const signedOut = await browser.newPage({ viewport: LAPTOP });
  await shoot(signedOut, `${baseUrl}/`, "sign-in", (p) =>
    p.getByRole("heading", { name: "Sign in" }).waitFor(WAIT),
  );
  await api.kill(waiting.id);
  console.log(`screenshots in ${path.relative(process.cwd(), OUT)}/`);
} finally {
  await browser.close();
  await receiver.close();
  await stack.close();
}

async function shoot(page: Page, url: string, name: string, ready: (page: Page) => Promise<unknown>) {
  await page.goto(url);
  await ready(page);
  // Let fonts settle and any last live update land before the picture.
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
  console.log(`${name}.png`);
}
