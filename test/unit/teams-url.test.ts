import { describe, expect, it } from "vitest";
import { MeetingInfo, RunnerSettings } from "../../src/core/index.js";
import {
  meetingIdFromThread,
  meetupJoinUrl,
  parseTeamsLink,
  teamsBaseOverride,
  teamsMeetingUrl,
} from "../../platforms/teams/url.js";

const ID = "MzE0ZjY2ZGYtNDE3Ni00YTRkLWI0YzctNjAwNmQ3ZDE3ZTIy";
const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const ORGANIZER = "1a2b3c4d-0000-4000-8000-123456789abc";
const CONTEXT = encodeURIComponent(`{"Tid":"${TENANT}","Oid":"${ORGANIZER}"}`);
const REAL_LINK = `https://teams.microsoft.com/l/meetup-join/19%3ameeting_${ID}%40thread.v2/0?context=${CONTEXT}`;
const MOCK = "http://127.0.0.1:41234";

const noOverride = undefined;
const toMock = MOCK;

/** MeetingInfo as the server and runner accept it (parsed by the core schema). */
const info = (fields: Record<string, string>) => MeetingInfo.parse({ platform: "teams", ...fields });
const ids = info({ meetingId: ID, tenantId: TENANT, organizerId: ORGANIZER });

describe("teamsMeetingUrl from meetingId + tenantId + organizerId", () => {
  it("builds the meetup-join link Teams itself writes", () => {
    expect(teamsMeetingUrl(ids, noOverride)).toBe(REAL_LINK);
  });

  it("puts the tenant and organizer in context as URL-encoded JSON", () => {
    const url = new URL(teamsMeetingUrl(ids, noOverride));
    expect(JSON.parse(url.searchParams.get("context") ?? "")).toEqual({ Tid: TENANT, Oid: ORGANIZER });
  });

  it("uses the base-URL override (platformUrls.teamsWeb) as the origin, with or without a trailing slash", () => {
    const expected = `${MOCK}/l/meetup-join/19%3ameeting_${ID}%40thread.v2/0?context=${CONTEXT}`;
    expect(teamsMeetingUrl(ids, toMock)).toBe(expected);
    expect(teamsMeetingUrl(ids, `${MOCK}/`)).toBe(expected);
  });

  it("keeps a path prefix of the base URL", () => {
    expect(teamsMeetingUrl(ids, "http://proxy.local/teams/")).toBe(
      `http://proxy.local/teams/l/meetup-join/19%3ameeting_${ID}%40thread.v2/0?context=${CONTEXT}`,
    );
  });

  it("ignores an empty override", () => {
    expect(teamsMeetingUrl(ids, "  ")).toBe(REAL_LINK);
  });

  it("takes only an http(s) override from a BotConfig", () => {
    for (const teamsWeb of ["teams.local", "ftp://teams.local"]) {
      const parsed = RunnerSettings.safeParse({ platformUrls: { teamsWeb } });
      expect(parsed.error?.issues[0], teamsWeb).toMatchObject({
        path: ["platformUrls", "teamsWeb"],
        message: "must be an http(s) URL",
      });
    }
  });

  it("accepts the whole thread id, decoded or encoded, as the meetingId", () => {
    for (const meetingId of [`19:meeting_${ID}@thread.v2`, `19%3ameeting_${ID}%40thread.v2`]) {
      expect(teamsMeetingUrl(info({ meetingId, tenantId: TENANT, organizerId: ORGANIZER }), noOverride)).toBe(
        REAL_LINK,
      );
    }
  });

  it("encodes characters that would break the URL", () => {
    const url = meetupJoinUrl({ meetingId: "a/b?c#d", tenantId: 'x"y', organizerId: "z&w" });
    expect(url).toContain("19%3ameeting_a%2Fb%3Fc%23d%40thread.v2/0?");
    const parsed = new URL(url);
    expect([...parsed.searchParams.keys()]).toEqual(["context"]);
    expect(JSON.parse(parsed.searchParams.get("context") ?? "")).toEqual({ Tid: 'x"y', Oid: "z&w" });
  });

  it("prefers the complete ids over a meetingUrl given alongside", () => {
    const both = info({
      meetingId: ID,
      tenantId: TENANT,
      organizerId: ORGANIZER,
      meetingUrl: "https://teams.microsoft.com/meet/1234567890123?p=abc",
    });
    expect(teamsMeetingUrl(both, noOverride)).toBe(REAL_LINK);
  });
});

describe("teamsMeetingUrl from a pasted meetingUrl", () => {
  it("opens a real meetup-join link as is", () => {
    expect(teamsMeetingUrl(info({ meetingUrl: REAL_LINK }), noOverride)).toBe(REAL_LINK);
  });

  it("moves a real meetup-join link onto the override, keeping path and query", () => {
    expect(teamsMeetingUrl(info({ meetingUrl: REAL_LINK }), toMock)).toBe(
      REAL_LINK.replace("https://teams.microsoft.com", MOCK),
    );
  });

  it("accepts the raw JSON context people paste from invitations", () => {
    const raw = `https://teams.microsoft.com/l/meetup-join/19%3ameeting_${ID}%40thread.v2/0?context={"Tid":"${TENANT}","Oid":"${ORGANIZER}"}`;
    const url = new URL(teamsMeetingUrl(info({ meetingUrl: raw }), toMock));
    expect(url.origin).toBe(MOCK);
    expect(JSON.parse(url.searchParams.get("context") ?? "")).toEqual({ Tid: TENANT, Oid: ORGANIZER });
  });

  it("accepts /meet/<id>?p=<passcode> links on teams.microsoft.com and teams.live.com", () => {
    const work = "https://teams.microsoft.com/meet/2345678901234?p=AbCdEf123";
    const personal = "https://teams.live.com/meet/9345678901234?p=XyZ987";
    expect(teamsMeetingUrl(info({ meetingUrl: work }), noOverride)).toBe(work);
    expect(teamsMeetingUrl(info({ meetingUrl: personal }), noOverride)).toBe(personal);
    expect(teamsMeetingUrl(info({ meetingUrl: work }), toMock)).toBe(
      `${MOCK}/meet/2345678901234?p=AbCdEf123`,
    );
    expect(teamsMeetingUrl(info({ meetingUrl: personal }), toMock)).toBe(
      `${MOCK}/meet/9345678901234?p=XyZ987`,
    );
  });

  it("keeps a link on an operator-allowed host (such as the mock) as given", () => {
    const onMock = `${MOCK}/l/meetup-join/19%3ameeting_${ID}%40thread.v2/0?context=${CONTEXT}&admit=manual`;
    expect(teamsMeetingUrl(info({ meetingUrl: onMock }), noOverride)).toBe(onMock);
    expect(teamsMeetingUrl(info({ meetingUrl: onMock }), "http://elsewhere:1")).toBe(onMock);
  });

  it("rejects a Teams-host URL that is not a join link", () => {
    for (const meetingUrl of [
      "https://teams.microsoft.com/",
      "https://teams.microsoft.com/v2/",
      "https://teams.microsoft.com/l/meetup-join/19%3abogus%40thread.v2/0",
      "https://teams.microsoft.com/meet/not-numeric?p=1",
      "https://teams.live.com/meet/",
    ]) {
      expect(() => teamsMeetingUrl(info({ meetingUrl }), noOverride), meetingUrl).toThrow(
        /not a Teams meeting link/,
      );
    }
  });

  it("needs either the three ids or a meetingUrl", () => {
    const partial = { platform: "teams" as const, meetingId: ID, tenantId: TENANT };
    expect(() => teamsMeetingUrl(partial, noOverride)).toThrow(
      /meetingId \+ tenantId \+ organizerId, or a meetingUrl/,
    );
  });
});

describe("parseTeamsLink", () => {
  it("reads the meeting id of both link shapes", () => {
    expect(parseTeamsLink(REAL_LINK)).toMatchObject({ kind: "meetup-join", meetingId: ID });
    expect(parseTeamsLink("https://teams.live.com/meet/9345678901234?p=x")).toMatchObject({
      kind: "meet",
      meetingId: "9345678901234",
    });
  });

  it("is host-agnostic and case-insensitive in the thread's escapes", () => {
    expect(parseTeamsLink(`${MOCK}/l/meetup-join/19%3Ameeting_${ID}%40thread.v2/0`)?.meetingId).toBe(ID);
  });

  it("returns null for anything else", () => {
    for (const link of [
      "not a url",
      "mailto:someone@example.com",
      "https://teams.microsoft.com/l/meetup-join/",
      "https://teams.microsoft.com/l/meetup-join/19%3ameeting_%40thread.v2/0",
      "https://teams.microsoft.com/l/meetup-join/19%3ameeting_abc%40thread.v2%E0%A4%A/0",
      "https://teams.microsoft.com/meet/123/extra",
      "https://meet.google.com/abc-defg-hij",
    ]) {
      expect(parseTeamsLink(link), link).toBeNull();
    }
  });
});

describe("helpers", () => {
  it("meetingIdFromThread takes encoded and decoded thread ids only", () => {
    expect(meetingIdFromThread(`19:meeting_${ID}@thread.v2`)).toBe(ID);
    expect(meetingIdFromThread(`19%3ameeting_${ID}%40thread.v2`)).toBe(ID);
    expect(meetingIdFromThread(ID)).toBeNull();
    expect(meetingIdFromThread("19:abc@thread.skype")).toBeNull();
    expect(meetingIdFromThread("%E0%A4%A")).toBeNull();
  });

  it("teamsBaseOverride is undefined without an override", () => {
    expect(teamsBaseOverride(undefined)).toBeUndefined();
    expect(teamsBaseOverride(toMock)).toBe(MOCK);
  });
});
