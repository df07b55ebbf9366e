/**
 * Caption → partial latency: how long after a caption's text changes on the page the runner has
 * its `transcript.partial`. A mock Meet call reads a script; a browser joins it with the Meet
 * adapter, turns captions on and reads them exactly as a bot does (the page feed and the caption
 * tracker), while a second observer in the page notes when each caption text first showed. Both
 * clocks are this machine's. Prints the latencies (median, p95, max) and how many text changes the
 * coalescing folded into how many partials; asserts nothing.
 *
 * `node --import tsx bench/live-captions.ts`
 */
import { chromium } from "playwright";
import { startMockHost } from "../fixtures/host/server.js";
import { readCaptions } from "../platforms/live.js";
import { meetAdapter } from "../platforms/meet/index.js";
import { CaptionTracker } from "../src/runner/live-meeting/caption-tracker.js";
import { feedFromPage } from "../src/runner/live-meeting/page-feed.js";
import { SpeakerDirectory } from "../src/runner/live-meeting/speakers.js";

const SCRIPT = [
  { participant: "Alice Example", text: "Thanks everyone for joining the weekly planning meeting" },
  { participant: "Bob Example", text: "The budget review is finished and the numbers look good" },
  { participant: "Alice Example", text: "I will send the report to the team tomorrow" },
  { participant: "Bob Example", text: "We decided to ship the new version on Friday" },
];

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  const host = await startMockHost();
  const browser = await chromium.launch({
    executablePath: process.env.MEETBOT_CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--autoplay-policy=no-user-gesture-required",
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
    ],
  });
  try {
    const code = "cap-late-ben";
    const configured = await fetch(`${host.url}/control/meetings/google/${code}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        admit: "open",
        participants: 2,
        script: SCRIPT,
        scriptStartAfterMs: 2000,
        endAfterScript: true,
      }),
    });
    if (!configured.ok) throw new Error(`mock control: ${configured.status} ${await configured.text()}`);
    const page = await browser.newPage();
    await page.goto(`${host.url}/meet/${code}`);
    await meetAdapter.join(page, { displayName: "Latency Bench", info: { platform: "google" } as never });
    await page.locator('button[aria-label^="People"]').waitFor();
    // When each caption text first showed, by the page's own clock.
    await page.evaluate(() => {
      const shown: Array<[number, string]> = [];
      (window as unknown as { __shown: typeof shown }).__shown = shown;
      new MutationObserver(() => {
        for (const node of document.querySelectorAll(".ygicle")) {
          const text = (node.textContent ?? "").replace(/\s+/g, " ").trim();
          if (text && !shown.some(([, seen]) => seen === text)) shown.push([Date.now(), text]);
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    const live = meetAdapter.live as NonNullable<typeof meetAdapter.live>;
    const outcome = await live.turnOnCaptions(page, { note: () => {} });
    if (!outcome.on) throw new Error(outcome.reason);
    const partials: Array<[number, string]> = [];
    const tracker = new CaptionTracker({
      clock: () => Date.now(),
      resolve: (ref) => new SpeakerDirectory("Latency Bench").resolve(ref),
      emit: (type, utterance) => {
        if (type === "transcript.partial") partials.push([Date.now(), utterance.text]);
      },
      language: null,
    });
    const stop = await feedFromPage(page, "captions", readCaptions, live.captions, ({ entries }) =>
      tracker.update(entries),
    );
    await page
      .getByText("The call ended", { exact: false })
      .waitFor({ timeout: 120_000 })
      .catch(() => {});
    stop();
    tracker.stop();
    const shown = await page.evaluate(
      () => (window as unknown as { __shown: Array<[number, string]> }).__shown,
    );
    const latencies = partials
      .map(([at, text]) => at - (shown.find(([, seen]) => seen === text)?.[0] ?? NaN))
      .filter((ms) => Number.isFinite(ms))
      .sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        captionChanges: shown.length,
        partials: partials.length,
        latencyMs: {
          median: percentile(latencies, 50),
          p95: percentile(latencies, 95),
          max: latencies.at(-1),
        },
      }),
    );
  } finally {
    await browser.close();
    await host.close();
  }
}

await main();
