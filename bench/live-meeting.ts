/**
 * `make bench`: the live meeting as a user's program sees it, end to end. A real bot (runner,
 * Chromium, the control plane, its live stream) joins a scripted mock Meet call with
 * `liveTranscript: {source: "captions"}`; a second browser in the same call turns its own captions
 * on and notes when each caption text first showed; an SSE client follows GET /v1/bots/{id}/live.
 * Prints, with p50/p95/max:
 *
 * - caption shown on the page → `transcript.partial` with that text at the SSE client (goal p95 ≤ 500 ms);
 * - line settled (its caption's last change) → `transcript.final` at the client (goal p95 ≤ 1.5 s);
 * - `POST /v1/bots/{id}/chat` → the message in the mock's chat (goal p95 ≤ 1 s).
 *
 * Both pages get each line from the host at the same moment and reveal its words as they play
 * it, so the observer's "shown" stands in for the bot's page (within a few ms on one machine).
 * Figures only; asserts nothing. BENCH_CHATS messages (default 10).
 */
import { chromium } from "playwright";
import { startMockHost } from "../fixtures/host/server.js";
import { meetAdapter } from "../platforms/meet/index.js";
import { startBenchServer } from "./bench-server.js";

const CHATS = Number(process.env.BENCH_CHATS ?? 10);
const SCRIPT = [
  { participant: "Alice Example", text: "Thanks everyone for joining the weekly planning meeting" },
  { participant: "Bob Example", text: "The budget review is finished and the numbers look good" },
  { participant: "Alice Example", text: "I will send the report to the team tomorrow" },
  { participant: "Bob Example", text: "We decided to ship the new version on Friday" },
  { participant: "Alice Example", text: "Please add your notes to the shared document" },
];

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
const figures = (values: number[]) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return `n=${sorted.length} p50 ${Math.round(percentile(sorted, 50))} ms, p95 ${Math.round(percentile(sorted, 95))} ms, max ${Math.round(sorted.at(-1) ?? Number.NaN)} ms`;
};
const normalize = (text: string) => text.replace(/\s+/g, " ").trim();

interface Received {
  at: number;
  type: string;
  utteranceId: string;
  text: string;
}

/** Follows the bot's live stream, noting when each transcript event arrived. */
async function followLive(url: string, token: string, received: Received[], signal: AbortSignal) {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, "last-event-id": "0" },
    signal,
  });
  if (!response.ok || !response.body) throw new Error(`live stream: HTTP ${response.status}`);
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = response.body.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const at = Date.now();
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").find((line) => line.startsWith("data: "));
      if (!data) continue;
      const event = JSON.parse(data.slice(6)) as {
        type: string;
        data: { utteranceId?: string; text?: string };
      };
      if (!event.type.startsWith("transcript.") || event.type === "transcript.source") continue;
      received.push({
        at,
        type: event.type,
        utteranceId: String(event.data.utteranceId),
        text: normalize(String(event.data.text)),
      });
    }
  }
}

async function main(): Promise<void> {
  const mock = await startMockHost({ port: 0 });
  const { api, close } = await startBenchServer(mock.url);
  const browser = await chromium.launch({
    executablePath: process.env.MEETBOT_CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--autoplay-policy=no-user-gesture-required",
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
    ],
  });
  const streamDone = new AbortController();
  try {
    const code = "liv-eben-chx";
    const configured = await fetch(`${mock.url}/control/meetings/google/${code}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ admit: "open", participants: 2, script: SCRIPT, scriptStartAfterMs: 6000 }),
    });
    if (!configured.ok) throw new Error(`mock control: ${configured.status} ${await configured.text()}`);

    // The observer: in the call before the script starts, its own captions on.
    const page = await browser.newPage();
    await page.goto(`${mock.url}/meet/${code}`);
    await meetAdapter.join(page, { displayName: "Observer", info: { platform: "google" } as never });
    await page.evaluate(() => {
      const shown: Array<[number, string]> = [];
      (window as unknown as { __shown: typeof shown }).__shown = shown;
      new MutationObserver(() => {
        for (const node of document.querySelectorAll(".ygicle")) {
          const text = (node.textContent ?? "").replace(/\s+/g, " ").trim();
          // The first time each text shows: a caption's final text first shows when it settles.
          if (text && !shown.some(([, seen]) => seen === text)) shown.push([Date.now(), text]);
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    const live = meetAdapter.live as NonNullable<typeof meetAdapter.live>;
    const outcome = await live.turnOnCaptions(page, { note: () => {} });
    if (!outcome.on) throw new Error(`observer captions: ${outcome.reason}`);

    const bot = await api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}` },
      botDisplayName: "Live Bench Bot",
      liveTranscript: { source: "captions" },
    });
    const received: Received[] = [];
    const following = followLive(
      new URL(`/v1/bots/${bot.id}/live`, api.baseUrl).toString(),
      api.bearerToken,
      received,
      streamDone.signal,
    ).catch(() => {});
    await api.deploy(bot.id);
    await api.waitForStatus(bot.id, ["IN_CALL", "FATAL"], { timeoutMs: 60_000, intervalMs: 50 });

    // The script plays out: each line on air for its length, 800 ms apart.
    const state = async () =>
      (await (await fetch(`${mock.url}/control/meetings/google/${code}`)).json()) as {
        spoken: Array<{ endedAt: string | null }>;
        chat: Array<{ text: string; fromAttendee: boolean }>;
      };
    for (;;) {
      const now = await state();
      if (now.spoken.length === SCRIPT.length && now.spoken.every((line) => line.endedAt)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // The last line's final comes a second after its caption stops changing.
    await new Promise((resolve) => setTimeout(resolve, 2500));

    const shown = await page.evaluate(
      () => (window as unknown as { __shown: Array<[number, string]> }).__shown,
    );
    const partialLatency = received
      .filter((event) => event.type === "transcript.partial")
      .map((event) => event.at - (shown.find(([, text]) => text === event.text)?.[0] ?? Number.NaN));
    const finalLatency = received
      .filter((event) => event.type === "transcript.final")
      // Settled: the caption's last change, when its final text first showed.
      .map((event) => event.at - (shown.find(([, text]) => text === event.text)?.[0] ?? Number.NaN));

    const chatLatency: number[] = [];
    for (let i = 0; i < CHATS; i++) {
      const text = `bench message ${i + 1} ${Date.now()}`;
      const sentAt = Date.now();
      await api.send("POST", `/v1/bots/${bot.id}/chat`, { text });
      for (;;) {
        if ((await state()).chat.some((message) => message.text === text)) break;
        if (Date.now() - sentAt > 30_000) throw new Error(`chat message ${i + 1} never reached the mock`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      chatLatency.push(Date.now() - sentAt);
    }
    await api.leave(bot.id);
    await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000, intervalMs: 100 });
    streamDone.abort();
    await following;

    console.log(
      `live meeting on the mock Meet, ${SCRIPT.length} scripted lines, captions read by a real bot`,
    );
    console.log(
      `  caption shown → transcript.partial at an SSE client: ${figures(partialLatency)} (goal p95 ≤ 500 ms)`,
    );
    console.log(
      `  line settled → transcript.final at the client:       ${figures(finalLatency)} (goal p95 ≤ 1500 ms)`,
    );
    console.log(
      `  POST /chat → message in the mock's chat:              ${figures(chatLatency)} (goal p95 ≤ 1000 ms)`,
    );
    const unmatched = received.filter((event) => !shown.some(([, text]) => text === event.text)).length;
    if (unmatched > 0)
      console.log(`  (${unmatched} transcript events whose text the observer never showed are left out)`);
  } finally {
    streamDone.abort();
    await browser.close();
    await close();
    await mock.close();
  }
}

await main();
