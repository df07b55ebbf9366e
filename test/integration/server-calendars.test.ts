import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, vi } from "vitest";
import { claimDueSyncs, CALENDAR_SYNC_LEASE_MS } from "../../src/server/services/calendar-sync.js";
import { StartupError } from "../../src/server/startup-error.js";
import {
  type FeedEvent,
  type FeedServer,
  icsFeed,
  startFeedServer,
  wallClock,
} from "../helpers/calendar-feed.js";
import {
  defined,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * Calendar feeds on a real server and database (SQLite, or PostgreSQL under
 * scripts/with-postgres.sh) reading real iCalendar feeds over HTTP on 127.0.0.1 (allowed as webhook
 * targets are, by MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS). The server's own sync worker is off: each
 * test syncs with POST /v1/calendars/{id}/sync, so that every sync is one the test can name.
 * Events are placed days ahead of the real clock, in zones whose offsets have no daylight saving,
 * so the expected UTC times are plain arithmetic.
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** Midnight UTC two days from now: every event is well inside the 28 days and beyond joinAt's 30 s. */
const D = Math.floor(Date.now() / DAY) * DAY + 2 * DAY;
const at = (days: number, hours: number) => new Date(D + days * DAY + hours * HOUR);
const iso = (date: Date) => date.toISOString();
/** Asia/Kolkata is +05:30 (the feed defines it), America/Sao_Paulo −03:00 (it does not: an IANA name). */
const kolkata = (days: number, hours: number) => wallClock(at(days, hours), 330);
const saoPaulo = (days: number, hours: number) => wallClock(at(days, hours), -180);
const utc = (days: number, hours: number) => `${wallClock(at(days, hours))}Z`;

const MEET = "https://meet.google.com/abc-defg-hij";
/** Outlook's UIDs are long (over the 100 characters a router takes in a path segment by default). */
const OUTLOOK_UID = `040000008200E00074C5B7101A82E00800000000${"0123456789ABCDEF".repeat(5)}`;
const ZOOM = "https://us02web.zoom.us/j/81234567890?pwd=Zm9v";

const plain: FeedEvent = {
  uid: "plain@test",
  summary: "Design review",
  start: saoPaulo(0, 13),
  end: saoPaulo(0, 14),
  tzid: "America/Sao_Paulo",
  location: MEET,
};
const weekly: FeedEvent = {
  uid: "weekly@test",
  summary: "Weekly sync",
  start: kolkata(1, 3.5),
  end: kolkata(1, 4),
  tzid: "Asia/Kolkata",
  rrule: "FREQ=WEEKLY;COUNT=4",
  exdates: [kolkata(8, 3.5)],
  description: `Join Zoom Meeting\n${ZOOM}\n\nMeeting ID: 812 3456 7890`,
};
/** The third instance, moved two hours later. */
const moved: FeedEvent = {
  ...weekly,
  rrule: undefined,
  exdates: undefined,
  summary: "Weekly sync (later)",
  recurrenceId: kolkata(15, 3.5),
  start: kolkata(15, 5.5),
  end: kolkata(15, 6),
};
const cancelled: FeedEvent = {
  uid: "cancelled@test",
  summary: "Cancelled call",
  start: utc(2, 9),
  end: utc(2, 10),
  status: "CANCELLED",
  location: "https://teams.microsoft.com/l/meetup-join/19%3ameeting_abc%40thread.v2/0",
};
const noLink: FeedEvent = { uid: "nolink@test", summary: "Lunch", start: utc(2, 12), end: utc(2, 13) };

let server: TestServer;
let user: TestUser;
let feed: FeedServer;

test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  // Deliveries stay queued, for the tests to read; bots stay scheduled.
  webhooks: { worker: false },
  schedule: { worker: false },
  // A small feed limit, for a test to go past.
  calendars: { worker: false, maxFeedBytes: 64 * 1024 },
  logLevel: "error",
  env: {
    MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
    MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
  },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  user = await registerUser(server.api);
  const hook = await server.api.post("/v1/webhooks", {
    token: user.token,
    body: {
      name: "calendar events",
      url: "http://127.0.0.1:9/hook",
      events: ["calendar.synced", "calendar.sync_failed"],
    },
  });
  expect(hook.status).toBe(201);
  feed = await startFeedServer();
});
afterAll(async () => {
  await feed?.close();
});

interface EventAnswer {
  uid: string;
  recurrenceId: string | null;
  title: string;
  start: string;
  end: string;
  botId: number | null;
  botStatus: string | null;
  bot: string;
}

async function addCalendar(url: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await server.api.post("/v1/calendars", {
    token: user.token,
    body: { name: "Work", url, autoJoin: "all", ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function sync(calendarId: number) {
  const res = await server.api.post(`/v1/calendars/${calendarId}/sync`, { token: user.token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function events(calendarId: number): Promise<EventAnswer[]> {
  const res = await server.api.get(`/v1/calendars/${calendarId}/events`, { token: user.token });
  expect(res.status).toBe(200);
  return res.body.events;
}

/** The bots waiting for their joinAt, as GET /v1/bots?scheduled=true lists them. */
async function scheduledBots() {
  const res = await server.api.get("/v1/bots?scheduled=true&page_size=100", { token: user.token });
  return (
    res.body.bots as {
      id: number;
      joinAt: string;
      meetingTitle: string;
      botDisplayName: string;
      meetingInfo: { meetingUrl: string };
    }[]
  ).map((bot) => ({
    id: bot.id,
    joinAt: bot.joinAt,
    title: bot.meetingTitle,
    name: bot.botDisplayName,
    url: bot.meetingInfo.meetingUrl,
  }));
}

/** The calendar webhooks queued for the user, oldest first. */
async function calendarWebhooks(): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const db = await openServerDatabase(server);
  try {
    const rows = await db.kysely
      .selectFrom("webhook_deliveries")
      .select(["event", "payload"])
      .where("event", "like", "calendar.%")
      .orderBy("id")
      .execute();
    return rows.map((row) => ({
      event: row.event,
      data: (JSON.parse(row.payload) as { data: Record<string, unknown> }).data,
    }));
  } finally {
    await db.close();
  }
}

describe("calendar feeds", () => {
  let calendarId: number;
  let firstBots: Awaited<ReturnType<typeof scheduledBots>>;

  test("a feed gives exactly the expected scheduled bots: links found, recurrences expanded, time zones right", async () => {
    feed.serve({ body: icsFeed([plain, weekly, moved, cancelled, noLink]) });
    calendarId = await addCalendar(feed.url, { botDefaults: { botDisplayName: "Calendar notetaker" } });
    const result = await sync(calendarId);
    expect(result).toMatchObject({ added: 4, changed: 0, removed: 0 });
    expect(result.calendar).toMatchObject({
      lastSyncStatus: "ok",
      lastSyncError: null,
      urlHost: new URL(feed.url).host,
    });

    const listed = await events(calendarId);
    expect(listed.map((e) => [e.uid, e.recurrenceId, e.title, e.start, e.end])).toEqual([
      ["plain@test", null, "Design review", iso(at(0, 13)), iso(at(0, 14))],
      ["weekly@test", iso(at(1, 3.5)), "Weekly sync", iso(at(1, 3.5)), iso(at(1, 4))],
      // The excluded second week is not there; the third is moved; the fourth is as the rule says.
      ["weekly@test", iso(at(15, 3.5)), "Weekly sync (later)", iso(at(15, 5.5)), iso(at(15, 6))],
      ["weekly@test", iso(at(22, 3.5)), "Weekly sync", iso(at(22, 3.5)), iso(at(22, 4))],
    ]);
    expect(
      listed.every((e) => e.botId !== null && e.botStatus === "READY_TO_DEPLOY" && e.bot === "auto"),
    ).toBe(true);

    firstBots = await scheduledBots();
    expect(firstBots.map(({ id: _id, ...bot }) => bot)).toEqual([
      { joinAt: iso(at(0, 13)), title: "Design review", name: "Calendar notetaker", url: MEET },
      { joinAt: iso(at(1, 3.5)), title: "Weekly sync", name: "Calendar notetaker", url: ZOOM },
      { joinAt: iso(at(15, 5.5)), title: "Weekly sync (later)", name: "Calendar notetaker", url: ZOOM },
      { joinAt: iso(at(22, 3.5)), title: "Weekly sync", name: "Calendar notetaker", url: ZOOM },
    ]);
    expect(firstBots.map((bot) => bot.id)).toEqual(listed.map((e) => e.botId));
    expect(await calendarWebhooks()).toEqual([
      { event: "calendar.synced", data: { calendarId, added: 4, changed: 0, removed: 0 } },
    ]);

    // A sync of an unchanged feed changes nothing and says so to no one.
    expect(await sync(calendarId)).toMatchObject({ added: 0, changed: 0, removed: 0 });
    expect(await scheduledBots()).toEqual(firstBots);
    expect(await calendarWebhooks()).toHaveLength(1);
  });

  test("a second sync after edits moves, adds and deletes the right bots", async () => {
    const [plainBot, week1Bot, week3Bot, week4Bot] = firstBots.map((bot) => bot.id);
    const added: FeedEvent = {
      uid: "added@test",
      summary: "New call",
      start: utc(3, 12),
      end: utc(3, 13),
      location: MEET,
    };
    feed.serve({
      body: icsFeed([
        { ...plain, start: saoPaulo(0, 14), end: saoPaulo(0, 15) }, // an hour later
        { ...weekly, exdates: [kolkata(8, 3.5), kolkata(22, 3.5)] }, // the fourth week dropped
        { ...moved, status: "CANCELLED" }, // the moved third week cancelled
        cancelled,
        noLink,
        added,
      ]),
    });
    expect(await sync(calendarId)).toMatchObject({ added: 1, changed: 1, removed: 2 });

    const after = await scheduledBots();
    expect(after.map((bot) => [bot.joinAt, bot.title])).toEqual([
      [iso(at(0, 14)), "Design review"],
      [iso(at(1, 3.5)), "Weekly sync"],
      [iso(at(3, 12)), "New call"],
    ]);
    // The moved event's bot is the same bot, moved.
    expect(after[0]!.id).toBe(plainBot);
    expect(after[1]!.id).toBe(week1Bot);
    expect([plainBot, week1Bot, week3Bot, week4Bot]).not.toContain(after[2]!.id);
    for (const gone of [week3Bot, week4Bot]) {
      expect((await server.api.get(`/v1/bots/${gone}`, { token: user.token })).status).toBe(404);
    }
    expect((await calendarWebhooks()).at(-1)).toEqual({
      event: "calendar.synced",
      data: { calendarId, added: 1, changed: 1, removed: 2 },
    });
  });

  test("a feed that cannot be read fails its sync (calendar.sync_failed, once) and loses nothing", async () => {
    const before = { events: await events(calendarId), bots: await scheduledBots() };
    const webhooksBefore = (await calendarWebhooks()).length;

    feed.serve({ status: 500, body: "upstream trouble" });
    const failed = await sync(calendarId);
    expect(failed).toMatchObject({ added: 0, changed: 0, removed: 0 });
    expect(failed.calendar).toMatchObject({
      lastSyncStatus: "failed",
      lastSyncError: "the feed's server answered 500",
    });
    feed.serve({
      body: icsFeed([plain]).replace("END:VCALENDAR", `X-PAD:${"x".repeat(70 * 1024)}\r\nEND:VCALENDAR`),
    });
    expect((await sync(calendarId)).calendar.lastSyncError).toBe("the feed is larger than 65536 bytes");
    feed.serve({ body: "<html>this is not a calendar</html>" });
    expect((await sync(calendarId)).calendar.lastSyncError).toMatch(
      /^the feed could not be read|^not an iCalendar feed/,
    );

    expect(await events(calendarId)).toEqual(before.events);
    expect(await scheduledBots()).toEqual(before.bots);
    // One webhook for the outage, not one per failed sync.
    const sent = (await calendarWebhooks()).slice(webhooksBefore);
    expect(sent).toEqual([
      { event: "calendar.sync_failed", data: { calendarId, error: "the feed's server answered 500" } },
    ]);
    // The feed's address is a secret: in no answer and no webhook, only its host.
    const secretPath = new URL(feed.url).pathname;
    const answers = JSON.stringify([
      await server.api.get(`/v1/calendars/${calendarId}`, { token: user.token }),
      await server.api.get("/v1/calendars", { token: user.token }),
      await calendarWebhooks(),
    ]);
    expect(answers).not.toContain(secretPath);
    expect(answers).not.toContain("secret-3f9a1c");

    feed.serve({ body: icsFeed([{ ...plain, start: saoPaulo(0, 14), end: saoPaulo(0, 15) }]) });
    const back = await sync(calendarId);
    expect(back.calendar).toMatchObject({ lastSyncStatus: "ok", lastSyncError: null });
  });

  test("a bot already deployed stays; an event moved after it was gets a new bot", async () => {
    const [event] = await events(calendarId);
    const deployed = event!.botId!;
    expect((await server.api.post(`/v1/bots/${deployed}/deploy`, { token: user.token })).status).toBe(200);
    feed.serve({ body: icsFeed([{ ...plain, start: saoPaulo(0, 16), end: saoPaulo(0, 17) }]) });
    expect(await sync(calendarId)).toMatchObject({ changed: 1 });
    const [moved] = await events(calendarId);
    expect(moved).toMatchObject({ start: iso(at(0, 16)), botStatus: "READY_TO_DEPLOY" });
    expect(moved!.botId).not.toBe(deployed);
    expect((await server.api.get(`/v1/bots/${deployed}`, { token: user.token })).body.status).toBe(
      "DEPLOYING",
    );
    // Back at its time: its new bot moves back with it.
    feed.serve({ body: icsFeed([{ ...plain, start: saoPaulo(0, 14), end: saoPaulo(0, 15) }]) });
    await sync(calendarId);
    expect(await events(calendarId)).toMatchObject([{ start: iso(at(0, 14)), botId: moved!.botId }]);
  });

  test("an event's scheduled bot deleted with DELETE /v1/bots/{id} stays away: the event's bot is taken away", async () => {
    const kept = { ...plain, start: saoPaulo(0, 14), end: saoPaulo(0, 15) };
    const retro = {
      uid: "retro@test",
      summary: "Retro",
      start: saoPaulo(2, 10),
      end: saoPaulo(2, 11),
      location: MEET,
    };
    feed.serve({ body: icsFeed([kept, { ...retro, tzid: "America/Sao_Paulo" }]) });
    await sync(calendarId);
    const event = (await events(calendarId)).find((e) => e.uid === "retro@test")!;
    expect(event).toMatchObject({ bot: "auto", botStatus: "READY_TO_DEPLOY" });
    expect((await server.api.delete(`/v1/bots/${event.botId}`, { token: user.token })).status).toBe(204);
    // Taken away at once, and it holds through a sync.
    expect((await events(calendarId)).find((e) => e.uid === "retro@test")).toMatchObject({
      bot: "removed",
      botId: null,
    });
    await sync(calendarId);
    const after = await events(calendarId);
    expect(after.find((e) => e.uid === "retro@test")).toMatchObject({ bot: "removed", botId: null });
    // The other event keeps its bot.
    expect(after.find((e) => e.uid === "plain@test")).toMatchObject({
      bot: "auto",
      botStatus: "READY_TO_DEPLOY",
    });
    feed.serve({ body: icsFeed([kept]) });
    await sync(calendarId);
  });

  test("one meeting in two feeds gets one bot; bots by hand; deleting a feed deletes its scheduled bots", async () => {
    const otherFeed = await startFeedServer("/other/feed.ics");
    try {
      // The same meeting under another UID, as a colleague's calendar exports it.
      otherFeed.serve({
        body: icsFeed([{ ...plain, uid: OUTLOOK_UID, start: saoPaulo(0, 14), end: saoPaulo(0, 15) }, weekly]),
      });
      const other = await addCalendar(otherFeed.url, { name: "Colleague", autoJoin: "none" });
      expect(await sync(other)).toMatchObject({ added: 4 });
      const listed = await events(other);
      expect(listed.every((e) => e.botId === null)).toBe(true);

      // By hand: a recurring event's instance needs its recurrenceId.
      const weekUrl = `/v1/calendars/${other}/events/${encodeURIComponent("weekly@test")}/bot` as const;
      const unnamed = await server.api.post(weekUrl, { token: user.token });
      expect(unnamed.status).toBe(422);
      expect(validationIssues(unnamed.body)[0]?.loc).toEqual(["query", "recurrenceId"]);
      const instance = listed.find((e) => e.uid === "weekly@test" && e.start === iso(at(22, 3.5)))!;
      const addedByHand = await server.api.post(`${weekUrl}?recurrenceId=${instance.recurrenceId}`, {
        token: user.token,
      });
      expect(addedByHand.status).toBe(200);
      expect(addedByHand.body).toMatchObject({ bot: "added", botStatus: "READY_TO_DEPLOY" });
      // The colleague's copy of the design review, added by hand, shares the first feed's bot.
      const copy = await server.api.post(
        `/v1/calendars/${other}/events/${encodeURIComponent(OUTLOOK_UID)}/bot`,
        { token: user.token },
      );
      const firstFeedPlain = (await events(calendarId)).find((e) => e.uid === "plain@test")!;
      expect(copy.body.botId).toBe(firstFeedPlain.botId);
      // Kept through a sync.
      await sync(other);
      expect((await events(other)).filter((e) => e.botId !== null).map((e) => e.botId)).toEqual([
        firstFeedPlain.botId,
        addedByHand.body.botId,
      ]);

      // Two feeds synced at the same moment may each have made a bot: a later sync keeps the oldest.
      const twin = await server.api.post("/v1/bots", {
        token: user.token,
        body: {
          meetingInfo: { platform: "google", meetingUrl: MEET },
          meetingTitle: "Design review",
          joinAt: iso(at(0, 14)),
        },
      });
      const db = await openServerDatabase(server);
      try {
        await db.kysely
          .updateTable("calendar_events")
          .set({ bot_id: twin.body.id })
          .where("calendar_id", "=", other)
          .where("uid", "=", OUTLOOK_UID)
          .execute();
      } finally {
        await db.close();
      }
      await sync(other);
      expect((await events(other)).find((e) => e.uid === OUTLOOK_UID)!.botId).toBe(firstFeedPlain.botId);
      expect((await server.api.get(`/v1/bots/${twin.body.id}`, { token: user.token })).status).toBe(404);

      // Removed by hand: the bot only this event had is deleted, and stays away.
      const removed = await server.api.delete(`${weekUrl}?recurrenceId=${instance.recurrenceId}`, {
        token: user.token,
      });
      expect(removed.body).toMatchObject({ bot: "removed", botId: null });
      expect((await server.api.get(`/v1/bots/${addedByHand.body.botId}`, { token: user.token })).status).toBe(
        404,
      );

      // Deleting the first feed keeps the shared bot (the colleague's event has it) and deletes the rest.
      const firstBots = (await events(calendarId)).map((e) => e.botId);
      expect((await server.api.delete(`/v1/calendars/${calendarId}`, { token: user.token })).status).toBe(
        204,
      );
      expect((await scheduledBots()).map((bot) => bot.id)).toEqual([firstFeedPlain.botId]);
      expect(firstBots).toContain(firstFeedPlain.botId);
      expect((await server.api.get(`/v1/calendars/${calendarId}`, { token: user.token })).status).toBe(404);
    } finally {
      await otherFeed.close();
    }
  });

  test("checks what it is given and claims each feed once", async () => {
    const bad = await server.api.post("/v1/calendars", {
      token: user.token,
      body: { name: "x", url: "ftp://example.com/cal.ics", autoJoin: "all" },
    });
    expect(bad.status).toBe(422);
    expect(validationIssues(bad.body)[0]?.loc).toEqual(["body", "url"]);
    const metadata = await server.api.post("/v1/calendars", {
      token: user.token,
      body: { name: "x", url: "http://169.254.169.254/latest/cal.ics", autoJoin: "all" },
    });
    expect(metadata.status).toBe(422);
    const stranger = await registerUser(server.api);
    const mine = defined(
      (await server.api.get("/v1/calendars", { token: user.token })).body.calendars[0],
      "the calendar",
    );
    expect((await server.api.get(`/v1/calendars/${mine.id}`, { token: stranger.token })).status).toBe(404);

    // Two claims at the same time (two server processes): one gets the due feed.
    const db = await openServerDatabase(server);
    try {
      await db.kysely
        .updateTable("calendars")
        .set({ next_sync_at: new Date(0).toISOString() })
        .execute();
      const opts = { now: new Date(), limit: 10, leaseMs: CALENDAR_SYNC_LEASE_MS };
      const claims = await Promise.all([
        claimDueSyncs(db.kysely, db.dialect, opts),
        claimDueSyncs(db.kysely, db.dialect, opts),
      ]);
      expect(claims.flat().map((claim) => claim.id)).toEqual([mine.id]);
      // While claimed, a sync by hand is refused.
      expect((await server.api.post(`/v1/calendars/${mine.id}/sync`, { token: user.token })).status).toBe(
        409,
      );
    } finally {
      await db.close();
    }
  });
});

describe("feed addresses and MEETBOT_SECRET_KEY", () => {
  test("are held to the webhooks' address rules, need the key, rotate like bot-account sessions; a worker syncs a due feed by itself", async () => {
    const K1 = randomBytes(32).toString("base64");
    const K2 = randomBytes(32).toString("base64");
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-calendar-keys-"));
    const start = (key: string | undefined, worker = false, privateTargets = true) =>
      startTestServer({
        dataDir,
        logLevel: "error",
        calendars: { worker, pollIntervalMs: 20 },
        env: {
          MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: privateTargets ? "1" : "0",
          ...(key === undefined ? {} : { MEETBOT_SECRET_KEY: key }),
        },
      });
    const keyIds = async (s: TestServer) => {
      const db = await openServerDatabase(s);
      try {
        const rows = await db.kysely.selectFrom("calendars").select("url_sealed").execute();
        return rows.map((r) => (JSON.parse(r.url_sealed) as { keyId: string }).keyId);
      } finally {
        await db.close();
      }
    };
    try {
      // A server as in production: the webhooks' address rules refuse the feed on 127.0.0.1, and
      // without MEETBOT_SECRET_KEY no address can be stored.
      const production = await start(undefined, false, false);
      const owner = await registerUser(production.api);
      const add = (url: string) =>
        production.api.post("/v1/calendars", {
          token: owner.token,
          body: { name: "Work", url, autoJoin: "all" },
        });
      const loopback = await add(feed.url);
      expect(loopback.status).toBe(422);
      expect(validationIssues(loopback.body)[0]).toMatchObject({
        loc: ["body", "url"],
        msg: expect.stringMatching(/loopback/),
      });
      const noKey = await add("webcal://calendar.example.com/ical/secret/basic.ics");
      expect(noKey.status).toBe(422);
      expect(validationIssues(noKey.body)[0]?.msg).toMatch(/MEETBOT_SECRET_KEY/);
      await production.close();

      const first = await start(`k1:${K1}`);
      const created = await first.api.post("/v1/calendars", {
        token: owner.token,
        body: { name: "Work", url: feed.url, autoJoin: "all" },
      });
      expect(created.status).toBe(201);
      await first.close();
      const keyless = await start(undefined).catch((err: unknown) => err);
      expect(keyless).toBeInstanceOf(StartupError);
      expect((keyless as Error).message).toMatch(
        /MEETBOT_SECRET_KEY is not set, but 1 calendar feed address/,
      );

      const rotated = await start(`k2:${K2},k1:${K1}`);
      expect(await keyIds(rotated)).toEqual(["k2"]);
      await rotated.close();
      // The old key can go: the address opens under k2 alone, and the worker reads the due feed.
      feed.serve({ body: icsFeed([plain]) });
      const after = await start(`k2:${K2}`, true);
      try {
        const synced = await vi.waitFor(
          async () => {
            const calendar = await after.api.get(`/v1/calendars/${created.body.id}`, { token: owner.token });
            if (calendar.body.lastSyncStatus === "pending") throw new Error("the sync is still pending");
            return calendar.body;
          },
          { timeout: 10_000, interval: 20 },
        );
        expect(synced).toMatchObject({ lastSyncStatus: "ok", lastSyncError: null });
        const listed = await after.api.get(`/v1/calendars/${created.body.id}/events`, { token: owner.token });
        expect(listed.body.events.map((e: EventAnswer) => e.uid)).toEqual(["plain@test"]);
      } finally {
        await after.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await (await testDatabaseFor(dataDir))?.drop();
    }
  });
});
