import ICAL from "ical.js";

/**
 * An iCalendar feed (RFC 5545) read with ical.js into the event instances of a time window:
 * recurring events expanded (RRULE, RDATE, EXDATE), overridden instances (a VEVENT with the
 * series' UID and a RECURRENCE-ID) in place of the ones they override, cancelled events and
 * instances (STATUS:CANCELLED) left out. Times are resolved with the feed's own VTIMEZONE
 * definitions; a TZID the feed does not define is looked up as an IANA name; a floating time (no
 * zone at all) is taken as UTC. All-day events (DATE values) are left out: a bot joins at a time.
 */
export interface FeedInstance {
  uid: string;
  /** The instance's original start (RECURRENCE-ID) as ISO 8601 UTC; "" for an event that does not recur. */
  recurrenceId: string;
  title: string;
  start: Date;
  end: Date;
  /** Where a meeting link may be: conference fields first, then location, URL, description. */
  texts: string[];
}

/** Whatever the feed, no more instances than this are read from it (a minutely rule, say). */
export const MAX_FEED_INSTANCES = 5000;
/** Occurrences stepped through per recurring event before the window ends, at most. */
const MAX_STEPS_PER_SERIES = 100_000;

export class FeedError extends Error {}

/** The feed's instances that overlap [from, to); throws FeedError for a text that is not iCalendar. */
export function readFeed(text: string, window: { from: Date; to: Date }): FeedInstance[] {
  let root: ICAL.Component;
  try {
    root = new ICAL.Component(ICAL.parse(text) as unknown[]);
  } catch (err) {
    throw new FeedError(`not an iCalendar feed: ${(err as Error).message}`);
  }
  if (root.name !== "vcalendar")
    throw new FeedError(`not an iCalendar feed: its top component is ${root.name}`);
  const byUid = new Map<string, { master?: ICAL.Component; overrides: ICAL.Component[] }>();
  for (const vevent of root.getAllSubcomponents("vevent")) {
    const uid = String(vevent.getFirstPropertyValue("uid") ?? "");
    if (!uid) continue;
    const entry = byUid.get(uid) ?? { overrides: [] };
    if (vevent.hasProperty("recurrence-id")) entry.overrides.push(vevent);
    else entry.master = vevent;
    byUid.set(uid, entry);
  }
  const found: FeedInstance[] = [];
  const add = (instance: FeedInstance | null) => {
    if (!instance || instance.end <= window.from || instance.start >= window.to) return;
    if (found.length >= MAX_FEED_INSTANCES)
      throw new FeedError(`the feed has more than ${MAX_FEED_INSTANCES} events in the next weeks`);
    found.push(instance);
  };
  for (const [uid, { master, overrides }] of byUid) {
    try {
      readEvent(uid, master, overrides, window, add);
    } catch (err) {
      if (err instanceof FeedError) throw err;
      // One event ical.js cannot read (a broken RRULE, a bad date) is left out, not the whole feed.
    }
  }
  return found.sort((a, b) => a.start.getTime() - b.start.getTime() || a.uid.localeCompare(b.uid));
}

function readEvent(
  uid: string,
  master: ICAL.Component | undefined,
  overrides: ICAL.Component[],
  window: { from: Date; to: Date },
  add: (instance: FeedInstance | null) => void,
): void {
  if (!master) {
    // Overrides of a series the feed does not carry (a single invited instance): each on its own.
    for (const override of overrides) add(instanceOf(uid, override, override, null));
    return;
  }
  // Exceptions related by UID only: ical.js would otherwise take every override in the feed.
  const event = new ICAL.Event(master, { strictExceptions: true, exceptions: overrides });
  if (!event.isRecurring()) add(instanceOf(uid, master, master, null));
  else expandSeries(uid, event, window, add);
}

function expandSeries(
  uid: string,
  event: ICAL.Event,
  window: { from: Date; to: Date },
  add: (instance: FeedInstance | null) => void,
): void {
  if (event.startDate.isDate) return;
  const seen = new Set<string>();
  const expansion = event.iterator();
  for (let steps = 0; steps < MAX_STEPS_PER_SERIES; steps++) {
    const next = expansion.next();
    if (!next) break;
    const original = instantOf(next, event.component, "dtstart");
    if (original >= window.to) break;
    const details = event.getOccurrenceDetails(next);
    const recurrenceId = original.toISOString();
    seen.add(recurrenceId);
    const item = details.item as ICAL.Event;
    if (item.component === event.component) {
      const duration = durationMs(event);
      add(base(uid, recurrenceId, event.component, original, new Date(original.getTime() + duration), item));
    } else add(instanceOf(uid, item.component, event.component, recurrenceId));
  }
  // An instance moved into the window from a time past its end (the expansion stopped before it).
  for (const exception of Object.values(event.exceptions) as ICAL.Event[]) {
    const id = instantOf(exception.recurrenceId, exception.component, "recurrence-id").toISOString();
    if (!seen.has(id)) add(instanceOf(uid, exception.component, event.component, id));
  }
}

/** One instance from a VEVENT (an event, or an override); null when cancelled or all-day. */
function instanceOf(
  uid: string,
  vevent: ICAL.Component,
  series: ICAL.Component,
  recurrenceId: string | null,
): FeedInstance | null {
  const event = new ICAL.Event(vevent);
  if (!event.startDate || event.startDate.isDate) return null;
  const start = instantOf(event.startDate, vevent, "dtstart");
  const end = new Date(start.getTime() + durationMs(event));
  const id =
    recurrenceId ??
    (vevent.hasProperty("recurrence-id")
      ? instantOf(event.recurrenceId, vevent, "recurrence-id").toISOString()
      : "");
  return base(uid, id, series, start, end, event, vevent);
}

function base(
  uid: string,
  recurrenceId: string,
  series: ICAL.Component,
  start: Date,
  end: Date,
  event: ICAL.Event,
  own: ICAL.Component = series,
): FeedInstance | null {
  const cancelled = (c: ICAL.Component) =>
    String(c.getFirstPropertyValue("status") ?? "").toUpperCase() === "CANCELLED";
  if (cancelled(own) || cancelled(series)) return null;
  return {
    uid,
    recurrenceId,
    title: String(event.summary ?? "").trim(),
    start,
    end,
    texts: [...meetingTexts(own), ...(own === series ? [] : meetingTexts(series))],
  };
}

/** An event's length: DTEND − DTSTART, or DURATION; none given: 0 (RFC 5545 3.6.1). */
function durationMs(event: ICAL.Event): number {
  const ms = event.duration ? event.duration.toSeconds() * 1000 : 0;
  return Math.max(0, ms);
}

/** The texts a meeting link may be in, in the order they are trusted. */
function meetingTexts(vevent: ICAL.Component): string[] {
  const names = [
    "conference",
    "x-google-conference",
    "x-microsoft-skypeteamsmeetingurl",
    "x-microsoft-onlinemeetingconflink",
    "location",
    "url",
    "description",
    "x-alt-desc",
  ];
  const texts: string[] = [];
  for (const name of names) {
    for (const property of vevent.getAllProperties(name)) {
      for (const value of property.getValues()) if (typeof value === "string") texts.push(value);
    }
  }
  return texts;
}

/**
 * The instant a time names. A zone the feed defines was resolved by ical.js; a TZID it does not
 * define is an IANA name or nothing we know (then UTC), as is a floating time.
 */
function instantOf(time: ICAL.Time, vevent: ICAL.Component, property: string): Date {
  const zone = time.zone?.tzid;
  if (zone && zone !== "floating") return time.toJSDate();
  const tzid = vevent.getFirstProperty(property)?.getParameter("tzid");
  const wall = Date.UTC(time.year, time.month - 1, time.day, time.hour, time.minute, time.second);
  const name = typeof tzid === "string" ? tzid : undefined;
  return new Date(wall - (name ? ianaOffsetMs(name, wall) : 0));
}

/**
 * The UTC offset of IANA zone `name` at wall-clock time `wall` (as if UTC); 0 for a name Intl does
 * not know. Two rounds settle a wall time near a daylight-saving change.
 */
function ianaOffsetMs(name: string, wall: number): number {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: name,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
  } catch {
    return 0;
  }
  const offsetAt = (instant: number) => {
    const parts = Object.fromEntries(format.formatToParts(instant).map((p) => [p.type, Number(p.value)]));
    const asUtc = Date.UTC(
      parts.year!,
      parts.month! - 1,
      parts.day!,
      parts.hour!,
      parts.minute!,
      parts.second!,
    );
    return asUtc - instant;
  };
  const first = offsetAt(wall);
  return offsetAt(wall - first);
}
