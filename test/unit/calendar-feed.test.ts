import { describe, expect, it } from "vitest";
import { FeedError, readFeed } from "../../src/server/services/calendar-feed.js";
import { findMeetingLink } from "../../src/server/services/meeting-links.js";
import { icsFeed } from "../helpers/calendar-feed.js";

/** Reading feeds and finding meeting links: pure functions, fixed dates. */

const window = { from: new Date("2027-01-01T00:00:00Z"), to: new Date("2027-01-29T00:00:00Z") };

describe("findMeetingLink", () => {
  it("finds Meet, Zoom and Teams meetings in text, and nothing else", () => {
    const cases: [string, string | null][] = [
      ["Join: https://meet.google.com/abc-defg-hij.", "google:abc-defg-hij"],
      ["<https://meet.google.com/lookup/xyz-abcd-efg>", "google:xyz-abcd-efg"],
      ["Zoom https://us02web.zoom.us/j/81234567890?pwd=Zm9v (passcode 123)", "zoom:81234567890"],
      ["https://zoom.us/my/alice.smith", "zoom:alice.smith"],
      [
        "https://teams.microsoft.com/l/meetup-join/19%3ameeting_NjE%40thread.v2/0?context=%7b%7d",
        "teams:/l/meetup-join/19:meeting_NjE@thread.v2/0",
      ],
      ["Meet home https://meet.google.com/ and Zoom https://zoom.us/signin", null],
      ["https://meet.google.com.evil.example/abc-defg-hij", null],
      ["Room 4, no link", null],
    ];
    for (const [text, key] of cases) expect(findMeetingLink([text])?.key ?? null, text).toBe(key);
    // The first text with a meeting wins: conference fields come before the description.
    const found = findMeetingLink(["https://zoom.us/j/1", "https://meet.google.com/abc-defg-hij"]);
    expect(found?.meetingInfo).toEqual({ platform: "zoom", meetingUrl: "https://zoom.us/j/1" });
  });
});

describe("readFeed", () => {
  it("reads an IANA zone the feed does not define on both sides of a daylight-saving change", () => {
    const text = icsFeed(
      [
        {
          uid: "ny",
          start: "20270105T090000",
          end: "20270105T100000",
          tzid: "America/New_York",
          rrule: "FREQ=DAILY;COUNT=2",
        },
      ],
      [],
    );
    const found = readFeed(text, window);
    expect(found.map((e) => e.start.toISOString())).toEqual([
      "2027-01-05T14:00:00.000Z",
      "2027-01-06T14:00:00.000Z",
    ]);
    // Summer: −04:00.
    const july = readFeed(text.replace(/202701/g, "202707"), {
      from: new Date("2027-07-01T00:00:00Z"),
      to: new Date("2027-07-29T00:00:00Z"),
    });
    expect(july[0]!.start.toISOString()).toBe("2027-07-05T13:00:00.000Z");
  });

  it("keeps an instance moved into the window from beyond it, and leaves all-day events out", () => {
    const text = icsFeed([
      {
        uid: "weekly",
        start: "20270104T100000Z",
        end: "20270104T110000Z",
        rrule: "FREQ=WEEKLY;COUNT=6",
      },
      {
        uid: "weekly",
        recurrenceId: "20270201T100000Z",
        start: "20270128T100000Z",
        end: "20270128T110000Z",
      },
      { uid: "holiday", start: "20270110", end: "20270111" },
    ]);
    const found = readFeed(
      text.replace(
        /DTSTART:20270110\r\nDTEND:20270111/,
        "DTSTART;VALUE=DATE:20270110\r\nDTEND;VALUE=DATE:20270111",
      ),
      window,
    );
    expect(found.map((e) => [e.recurrenceId, e.start.toISOString()])).toEqual([
      ["2027-01-04T10:00:00.000Z", "2027-01-04T10:00:00.000Z"],
      ["2027-01-11T10:00:00.000Z", "2027-01-11T10:00:00.000Z"],
      ["2027-01-18T10:00:00.000Z", "2027-01-18T10:00:00.000Z"],
      ["2027-01-25T10:00:00.000Z", "2027-01-25T10:00:00.000Z"],
      ["2027-02-01T10:00:00.000Z", "2027-01-28T10:00:00.000Z"],
    ]);
  });

  it("leaves out an event it cannot read, not the whole feed", () => {
    const text = icsFeed([
      { uid: "broken", start: "20270104T100000Z", end: "20270104T110000Z", rrule: "FREQ=WEEKLY;UNTIL=2027" },
      { uid: "fine", start: "20270105T100000Z", end: "20270105T110000Z" },
    ]);
    expect(readFeed(text, window).map((e) => e.uid)).toEqual(["fine"]);
  });

  it("refuses what is not iCalendar, and a feed with too many events", () => {
    expect(() => readFeed("<html></html>", window)).toThrow(FeedError);
    const minutely = icsFeed([
      { uid: "m", start: "20270101T000000Z", end: "20270101T000030Z", rrule: "FREQ=MINUTELY" },
    ]);
    expect(() => readFeed(minutely, window)).toThrow(/more than 5000 events/);
  });
});
