import { randomBytes } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { Sealed, SecretBox } from "../auth/secret-box.js";
import type { CalendarConfig } from "../config.js";
import { parseJson, toIso } from "../db/database.js";
import type { CalendarEventRow, CalendarRow, Database, DialectName } from "../db/schema.js";
import { PollingWorker } from "../durable/polling-worker.js";
import { StartupError } from "../startup-error.js";
import type { WakeSignal } from "../wake-signal.js";
import type { OutboundClient } from "../webhooks/outbound.js";
import { enqueueUserEvents } from "../webhooks/outbox.js";
import type { CalendarBots } from "./calendar-bots.js";
import { readFeed } from "./calendar-feed.js";
import type { ServiceContext } from "./context.js";
import { findMeetingLink } from "./meeting-links.js";

/**
 * Calendar syncs: one durable task on the polling worker, its rows the calendars. A calendar is
 * due at next_sync_at; the claim is a conditional UPDATE with a lease (FOR UPDATE SKIP LOCKED on
 * PostgreSQL), so however many server processes run, a feed is read once per interval. A sync
 * reads the feed (the webhooks' address rules, a size and time limit), keeps the events with a
 * meeting link from now to SYNC_WINDOW_MS ahead, writes what changed and brings each event's bot in
 * line (calendar-bots.ts). A feed that cannot be read or parsed changes nothing but the calendar's
 * last sync status: no event and no bot is lost to a feed that is down.
 */

/** Events this far ahead are read. */
export const SYNC_WINDOW_MS = 28 * 24 * 60 * 60 * 1000;
/** A claim not finished within this long (its process died) is taken again: more than a fetch's timeouts. */
export const CALENDAR_SYNC_LEASE_MS = 300_000;

/** A sync's error as the calendar and its webhook show it, at most. */
const MAX_ERROR_CHARS = 500;

export interface ClaimedSync {
  id: number;
  sync_claim_token: string;
}

export interface SyncCounts {
  added: number;
  changed: number;
  removed: number;
}

/** Claims up to `limit` calendars due at `now` (or just `calendarId`, due or not), the longest due first. */
export async function claimDueSyncs(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; leaseMs: number; calendarId?: number },
): Promise<ClaimedSync[]> {
  const now = toIso(opts.now);
  const rows = await db
    .updateTable("calendars")
    .set({
      sync_claim_token: randomBytes(12).toString("hex"),
      sync_lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
    })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("calendars as c")
        .select("c.id")
        // Checked on the row itself too: PostgreSQL re-checks it on a row another process claimed.
        .where(sql<boolean>`(c.sync_lease_until is null or c.sync_lease_until <= ${now})`)
        .$if(opts.calendarId === undefined, (qb) => qb.where("c.next_sync_at", "<=", now))
        .$if(opts.calendarId !== undefined, (qb) => qb.where("c.id", "=", opts.calendarId as number))
        .orderBy("c.next_sync_at")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returning(["id", "sync_claim_token"])
    .execute();
  return rows as ClaimedSync[];
}

/** The feed address's additional data: sealed for one user, it opens for no other. */
export const feedUrlAdditionalData = (userId: number) => `meetbot calendar feed; user ${userId}`;

/** A webcal address is the https one (as calendar programs read it). */
export function fetchableUrl(url: string): string {
  return url.replace(/^webcal(s?):\/\//i, "https://");
}

export class CalendarSync {
  readonly worker: PollingWorker<ClaimedSync>;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly settings: CalendarConfig,
    private readonly box: SecretBox,
    /** Reads feeds by the webhooks' address rules, at most settings.maxFeedBytes. */
    private readonly client: OutboundClient,
    private readonly calendarBots: CalendarBots,
    wake: WakeSignal,
  ) {
    this.worker = new PollingWorker({
      name: "calendar sync worker",
      log: ctx.log,
      claim: (limit) =>
        claimDueSyncs(ctx.db, ctx.dialect, { now: ctx.now(), limit, leaseMs: CALENDAR_SYNC_LEASE_MS }),
      run: async (claimed) => {
        await this.sync(claimed);
      },
      // Fetches are I/O: a few at once.
      concurrency: 4,
      pollIntervalMs: settings.pollIntervalMs,
      signal: wake,
    });
  }

  /** Stops the worker, then aborts feeds still being read. */
  async stop(): Promise<void> {
    await this.worker.stop();
    await this.client.close();
  }

  /**
   * Syncs one claimed calendar, while the claim is its own: the counts, or the reason it failed.
   * Null when the claim was no longer the calendar's (deleted, or taken over).
   */
  async sync(claimed: ClaimedSync): Promise<(SyncCounts & { error: null }) | { error: string } | null> {
    const calendar = await this.ctx.db
      .selectFrom("calendars")
      .selectAll()
      .where("id", "=", claimed.id)
      .where("sync_claim_token", "=", claimed.sync_claim_token)
      .executeTakeFirst();
    if (!calendar) return null;
    const now = this.ctx.now();
    const feed = await this.read(calendar, now);
    if ("error" in feed) {
      // A parser's message may quote the feed at length.
      feed.error =
        feed.error.length > MAX_ERROR_CHARS ? `${feed.error.slice(0, MAX_ERROR_CHARS)}…` : feed.error;
      await this.finish(calendar, claimed, { error: feed.error });
      // Says why in the server log too, with the host only: the address is a secret.
      this.ctx.log.warn(
        { calendarId: calendar.id, host: calendar.url_host, reason: feed.error },
        "calendar sync failed",
      );
      return { error: feed.error };
    }
    const counts = await this.apply(calendar, feed.events, now);
    await this.finish(calendar, claimed, counts);
    return { ...counts, error: null };
  }

  /** The feed's events with a meeting link in the window, or why they could not be read. */
  private async read(
    calendar: CalendarRow,
    now: Date,
  ): Promise<{ events: WantedEvent[] } | { error: string }> {
    let url: string;
    try {
      url = this.box.open(parseJson<Sealed>(calendar.url_sealed), feedUrlAdditionalData(calendar.user_id));
    } catch (err) {
      return { error: `the feed's address could not be decrypted: ${(err as Error).message}` };
    }
    const answer = await this.client.get(fetchableUrl(url), {
      accept: "text/calendar, */*;q=0.5",
      "user-agent": "meetbot calendar sync",
    });
    if (!answer.ok) return { error: `the feed could not be fetched (${answer.error}): ${answer.message}` };
    if (answer.statusCode < 200 || answer.statusCode > 299) {
      const redirect =
        answer.statusCode >= 300 && answer.statusCode < 400 ? " (redirects are not followed)" : "";
      return { error: `the feed's server answered ${answer.statusCode}${redirect}` };
    }
    if (answer.truncated) return { error: `the feed is larger than ${this.settings.maxFeedBytes} bytes` };
    try {
      const instances = readFeed(answer.responseBody, {
        from: now,
        to: new Date(now.getTime() + SYNC_WINDOW_MS),
      });
      const events: WantedEvent[] = [];
      for (const instance of instances) {
        const link = findMeetingLink(instance.texts);
        if (!link) continue;
        events.push({
          uid: instance.uid.slice(0, 500),
          recurrence_id: instance.recurrenceId,
          title: (instance.title || calendar.name).slice(0, 300),
          start_at: toIso(instance.start),
          end_at: toIso(instance.end),
          meeting_info: JSON.stringify(link.meetingInfo),
          meeting_key: link.key.slice(0, 500),
        });
      }
      return { events };
    } catch (err) {
      // ical.js throws plain errors for text it cannot parse (a broken RRULE, a bad date).
      return { error: `the feed could not be read: ${(err as Error).message}` };
    }
  }

  /** Writes the feed's events over the stored ones, then brings every event's bot in line. */
  private async apply(calendar: CalendarRow, wanted: WantedEvent[], now: Date): Promise<SyncCounts> {
    const nowIso = toIso(now);
    const stored = await this.ctx.db
      .selectFrom("calendar_events")
      .selectAll()
      .where("calendar_id", "=", calendar.id)
      .execute();
    const byInstance = new Map(stored.map((row) => [instanceKey(row), row]));
    const counts: SyncCounts = { added: 0, changed: 0, removed: 0 };
    for (const event of wanted) {
      const row = byInstance.get(instanceKey(event));
      byInstance.delete(instanceKey(event));
      if (!row) {
        await this.ctx.db
          .insertInto("calendar_events")
          .values({
            ...event,
            calendar_id: calendar.id,
            user_id: calendar.user_id,
            bot_mode: "auto",
            bot_id: null,
            created_at: nowIso,
            updated_at: nowIso,
          })
          .execute();
        counts.added++;
      } else if (EVENT_FIELDS.some((field) => row[field] !== event[field])) {
        await this.ctx.db
          .updateTable("calendar_events")
          .set({ ...event, updated_at: nowIso })
          .where("id", "=", row.id)
          .execute();
        counts.changed++;
      }
    }
    for (const gone of byInstance.values()) {
      // An event that ended simply leaves the list; its bot did (or missed) its work.
      const ended = gone.end_at <= nowIso;
      if (!ended) counts.removed++;
      if (!ended && gone.bot_id !== null) await this.calendarBots.letGo(gone, gone.bot_id);
      await this.ctx.db.deleteFrom("calendar_events").where("id", "=", gone.id).execute();
    }
    const current = await this.ctx.db
      .selectFrom("calendar_events")
      .selectAll()
      .where("calendar_id", "=", calendar.id)
      .orderBy("start_at")
      .execute();
    for (const event of current) await this.calendarBots.reconcile(calendar, event);
    return counts;
  }

  /**
   * The calendar's last sync, its next, and its webhook, while the claim is its own: calendar.synced
   * when the sync changed something, calendar.sync_failed when it failed after one that did not
   * (once per outage, not every interval).
   */
  private async finish(
    calendar: CalendarRow,
    claimed: ClaimedSync,
    outcome: SyncCounts | { error: string },
  ): Promise<void> {
    const now = this.ctx.now();
    const nowIso = toIso(now);
    const error = "error" in outcome ? outcome.error : null;
    const queued = await this.ctx.db.transaction().execute(async (trx) => {
      const done = await trx
        .updateTable("calendars")
        .set({
          last_sync_at: nowIso,
          last_sync_error: error,
          ...(error === null ? { last_synced_at: nowIso } : {}),
          next_sync_at: toIso(new Date(now.getTime() + this.settings.syncIntervalMs)),
          sync_claim_token: null,
          sync_lease_until: null,
        })
        .where("id", "=", calendar.id)
        .where("sync_claim_token", "=", claimed.sync_claim_token)
        .executeTakeFirst();
      if (Number(done.numUpdatedRows) === 0) return 0;
      const webhook =
        error !== null
          ? calendar.last_sync_error === null
            ? { event: "calendar.sync_failed" as const, data: { calendarId: calendar.id, error } }
            : null
          : "added" in outcome && outcome.added + outcome.changed + outcome.removed > 0
            ? { event: "calendar.synced" as const, data: { calendarId: calendar.id, ...outcome } }
            : null;
      return webhook ? enqueueUserEvents(trx, calendar.user_id, null, [webhook], nowIso, nowIso) : 0;
    });
    if (queued > 0) this.ctx.outbox.notify();
  }
}

/** A feed event as the calendar_events row it makes. */
type WantedEvent = Pick<
  CalendarEventRow,
  "uid" | "recurrence_id" | "title" | "start_at" | "end_at" | "meeting_info" | "meeting_key"
>;

/** What makes an event changed. */
const EVENT_FIELDS = ["title", "start_at", "end_at", "meeting_info", "meeting_key"] as const;

const instanceKey = (event: Pick<CalendarEventRow, "uid" | "recurrence_id">) =>
  `${event.uid}\n${event.recurrence_id}`;

/**
 * At startup, beside the bot-account sessions and audio-stream tokens and by the same rules:
 * refuses to run when feed addresses are stored and MEETBOT_SECRET_KEY lacks a key they were
 * sealed with, then rewrites every address sealed with another key under the first one (key
 * rotation). Returns how many were rewritten.
 */
export async function prepareCalendarUrls(db: Kysely<Database>, box: SecretBox): Promise<number> {
  const rows = await db.selectFrom("calendars").select(["id", "user_id", "url_sealed"]).execute();
  if (rows.length === 0) return 0;
  if (!box.configured)
    throw new StartupError(
      `MEETBOT_SECRET_KEY is not set, but ${rows.length} calendar feed address(es) are stored encrypted: set the key they were stored with`,
    );
  let resealed = 0;
  for (const row of rows) {
    const sealed = parseJson<Sealed>(row.url_sealed);
    if (sealed.keyId === box.currentKeyId) continue;
    if (!box.has(sealed.keyId))
      throw new StartupError(
        `MEETBOT_SECRET_KEY has no key with id "${sealed.keyId}", which calendar ${row.id}'s feed address is encrypted with: add it as <id>:<base64>`,
      );
    const aad = feedUrlAdditionalData(row.user_id);
    let url: string;
    try {
      url = box.open(sealed, aad);
    } catch (err) {
      throw new StartupError(`calendar ${row.id}'s feed address: ${(err as Error).message}`);
    }
    // Only if no other process changed it meanwhile.
    const result = await db
      .updateTable("calendars")
      .set({ url_sealed: JSON.stringify(box.seal(url, aad)) })
      .where("id", "=", row.id)
      .where("url_sealed", "=", row.url_sealed)
      .executeTakeFirst();
    resealed += Number(result.numUpdatedRows);
  }
  return resealed;
}
