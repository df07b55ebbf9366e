import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * iCalendar feeds for tests, written as calendar programs export them (CRLF lines, VTIMEZONE
 * blocks, escaped text), and a real HTTP server on 127.0.0.1 that serves whatever the test sets,
 * under a secret path as a real feed address has.
 */
export interface FeedEvent {
  uid: string;
  summary?: string;
  /** Wall-clock "YYYYMMDDTHHMMSS" in `tzid`, or "…Z" for UTC. */
  start: string;
  end: string;
  tzid?: string;
  location?: string;
  description?: string;
  rrule?: string;
  /** Wall-clock times in `tzid` (or …Z). */
  exdates?: string[];
  /** An override: the instance it replaces, as a wall-clock time in `tzid` (or …Z). */
  recurrenceId?: string;
  status?: "CONFIRMED" | "CANCELLED";
}

/** A zone with no daylight saving, +05:30: the expected UTC times are plain arithmetic. */
export const KOLKATA_VTIMEZONE = [
  "BEGIN:VTIMEZONE",
  "TZID:Asia/Kolkata",
  "BEGIN:STANDARD",
  "DTSTART:19700101T000000",
  "TZOFFSETFROM:+0530",
  "TZOFFSETTO:+0530",
  "TZNAME:IST",
  "END:STANDARD",
  "END:VTIMEZONE",
];

const escapeText = (text: string) =>
  text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/,/g, "\\,").replace(/;/g, "\\;");

const timeProp = (name: string, value: string, tzid: string | undefined) =>
  value.endsWith("Z") || !tzid ? `${name}:${value}` : `${name};TZID=${tzid}:${value}`;

/** Long lines folded at 75 octets, as RFC 5545 asks (ASCII here). */
function fold(line: string): string {
  const parts: string[] = [];
  for (let i = 0; i < line.length; i += i === 0 ? 75 : 74) parts.push(line.slice(i, i + (i === 0 ? 75 : 74)));
  return parts.join("\r\n ");
}

export function icsFeed(events: FeedEvent[], timezones: string[][] = [KOLKATA_VTIMEZONE]): string {
  const lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//meetbot tests//EN", "CALSCALE:GREGORIAN"];
  for (const zone of timezones) lines.push(...zone);
  for (const event of events) {
    lines.push("BEGIN:VEVENT", `UID:${event.uid}`, "DTSTAMP:20260101T000000Z");
    lines.push(timeProp("DTSTART", event.start, event.tzid), timeProp("DTEND", event.end, event.tzid));
    if (event.recurrenceId) lines.push(timeProp("RECURRENCE-ID", event.recurrenceId, event.tzid));
    if (event.summary !== undefined) lines.push(`SUMMARY:${escapeText(event.summary)}`);
    if (event.location) lines.push(`LOCATION:${escapeText(event.location)}`);
    if (event.description) lines.push(`DESCRIPTION:${escapeText(event.description)}`);
    if (event.rrule) lines.push(`RRULE:${event.rrule}`);
    for (const exdate of event.exdates ?? []) lines.push(timeProp("EXDATE", exdate, event.tzid));
    if (event.status) lines.push(`STATUS:${event.status}`);
    lines.push("END:VEVENT");
  }
  lines.push("END:VCALENDAR");
  return `${lines.map(fold).join("\r\n")}\r\n`;
}

/** "YYYYMMDDTHHMMSS" of `date` as wall-clock at UTC offset `offsetMinutes`. */
export function wallClock(date: Date, offsetMinutes = 0): string {
  return new Date(date.getTime() + offsetMinutes * 60_000)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "");
}

export interface FeedServer {
  /** The feed's secret address. */
  url: string;
  /** What the next requests get. */
  serve(answer: { status?: number; body: string }): void;
  requests: number;
  close(): Promise<void>;
}

export async function startFeedServer(
  secretPath = "/calendar/ical/secret-3f9a1c/basic.ics",
): Promise<FeedServer> {
  let answer = { status: 200, body: icsFeed([]) };
  const state = { requests: 0 };
  const server = http.createServer((req, res) => {
    state.requests++;
    if (req.method !== "GET" || req.url !== secretPath) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(answer.status, { "content-type": "text/calendar; charset=utf-8" }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${secretPath}`,
    serve: (next) => (answer = { status: next.status ?? 200, body: next.body }),
    get requests() {
      return state.requests;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
