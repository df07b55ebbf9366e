/**
 * `make bench`, calendar feeds' part: how long a feed takes to read (ical.js parse, recurrences
 * expanded over the 28-day window, meeting links found), and a whole sync on a real server
 * (SQLite): the first one, which schedules a bot per meeting, and one of the unchanged feed, which
 * is what every interval costs. The feed: SERIES weekly meetings and as many single ones, in
 * several time zones, every one with a link. Prints figures only.
 *
 *   node --import tsx bench/calendar-sync.ts
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { ApiClient } from "../src/client/api-client.js";
import { startServer } from "../src/server/main.js";
import { readFeed } from "../src/server/services/calendar-feed.js";
import { findMeetingLink } from "../src/server/services/meeting-links.js";
import { type FeedEvent, icsFeed, startFeedServer, wallClock } from "../test/helpers/calendar-feed.js";

const SERIES = Number(process.env.BENCH_SERIES ?? 100);
const RUNS = 5;
const DAY = 86_400_000;

const ms = (v: number) => `${Math.round(v)} ms`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

function feedText(): string {
  const base = Math.floor(Date.now() / DAY) * DAY + DAY;
  const events: FeedEvent[] = [];
  const code = (i: number) => `${"abcdefghij"[i % 10]}${"klmnopqrst"[Math.floor(i / 10) % 10]}x-bench-xyz`;
  for (let i = 0; i < SERIES; i++) {
    const start = new Date(base + (i % 5) * DAY + (8 + (i % 8)) * 3_600_000);
    events.push({
      uid: `series-${i}@bench`,
      summary: `Weekly ${i}`,
      start: wallClock(start, 330),
      end: wallClock(new Date(start.getTime() + 1_800_000), 330),
      tzid: "Asia/Kolkata",
      rrule: "FREQ=WEEKLY;BYDAY=MO,WE,FR",
      description: `Join: https://meet.google.com/${code(i)}`,
    });
    const single = new Date(base + (i % 27) * DAY + 14 * 3_600_000);
    events.push({
      uid: `single-${i}@bench`,
      summary: `One-off ${i}`,
      start: `${wallClock(single)}Z`,
      end: `${wallClock(new Date(single.getTime() + 3_600_000))}Z`,
      location: `https://us02web.zoom.us/j/8${String(i).padStart(10, "0")}`,
    });
  }
  return icsFeed(events);
}

async function main(): Promise<void> {
  const text = feedText();
  const window = { from: new Date(), to: new Date(Date.now() + 28 * DAY) };
  const reads: number[] = [];
  let instances = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const found = readFeed(text, window).filter((instance) => findMeetingLink(instance.texts));
    reads.push(performance.now() - started);
    instances = found.length;
  }

  const feed = await startFeedServer();
  feed.serve({ body: text });
  const dataDir = await mkdtemp(join(tmpdir(), "meetbot-bench-calendar-"));
  const server = await startServer({
    port: 0,
    dataDir,
    logLevel: "warn",
    rateLimit: { perMinute: 0, perHour: 0 },
    env: {
      ...process.env,
      MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
      // Syncs by request only: each one measured is the bench's.
      MEETBOT_JOB_WORKER: "0",
    },
  });
  const syncs: { first: number; again: number[] } = { first: 0, again: [] };
  try {
    const api = new ApiClient(server.url);
    await api.register(`bench-${Date.now()}@example.com`, "bench-password-1", "Bench");
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(new URL(path, server.url), {
        method,
        headers: { authorization: `Bearer ${api.bearerToken}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<{ id: number }>;
    };
    const calendar = await call("POST", "/v1/calendars", { name: "Bench", url: feed.url, autoJoin: "all" });
    let started = performance.now();
    await call("POST", `/v1/calendars/${calendar.id}/sync`);
    syncs.first = performance.now() - started;
    for (let i = 0; i < RUNS; i++) {
      started = performance.now();
      await call("POST", `/v1/calendars/${calendar.id}/sync`);
      syncs.again.push(performance.now() - started);
    }
  } finally {
    await server.close();
    await feed.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(
    `calendar feeds (${SERIES} weekly series × 3 days a week + ${SERIES} single meetings: ${instances} meetings in 28 days, ${Math.round(text.length / 1024)} KiB):`,
  );
  console.log(
    `  read the feed (parse, expand, find links): ${ms(median(reads))}  [${reads.map(ms).join(", ")}]`,
  );
  console.log(`  first sync (a scheduled bot per meeting):  ${ms(syncs.first)}`);
  console.log(
    `  sync of the unchanged feed:                ${ms(median(syncs.again))}  [${syncs.again.map(ms).join(", ")}]`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
