import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser, Locator } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeTabs, type DashboardTab, expectNoProblems, openDashboard } from "../helpers/dashboard.js";
import { launchTestChromium } from "../helpers/mock-browser.js";
import {
  deployedBot,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";
import { type StoredUtterance, storeCompletedContent } from "../helpers/stored-content.js";

const run = promisify(execFile);

let server: TestServer;
let browser: Browser;
let scratch: string;
let mp4: Uint8Array;
const tabs: DashboardTab[] = [];

/** A real 10-second H.264 + AAC MP4 with its index up front: long enough to see a seek. */
async function makeMp4(): Promise<Uint8Array> {
  const file = path.join(scratch, "ten-seconds.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440"],
    ...["-t", "10", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"],
    ...["-c:a", "aac", "-movflags", "+faststart", file],
  ]);
  return new Uint8Array(await readFile(file));
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-dash-recording-"));
  [server, browser, mp4] = await Promise.all([
    startTestServer(),
    launchTestChromium({ ignoreDefaultArgs: ["--mute-audio"] }),
    makeMp4(),
  ]);
});
afterEach(() => closeTabs(tabs));
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** A bot that was in a meeting and uploaded the 10-second recording. */
async function recordedBot(user: TestUser): Promise<number> {
  const { botId, runner } = await deployedBot(server, user);
  await runner.status("JOINING_CALL");
  await runner.status("IN_CALL");
  await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
  expect((await runner.upload(mp4, 10_000)).status).toBe(201);
  expect((await runner.status("DONE")).status).toBe(200);
  return botId;
}

/** The bot's page, signed in as `user` (the session put where the dashboard keeps it). */
async function openBotPage(user: TestUser, botId: number): Promise<DashboardTab> {
  const tab = await openDashboard(browser, server.url);
  tabs.push(tab);
  await tab.context.addInitScript(
    ([access, refresh]) => localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh })),
    [user.token, user.refreshToken],
  );
  // Well inside the test's own limit: a wait that fails says what it was waiting for.
  tab.page.setDefaultTimeout(10_000);
  await tab.page.goto(`${server.url}/#/bots/${botId}`);
  await tab.page.reload();
  return tab;
}

const speaker = (name: string) => ({ participantId: `p-${name}`, name });
const line = (name: string, startMs: number, endMs: number, text: string): StoredUtterance => ({
  speaker: speaker(name),
  startMs,
  endMs,
  text,
  confidence: 0.9,
  words: [],
});
const UTTERANCES = [
  line("Alice", 0, 1800, "Welcome to the weekly sync."),
  line("Bob", 2000, 3800, "The build is green again."),
  line("Alice", 4000, 8500, "Bob will send the release notes by Friday."),
  line("Carol", 8600, 9800, "Sounds good to me."),
];

/**
 * Where the player's next seek goes, once `act` has made it seek: its time as the seek starts.
 * Not as it finishes: a playing video moves on meanwhile (0.23 s on a loaded machine).
 */
async function seeksTo(video: Locator, act: () => Promise<void>): Promise<number> {
  type Watched = Window & { seekingTo?: Promise<number> };
  // Listening before acting: a seek within the page can start before another round trip.
  await video.evaluate((v: HTMLVideoElement) => {
    (window as Watched).seekingTo = new Promise<number>((resolve) =>
      v.addEventListener("seeking", () => resolve(v.currentTime), { once: true }),
    );
  });
  await act();
  return video.evaluate(() => (window as Watched).seekingTo!);
}

describe("a bot's recording in the dashboard", () => {
  it("streams the recording with Range, follows it in the transcript, seeks on a line, shows the summary", async () => {
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    const db = await openServerDatabase(server);
    try {
      await storeCompletedContent(db, botId, {
        utterances: UTTERANCES,
        summary: {
          overview: "The build is green and the release notes are on their way.",
          keyPoints: ["The build is green again"],
          actionItems: [{ text: "Send the release notes", owner: "Bob", due: "by Friday", startMs: 4000 }],
          decisions: ["Ship on Monday"],
        },
      });
    } finally {
      await db.close();
    }

    const fileAnswers: number[] = [];
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    page.on("response", (response) => {
      if (response.url().includes(`/v1/recordings/${botId}/file?`)) fileAnswers.push(response.status());
    });
    const recording = page.getByRole("region", { name: "Recording" });
    await expect.poll(() => recording.locator(".recording-facts").textContent()).toMatch(/ · 0:10 · /);
    const size =
      mp4.length < 1024 * 1024
        ? `${(mp4.length / 1024).toFixed(1)} KiB`
        : `${(mp4.length / 1024 / 1024).toFixed(1)} MiB`;
    expect(await recording.locator(".recording-facts").textContent()).toMatch(new RegExp(`^${size} · `));

    // It plays, from the signed link, by ranges.
    const video = page.locator("video");
    await video.evaluate((v: HTMLVideoElement) => v.play());
    await page.waitForFunction(() => (document.querySelector("video")?.currentTime ?? 0) > 0.5);
    expect(await video.evaluate((v: HTMLVideoElement) => Math.round(v.duration))).toBe(10);
    expect(fileAnswers).toContain(206);
    expect(fileAnswers.every((status) => status === 206 || status === 200)).toBe(true);

    const transcript = page.getByRole("list", { name: "Transcript" });
    const lines = transcript.getByRole("button");
    await expect.poll(() => lines.count()).toBe(UTTERANCES.length);
    expect(await lines.nth(1).textContent()).toBe("0:02BobThe build is green again.");
    const current = transcript.locator('[aria-current="true"]');

    // A click on the third line seeks there, plays on, and marks that line.
    const third = lines.nth(2);
    expect(await seeksTo(video, () => third.click())).toBeCloseTo(4, 1);
    await expect.poll(() => third.getAttribute("aria-current")).toBe("true");
    expect(await current.count()).toBe(1);
    expect(await video.evaluate((v: HTMLVideoElement) => v.paused)).toBe(false);

    // From the keyboard too; then the mark follows the playback onto the next line by itself.
    const second = lines.nth(1);
    await second.focus();
    expect(await seeksTo(video, () => page.keyboard.press("Enter"))).toBeCloseTo(2, 1);
    await expect.poll(() => second.getAttribute("aria-current")).toBe("true");
    await expect.poll(() => third.getAttribute("aria-current"), { timeout: 10_000 }).toBe("true");
    expect(await second.getAttribute("aria-current")).toBeNull();

    // The summary, with the action item's owner and due date.
    const summary = page.getByRole("region", { name: "Summary" });
    expect(await summary.textContent()).toContain(
      "The build is green and the release notes are on their way.",
    );
    const item = summary.getByRole("list", { name: "Action items" }).getByRole("listitem");
    expect(await item.textContent()).toBe("Bob: Send the release notes · due by Friday 0:04");
    expect(await summary.getByRole("list", { name: "Decisions" }).textContent()).toBe("Ship on Monday");
    expect(await page.getByRole("button", { name: "Transcribe again" }).isEnabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Summarize again" }).isEnabled()).toBe(true);
    expectNoProblems(tab);
  });

  it("keeps the current line of a long transcript in view as the player moves, without scrolling the page", async () => {
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    // 40 lines of a quarter second each: far more than the list shows at once.
    const many = Array.from({ length: 40 }, (_, i) =>
      line(i % 2 ? "Bob" : "Alice", i * 250, i * 250 + 250, `Line ${i}`),
    );
    const db = await openServerDatabase(server);
    try {
      await storeCompletedContent(db, botId, { utterances: many });
    } finally {
      await db.close();
    }
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    const transcript = page.getByRole("list", { name: "Transcript" });
    await expect.poll(() => transcript.getByRole("button").count()).toBe(many.length);
    const pageScroll = await page.evaluate(() => window.scrollY);

    // Moved by the player's own controls, as a viewer dragging its slider would.
    await page.locator("video").evaluate((v: HTMLVideoElement) => {
      v.currentTime = 9.1;
    });
    const line36 = transcript.getByRole("button", { name: /Line 36$/ });
    await expect.poll(() => line36.getAttribute("aria-current")).toBe("true");
    const inView = () =>
      transcript.evaluate((list) => {
        const box = list.getBoundingClientRect();
        const item = list.querySelector('[aria-current="true"]')!.getBoundingClientRect();
        return item.top >= box.top && item.bottom <= box.bottom;
      });
    await expect.poll(inView).toBe(true);
    expect(await transcript.evaluate((list) => list.scrollTop)).toBeGreaterThan(0);
    expect(await page.evaluate(() => window.scrollY)).toBe(pageScroll);
    expectNoProblems(tab);
  });

  it("keeps a right-to-left override in a name inside the name: the words after it read as said", async () => {
    // Someone who joined as "Mallory" + U+202E (RIGHT-TO-LEFT OVERRIDE): unisolated, the override
    // runs on through the rest of the line, and what they (or the owner of an item) said is shown
    // reversed — here, a denial that reads as something else.
    const RLO = "\u202E";
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    const db = await openServerDatabase(server);
    try {
      await storeCompletedContent(db, botId, {
        utterances: [
          line(`Mallory${RLO}`, 0, 1800, "I never agreed to this"),
          line("Bob", 2000, 3800, "Noted."),
        ],
        summary: {
          overview: "",
          keyPoints: [],
          actionItems: [{ text: "Send the contract", owner: `Mallory${RLO}`, due: null, startMs: null }],
          decisions: [],
        },
      });
    } finally {
      await db.close();
    }
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    const transcript = page.getByRole("list", { name: "Transcript" });
    await expect.poll(() => transcript.getByRole("button").count()).toBe(2);
    const items = page.getByRole("region", { name: "Summary" }).getByRole("list", { name: "Action items" });
    await items.waitFor();

    /** The left edges of the 1st, 3rd and 8th characters of `words` where they are on the page. */
    const edges = (words: string) =>
      page.evaluate((wanted) => {
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const at = node.textContent!.indexOf(wanted);
          if (at < 0) continue;
          const range = document.createRange();
          return [0, 2, 7].map((i) => {
            range.setStart(node, at + i);
            range.setEnd(node, at + i + 1);
            return range.getBoundingClientRect().left;
          });
        }
        throw new Error(`"${wanted}" is not on the page`);
      }, words);
    for (const words of ["I never agreed to this", "Send the contract"]) {
      const [first, third, eighth] = await edges(words);
      expect({ words, leftToRight: first! < third! && third! < eighth! }).toEqual({
        words,
        leftToRight: true,
      });
    }
    expectNoProblems(tab);
  });

  it("says there is no recording yet, and shows it when it arrives, without a reload", async () => {
    const user = await registerUser(server.api);
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    const recording = page.getByRole("region", { name: "Recording" });
    await recording.getByText(/no recording/i).waitFor();
    expect(await page.locator("video").count()).toBe(0);

    await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
    expect((await runner.upload(mp4, 10_000)).status).toBe(201);
    await runner.status("DONE");
    await page.locator("video").waitFor();
    expect(await recording.getByText(/no recording/i).count()).toBe(0);
    await page.getByText("No transcript yet: Transcribe makes one from the recording's audio.").waitFor();
    expectNoProblems(tab);
  });

  it("creates a share link that opens, copies it, and revokes it after asking", async () => {
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    const tab = await openBotPage(user, botId);
    const { page, context } = tab;
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    const share = page.getByRole("region", { name: "Share link" });
    await share.getByText("This recording has no share link.").waitFor();

    await share.getByLabel("Link expires after").selectOption({ label: "1 day" });
    await share.getByRole("button", { name: "Create share link" }).click();
    const field = share.getByLabel("Share link");
    await field.waitFor();
    const url = await field.inputValue();
    expect(url).toMatch(new RegExp(`^${server.url}/v1/share/`));
    expect((await fetch(url)).status).toBe(200);
    const live = await server.api.get(`/v1/recordings/${botId}/share`, { token: user.token });
    const lifetimeS = (Date.parse(live.body.expiresAt) - Date.parse(live.body.createdAt)) / 1000;
    expect(Math.round(lifetimeS)).toBe(24 * 60 * 60);

    await share.getByRole("button", { name: "Copy" }).click();
    await share.getByText("Copied", { exact: true }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);

    // Asked, and declined: nothing changes.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await share.getByRole("button", { name: "Revoke share link" }).click();
    expect(await field.inputValue()).toBe(url);
    expect((await fetch(url)).status).toBe(200);

    page.once("dialog", (dialog) => void dialog.accept());
    await share.getByRole("button", { name: "Revoke share link" }).click();
    await share.getByText("The share link was revoked: it no longer opens.").waitFor();
    expect(await field.count()).toBe(0);
    expect((await fetch(url)).status).toBe(404);
    expect(await share.getByRole("button", { name: "Create share link" }).isEnabled()).toBe(true);
    expectNoProblems(tab);
  });

  it("transcribes and summarizes on a click, showing the progress and then the result", async () => {
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    await page.getByText("No transcript yet: Transcribe makes one from the recording's audio.").waitFor();

    await page.getByRole("button", { name: "Transcribe" }).click();
    // The job's status comes back with the 202, and is polled while it runs.
    await page.getByRole("progressbar", { name: "Transcript progress" }).waitFor();
    expect(await page.getByRole("button", { name: "Transcribing…" }).isDisabled()).toBe(true);
    const transcriptStatus = page.getByRole("status", { name: "Transcript status" });
    // pocketsphinx runs for real: seconds on a busy machine.
    await expect.poll(() => transcriptStatus.textContent(), { timeout: 20_000 }).toBe("completed");
    // A tone has no words: the engine's answer, whatever it is, is what the page shows.
    const transcribed = await server.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(transcribed.status).toBe(200);
    const utterances = transcribed.body.utterances as StoredUtterance[];
    if (utterances.length === 0) await page.getByText("No speech was recognized.").waitFor();
    else
      await expect
        .poll(() => page.getByRole("list", { name: "Transcript" }).getByRole("button").count())
        .toBe(utterances.length);

    const summary = page.getByRole("region", { name: "Summary" });
    await summary.getByRole("button", { name: "Summarize" }).click();
    await summary.getByRole("progressbar", { name: "Summary progress" }).waitFor();
    const summaryStatus = summary.getByRole("status", { name: "Summary status" });
    await expect.poll(() => summaryStatus.textContent(), { timeout: 20_000 }).toBe("completed");
    const made = await server.api.get(`/v1/summaries/${botId}`, { token: user.token });
    await summary.getByRole("heading", { name: "Action items" }).waitFor();
    const overview = summary.getByRole("heading", { name: "Overview" }).locator("+ p");
    expect(await overview.textContent()).toBe(made.body.overview || "—");
    expect(await summary.getByRole("button", { name: "Summarize again" }).isEnabled()).toBe(true);
    expectNoProblems(tab);
  }, 60_000);

  it("follows a summary already on its way when asked for another (409)", async () => {
    const user = await registerUser(server.api);
    const botId = await recordedBot(user);
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    const summary = page.getByRole("region", { name: "Summary" });
    await summary.getByText("No summary yet: Summarize makes one from the transcript.").waitFor();

    // Meanwhile, a summary is asked for elsewhere: one waiting for a transcript, which never comes.
    const db = await openServerDatabase(server);
    try {
      const at = new Date().toISOString();
      await db.kysely
        .insertInto("content_jobs")
        .values({
          bot_id: botId,
          kind: "summary",
          state: "queued",
          engine: "extractive",
          attempts: 0,
          created_at: at,
          updated_at: at,
        })
        .execute();
    } finally {
      await db.close();
    }

    const refusals = tab.refused.length;
    await summary.getByRole("button", { name: "Summarize" }).click();
    await summary.getByRole("progressbar", { name: "Summary progress" }).waitFor();
    expect(tab.refused.slice(refusals)).toContain(`409 POST /v1/summaries/${botId}/summarize`);
    expect(await summary.getByRole("status", { name: "Summary status" }).textContent()).toBe("queued");
    expect(await summary.getByRole("button", { name: "Summarizing…" }).isDisabled()).toBe(true);
    expect(await summary.getByRole("alert").count()).toBe(0);
    expectNoProblems(tab);
  });

  it("says why a transcript failed", async () => {
    const user = await registerUser(server.api);
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
    // An upload that is no MP4 at all: ffmpeg cannot read its audio, and retrying cannot help.
    expect(
      (await runner.upload(mp4Bytes(new TextEncoder().encode("........not a video")), 10_000)).status,
    ).toBe(201);
    await runner.status("DONE");
    const tab = await openBotPage(user, botId);
    const { page } = tab;
    await page.getByRole("alert").filter({ hasText: "The player could not load the recording" }).waitFor();

    await page.getByRole("button", { name: "Transcribe" }).click();
    const status = page.getByRole("status", { name: "Transcript status" });
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toMatch(/^failed/);
    expect(await status.textContent()).toMatch(
      /^failedFailed: ffmpeg could not read the audio .*\(media_unreadable\)$/s,
    );
    expect(await page.getByRole("button", { name: "Transcribe" }).isEnabled()).toBe(true);
    expectNoProblems(tab);
  });
});
