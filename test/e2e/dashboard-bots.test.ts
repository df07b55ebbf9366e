import type { Browser, Page } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  closeTabs,
  type DashboardTab,
  expectNoProblems,
  NONE_YET,
  openDashboard,
  registerThroughUi,
} from "../helpers/dashboard.js";
import { launchTestChromium } from "../helpers/mock-browser.js";
import {
  Api,
  deployedBot,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";
import { startStack } from "../helpers/stack.js";

/**
 * The bots pages in real Chromium: a real bot created through the form and followed live to
 * DONE; a failed bot's error and screenshot; the form's refusals, kill, delete and the log filter
 * (those against a control plane whose runners the test plays, test/helpers/server-harness.ts).
 */

let browser: Browser;
const tabs: DashboardTab[] = [];
beforeAll(async () => {
  browser = await launchTestChromium();
});
afterEach(() => closeTabs(tabs));
afterAll(async () => {
  await browser?.close();
});

async function open(baseUrl: string, hash = "") {
  const tab = await openDashboard(browser, baseUrl, hash);
  tabs.push(tab);
  return tab;
}

/** Signs the tab in as `user` (registered through the API) and loads `hash`. */
async function openSignedIn(server: TestServer, user: TestUser, hash: string) {
  const tab = await open(server.url, hash);
  await tab.page.evaluate(
    ([access, refresh]) => localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh })),
    [user.token, user.refreshToken],
  );
  await tab.page.reload();
  await tab.page.getByRole("navigation", { name: "Sections" }).waitFor();
  return tab;
}

/** A mark on the page's window: still there later means the page was never reloaded. */
const markPage = (page: Page) => page.evaluate(() => ((window as unknown as { mark: number }).mark = 1));
const pageMark = (page: Page) => page.evaluate(() => (window as unknown as { mark?: number }).mark);

const liveState = (page: Page) => page.getByRole("banner").getByRole("status").textContent();

/** The statuses of the bot page's timeline, in order. */
const timelineStatuses = (page: Page) =>
  page
    .getByRole("list", { name: "Status timeline" })
    .getByRole("listitem")
    .evaluateAll((items) => items.map((item) => item.querySelector(".status")?.textContent ?? ""));

describe("a real bot, created through the form", () => {
  let stack: Awaited<ReturnType<typeof startStack>>;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("is deployed into the mock Meet and followed live, without a reload, to DONE", async () => {
    const code = "das-hboa-rdx";
    const meeting = (await stack.control.configure("google", code, { participants: 2, admit: "open" })) as {
      participants: { name: string }[];
    };
    const names = meeting.participants.map((p) => p.name);
    expect(names).toHaveLength(2);

    const tab = await open(stack.api.baseUrl);
    const { page } = tab;
    await registerThroughUi(tab);
    await expect.poll(() => liveState(page)).toBe("Live");
    await markPage(page);

    await page.getByRole("button", { name: "New bot" }).click();
    await page.getByLabel("Platform").selectOption({ label: "Google Meet" });
    await page.getByLabel("Meeting link").fill(`${stack.mock.url}/meet/${code}`);
    await page.getByLabel("Display name").fill("Dash Bot");
    await page.getByLabel("Meeting title").fill("Dashboard demo");
    // A safety net: the test ends the meeting long before.
    await page.getByLabel("Maximum duration").fill("2");
    await page.getByRole("button", { name: "Create and deploy" }).click();

    // The list fetches nothing by itself: its statuses move with the live events alone.
    const row = page.getByRole("row", { name: /Dash Bot/ });
    await expect.poll(() => row.getByText("IN_CALL").count(), { timeout: 60_000 }).toBe(1);
    expect(await row.textContent()).toContain("Dashboard demo");
    expect(await row.textContent()).toContain("Google Meet");

    // The bot's page: its participants appear while it records, then the host ends the meeting.
    await row.getByRole("link", { name: "Dash Bot" }).click();
    await page.getByRole("heading", { level: 1, name: /Dash Bot/ }).waitFor();
    const participants = page.getByRole("table", { name: "Participants" });
    for (const name of names) {
      await participants.getByRole("cell", { name }).waitFor({ timeout: 20_000 });
    }
    await expect.poll(() => timelineStatuses(page)).toContain("RECORDING");
    // What the bot sees: its page, fetched with the token, shot again and again while in the call.
    const view = page.getByRole("img", { name: "What the bot's meeting page shows now" });
    await expect
      .poll(() => view.evaluate((img: HTMLImageElement) => img.naturalWidth), { timeout: 20_000 })
      .toBeGreaterThanOrEqual(1280);
    const firstShot = await view.getAttribute("src");
    expect(firstShot).toMatch(/^blob:/);
    await expect.poll(() => view.getAttribute("src"), { timeout: 20_000 }).not.toBe(firstShot);
    await stack.control.end("google", code);

    // The page fetches the bot's status and timeline again only on its live events.
    const heading = page.getByRole("heading", { level: 1 });
    await expect.poll(() => heading.textContent(), { timeout: 60_000 }).toContain("DONE");
    // The timeline is a fetch of its own, on the same event: it may show DONE a moment later.
    await expect.poll(async () => (await timelineStatuses(page)).at(-1)).toBe("DONE");
    const statuses = await timelineStatuses(page);
    expect(statuses[0]).toBe("JOINING_CALL");
    const at = (status: string) => statuses.indexOf(status);
    expect(at("IN_CALL")).toBeGreaterThan(at("JOINING_CALL"));
    expect(at("RECORDING")).toBeGreaterThan(at("IN_CALL"));
    expect(at("CALL_ENDED")).toBeGreaterThan(at("RECORDING"));
    const items = await page
      .getByRole("list", { name: "Status timeline" })
      .getByRole("listitem")
      .allTextContents();
    for (const item of items) expect(item).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/);
    expect(items[at("CALL_ENDED")]).toContain("MEETING_ENDED");
    expect(await page.title()).toMatch(/^Dash Bot · Bot #\d+ · meetbot$/);
    expect(await view.count()).toBe(0); // no page to show once the bot left

    // Back on the list, the row says DONE too; the page was never reloaded.
    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Bots" }).click();
    await expect.poll(() => row.getByText("DONE").count()).toBe(1);
    expect(await pageMark(page)).toBe(1);
    expectNoProblems(tab);
  }, 120_000);
});

describe("bots the test's runner plays", () => {
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    server = await startTestServer();
    user = await registerUser(server.api);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("shows a failed bot's error and its screenshot, fetched with the token; the blob goes with the page", async () => {
    const { botId, config, runner } = await deployedBot(server, user, { botDisplayName: "Denied Bot" });
    const tab = await openSignedIn(server, user, "#/bots");
    const screenshot = await tab.page.screenshot();
    const upload = (name: string, bytes: Uint8Array) =>
      server.api.put(`/v1/bot-callbacks/${botId}/artifacts/${name}`, {
        rawBody: bytes,
        token: config.callback.token,
        headers: { "content-type": "application/octet-stream" },
      });
    expect((await upload("screenshot.png", screenshot)).status).toBe(201);
    expect((await upload("page.html", new TextEncoder().encode("<p>denied</p>"))).status).toBe(201);
    await runner.status("JOINING_CALL");
    await runner.status("FATAL", {
      subCode: "ADMISSION_DENIED",
      message: "The host denied entry",
      artifacts: ["screenshot.png", "page.html"],
    });

    const { page } = tab;
    await page
      .getByRole("row", { name: /Denied Bot/ })
      .getByRole("link", { name: "Denied Bot" })
      .click();
    const failure = page.getByRole("region", { name: "Why it failed" });
    await failure.waitFor();
    expect(await failure.textContent()).toContain("ADMISSION_DENIED The host denied entry");
    const image = failure.getByRole("img", { name: /Screenshot .*screenshot\.png/ });
    await expect
      .poll(() => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth))
      .toBeGreaterThan(0);
    const src = (await image.getAttribute("src")) ?? "";
    expect(src).toMatch(/^blob:/);
    const download = failure.getByRole("link", { name: "Download page.html" });
    expect(await download.getAttribute("download")).toBe("page.html");

    // Leaving the page lets the blob go (an image, as the page's policy lets blobs be loaded only so).
    const readable = (url: string) =>
      page.evaluate(
        (u) =>
          new Promise<boolean>((resolve) => {
            const probe = new Image();
            probe.onload = () => resolve(true);
            probe.onerror = () => resolve(false);
            probe.src = u;
          }),
        url,
      );
    expect(await readable(src)).toBe(true);
    await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Bots" }).click();
    await page.getByRole("heading", { level: 1, name: "Bots" }).waitFor();
    await expect.poll(() => readable(src)).toBe(false);
    // The probe of the revoked blob is the only complaint.
    expectNoProblems(tab, { alsoAllowed: [/^Failed to load resource: net::ERR_FILE_NOT_FOUND$/] });
  });

  it("shows the API's refusal beside the form, creates with the chosen options, kills and deletes", async () => {
    const tab = await openSignedIn(server, user, "#/bots");
    const { page } = tab;
    await page.getByRole("button", { name: "New bot" }).click();
    await page.getByLabel("Meeting link").fill("https://example.com/meet/abc-defg-hij");
    await page.getByLabel("Display name").fill("Form Bot");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    const form = page.getByRole("form", { name: "Create a bot" });
    await expect
      .poll(() => form.getByRole("alert").textContent())
      .toBe("meetingInfo.meetingUrl: example.com is not a google meeting host");
    const link = page.getByLabel("Meeting link");
    expect(await link.getAttribute("aria-invalid")).toBe("true");
    expect(await link.evaluate((input) => input.getAttribute("aria-describedby"))).toContain("error");
    // What was typed stays.
    expect(await page.getByLabel("Display name").inputValue()).toBe("Form Bot");

    await link.fill("http://127.0.0.1:9/meet/abc-defg-hij");
    await page.getByLabel("Meeting title").fill("Form test");
    await page.getByLabel("Maximum duration").fill("2");
    await page.getByLabel("Summarize the transcript").check();
    expect(await page.getByLabel("Transcribe the recording").isChecked()).toBe(true);
    await page.getByLabel("Summary engine").selectOption("extractive");
    await page.getByRole("button", { name: "Create and deploy" }).click();
    const row = page.getByRole("row", { name: /Form Bot/ });
    await expect.poll(() => row.getByText("DEPLOYING").count()).toBe(1);

    const listed = await server.api.get("/v1/bots", { token: user.token });
    const made = defined(
      listed.body.bots.find((bot) => bot.botDisplayName === "Form Bot"),
      "the bot the form made",
    );
    expect(made).toMatchObject({
      meetingTitle: "Form test",
      transcription: {},
      summary: { engine: "extractive" },
    });
    expect(server.launcher.configFor(made.id).automaticLeave.maxDuration).toBe(120_000);

    // Kill, then delete: each asks first.
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Kill" }).click();
    await expect.poll(() => row.getByText("FATAL").count()).toBe(1);
    expect(
      (await server.api.get(`/v1/bots/${made.id}`, { token: user.token })).body.deploymentError,
    ).toMatchObject({ code: "KILLED" });
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => row.count()).toBe(0);
    expect((await server.api.get(`/v1/bots/${made.id}`, { token: user.token })).status).toBe(404);
    // The refused create is the only complaint.
    expectNoProblems(tab, { refusals: new RegExp(`${NONE_YET.source}|^422 POST /v1/bots$`) });
  });

  it("creates a Zoom bot by meeting id without deploying it, then deploys it from the list", async () => {
    const tab = await openSignedIn(server, user, "#/bots");
    const { page } = tab;
    await page.getByRole("button", { name: "New bot" }).click();
    await page.getByLabel("Platform").selectOption({ label: "Zoom" });
    await page.getByLabel("Meeting ID and passcode").check();
    await page.getByLabel("Meeting ID", { exact: true }).fill("85012345678");
    await page.getByLabel("Passcode", { exact: true }).fill("s3cret");
    await page.getByLabel("Display name").fill("Zoom Bot");
    await page.getByRole("button", { name: "Create only" }).click();

    const row = page.getByRole("row", { name: /Zoom Bot/ });
    await expect.poll(() => row.getByText("READY_TO_DEPLOY").count()).toBe(1);
    expect(await row.textContent()).toContain("Zoom");
    const botId = Number(/#(\d+)/.exec((await row.textContent()) ?? "")?.[1]);
    expect(() => server.launcher.configFor(botId)).toThrow();

    await row.getByRole("button", { name: "Deploy" }).click();
    await expect.poll(() => row.getByText("DEPLOYING").count()).toBe(1);
    expect(server.launcher.configFor(botId).meetingInfo).toEqual({
      platform: "zoom",
      meetingId: "85012345678",
      meetingPassword: "s3cret",
    });
    expectNoProblems(tab);
  });

  it("keeps the form open, saying so, when the bot was created but could not be launched", async () => {
    const tab = await openSignedIn(server, user, "#/bots");
    const { page } = tab;
    await page.getByRole("button", { name: "New bot" }).click();
    await page.getByLabel("Meeting link").fill("http://127.0.0.1:9/meet/abc-defg-hij");
    await page.getByLabel("Display name").fill("Stranded Bot");
    server.launcher.failNextLaunch(new Error("no capacity left"));
    await page.getByRole("button", { name: "Create and deploy" }).click();

    const form = page.getByRole("form", { name: "Create a bot" });
    await expect
      .poll(() => form.getByRole("alert").textContent())
      .toMatch(/^Bot #\d+ was created but not deployed: Bot could not be launched: no capacity left$/);
    // The list shows it, failed as the server recorded it.
    await expect
      .poll(() =>
        page
          .getByRole("row", { name: /Stranded Bot/ })
          .getByText("FATAL")
          .count(),
      )
      .toBe(1);
    expectNoProblems(tab, { alsoAllowed: [/status of 503 \(Service Unavailable\)$/] });
  });

  it("filters the logs by level", async () => {
    const { botId, runner } = await deployedBot(server, user, { botDisplayName: "Chatty Bot" });
    const lines = {
      info: "Opening the meeting page",
      warn: "No camera found",
      error: "The lobby did not answer",
    };
    for (const [level, message] of Object.entries(lines)) {
      await runner.send({ type: "log", data: { level: level as "info", message } });
    }
    const tab = await openSignedIn(server, user, `#/bots/${botId}`);
    const { page } = tab;
    const logs = page.getByRole("table", { name: "Log lines" });
    const shown = async () => (await logs.textContent()) ?? "";
    await expect.poll(shown).toContain(lines.info);
    expect(await shown()).toContain(lines.warn);

    await page.getByLabel("Level").selectOption({ label: "Warnings and errors" });
    await expect.poll(shown).not.toContain(lines.info);
    expect(await shown()).toContain(lines.warn);
    expect(await shown()).toContain(lines.error);

    await page.getByLabel("Level").selectOption({ label: "Errors only" });
    await expect.poll(shown).not.toContain(lines.warn);
    expect(await shown()).toContain(lines.error);
    expectNoProblems(tab);
  });

  it("shows whom the bot joined as: nobody yet, then the account's name its runner reported (BOT_JOINED joinedAs), live", async () => {
    const { botId, runner } = await deployedBot(server, user, { botDisplayName: "Signed Bot" });
    const tab = await openSignedIn(server, user, `#/bots/${botId}`);
    const { page } = tab;
    const joinedAs = page
      .locator("dl.facts dt", { hasText: "Joined as" })
      .locator("xpath=following-sibling::dd[1]");
    await expect.poll(() => joinedAs.textContent()).toBe("Not in the call yet (joins as a guest)");
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL", { joinedAs: "Grace Account" });
    await expect.poll(() => joinedAs.textContent()).toBe("Grace Account, signed in");
    expectNoProblems(tab);
  });

  it("follows the live meeting: the transcript grows and settles, the chat shows, a message and a leave go out as commands", async () => {
    const { botId, runner, config } = await deployedBot(server, user, {
      botDisplayName: "Live Bot",
      liveTranscript: { source: "captions" },
    });
    const tab = await openSignedIn(server, user, `#/bots/${botId}`);
    const { page } = tab;
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    const transcript = page.getByRole("region", { name: "Live transcript" });
    const line = (text: string, final: boolean) => ({
      type: final ? ("transcript.final" as const) : ("transcript.partial" as const),
      data: {
        utteranceId: "u-1",
        speaker: { participantId: "p-1", name: "Ada Speaker" },
        text,
        startMs: 1200,
        endMs: 2000,
        source: "captions" as const,
        language: "en",
      },
    });
    await runner.send(line("We ship", false));
    await expect.poll(() => transcript.getByRole("listitem").textContent()).toContain("We ship");
    expect(await transcript.locator("li[aria-busy=true]").count()).toBe(1);
    await runner.send(line("We ship on Friday", true));
    await expect.poll(() => transcript.getByRole("listitem").textContent()).toContain("We ship on Friday");
    expect(await transcript.getByRole("listitem").count()).toBe(1);
    expect(await transcript.locator("li[aria-busy=true]").count()).toBe(0);

    await runner.send({
      type: "chat.message",
      data: {
        messageId: "m-1",
        sender: { participantId: "p-1", name: "Ada Speaker" },
        text: "agenda in the doc",
        sentAt: new Date().toISOString(),
        fromBot: false,
      },
    });
    const chat = page.getByRole("region", { name: "Chat" });
    await expect.poll(() => chat.getByRole("listitem").textContent()).toContain("agenda in the doc");
    await chat.getByLabel("Message to the meeting").fill("Thanks, noted");
    await chat.getByRole("button", { name: "Send" }).click();
    // Sent: the box clears once the command is queued.
    await expect.poll(() => chat.getByLabel("Message to the meeting").inputValue()).toBe("");
    await page.getByRole("button", { name: "Leave the call" }).click();
    // What the bot's runner is asked to do, in order: the message, then the leave.
    await expect
      .poll(async () => {
        const res = await new Api(server.url).get(`/v1/bot-callbacks/${botId}/commands?wait=0`, {
          token: config.callback.token,
        });
        // Leaving out the page's own screenshots of what the bot sees (asked while it is in the call).
        return res.body.commands
          .filter((c: { kind: string }) => c.kind !== "screenshot")
          .map((c: { kind: string; payload: { text?: string } }) => [c.kind, c.payload.text]);
      })
      .toEqual([
        ["chat", "Thanks, noted"],
        ["leave", undefined],
      ]);
    expectNoProblems(tab);
  });
});
