import { describe, expect, it } from "vitest";
import { zoomAdapter } from "../../platforms/zoom/index.js";
import {
  normalizeMeetingId,
  parseZoomLink,
  zoomMeeting,
  zoomWebBaseUrl,
  zoomWebClientUrl,
} from "../../platforms/zoom/url.js";
import { type MeetingInfo, RunnerSettings } from "../../src/core/index.js";

const zoom = (fields: Omit<MeetingInfo, "platform">): MeetingInfo => ({ platform: "zoom", ...fields });

describe("normalizeMeetingId", () => {
  it("keeps the digits of ids written with spaces or dashes, as Zoom does", () => {
    expect(normalizeMeetingId("12345678901")).toBe("12345678901");
    expect(normalizeMeetingId("123 4567 8901")).toBe("12345678901");
    expect(normalizeMeetingId("123-4567-8901")).toBe("12345678901");
    expect(normalizeMeetingId(" 987 654 321 ")).toBe("987654321");
  });

  it("rejects what cannot be a Zoom id: letters, too short, too long", () => {
    expect(() => normalizeMeetingId("abc-defg-hij")).toThrow(/9 to 11 digits/);
    expect(() => normalizeMeetingId("12345678")).toThrow(/not a Zoom meeting id/);
    expect(() => normalizeMeetingId("123456789012")).toThrow(/not a Zoom meeting id/);
    expect(() => normalizeMeetingId("1234.5678.901")).toThrow(/not a Zoom meeting id/);
    expect(() => normalizeMeetingId("")).toThrow(/not a Zoom meeting id/);
  });
});

describe("parseZoomLink", () => {
  it("reads the id and pwd of an invite link on any Zoom subdomain", () => {
    expect(
      parseZoomLink("https://us05web.zoom.us/j/12345678901?pwd=Mjf8IFZfbTb4yVyb0WVYtsNv8nMWvo.1"),
    ).toEqual({
      meetingId: "12345678901",
      passcode: "Mjf8IFZfbTb4yVyb0WVYtsNv8nMWvo.1",
    });
    expect(parseZoomLink("https://zoom.us/j/987654321")).toEqual({ meetingId: "987654321" });
    expect(parseZoomLink("https://acme.zoom.us/j/98765432101/?pwd=abc&uname=Someone")).toEqual({
      meetingId: "98765432101",
      passcode: "abc",
    });
  });

  it("reads web client links, new and classic", () => {
    expect(parseZoomLink("https://app.zoom.us/wc/12345678901/join?pwd=x1")).toEqual({
      meetingId: "12345678901",
      passcode: "x1",
    });
    expect(parseZoomLink("https://zoom.us/wc/join/12345678901")).toEqual({ meetingId: "12345678901" });
  });

  it("treats an empty pwd as none", () => {
    expect(parseZoomLink("https://zoom.us/j/12345678901?pwd=")).toEqual({ meetingId: "12345678901" });
  });

  it("rejects links that name no meeting", () => {
    expect(() => parseZoomLink("https://zoom.us/my/vanity.name")).toThrow(/not a Zoom meeting link/);
    expect(() => parseZoomLink("https://zoom.us/")).toThrow(/not a Zoom meeting link/);
    expect(() => parseZoomLink("https://zoom.us/j/not-digits")).toThrow(/not a Zoom meeting id/);
    expect(() => parseZoomLink("zoom.us/j/12345678901")).toThrow(/not a URL/);
  });
});

describe("zoomMeeting", () => {
  it("takes meetingId + meetingPassword", () => {
    expect(zoomMeeting(zoom({ meetingId: "123 4567 8901", meetingPassword: "s3cret" }))).toEqual({
      meetingId: "12345678901",
      passcode: "s3cret",
    });
  });

  it("has no passcode when none is given (or it is empty)", () => {
    expect(zoomMeeting(zoom({ meetingId: "12345678901" }))).toEqual({ meetingId: "12345678901" });
    expect(zoomMeeting(zoom({ meetingId: "12345678901", meetingPassword: "" }))).toEqual({
      meetingId: "12345678901",
    });
  });

  it("takes a pasted link, and meetingPassword over the link's pwd", () => {
    const meetingUrl = "https://us02web.zoom.us/j/12345678901?pwd=fromLink";
    expect(zoomMeeting(zoom({ meetingUrl }))).toEqual({ meetingId: "12345678901", passcode: "fromLink" });
    expect(zoomMeeting(zoom({ meetingUrl, meetingPassword: "typed" }))).toEqual({
      meetingId: "12345678901",
      passcode: "typed",
    });
    expect(zoomMeeting(zoom({ meetingUrl, meetingId: "123-4567-8901" }))).toEqual({
      meetingId: "12345678901",
      passcode: "fromLink",
    });
  });

  it("refuses an id and a link that name different meetings, and neither", () => {
    expect(() =>
      zoomMeeting(zoom({ meetingId: "11111111111", meetingUrl: "https://zoom.us/j/22222222222" })),
    ).toThrow(/disagree/);
    expect(() => zoomMeeting(zoom({}))).toThrow(/needs meetingInfo.meetingId/);
  });
});

describe("the web client URL", () => {
  it("is app.zoom.us/wc/<id>/join?pwd=<pwd> by default", () => {
    expect(zoomWebBaseUrl(undefined)).toBe("https://app.zoom.us");
    expect(zoomAdapter.meetingUrl(zoom({ meetingId: "12345678901", meetingPassword: "abc123" }), {})).toBe(
      "https://app.zoom.us/wc/12345678901/join?pwd=abc123",
    );
    expect(zoomAdapter.meetingUrl(zoom({ meetingId: "12345678901" }), {})).toBe(
      "https://app.zoom.us/wc/12345678901/join",
    );
  });

  it("encodes the passcode", () => {
    expect(zoomWebClientUrl({ meetingId: "12345678901", passcode: "a b&c=d/é" }, "https://app.zoom.us")).toBe(
      "https://app.zoom.us/wc/12345678901/join?pwd=a+b%26c%3Dd%2F%C3%A9",
    );
  });

  it("converts a pasted invite link to the web client", () => {
    expect(
      zoomAdapter.meetingUrl(zoom({ meetingUrl: "https://us05web.zoom.us/j/98765432101?pwd=Xy.1" }), {}),
    ).toBe("https://app.zoom.us/wc/98765432101/join?pwd=Xy.1");
  });

  it("uses the base-URL override (platformUrls.zoomWeb: the mock), without a trailing slash, for ids and links", () => {
    const urls = { zoomWeb: "http://127.0.0.1:41234/" };
    expect(zoomAdapter.meetingUrl(zoom({ meetingId: "123 456 789", meetingPassword: "pw" }), urls)).toBe(
      "http://127.0.0.1:41234/wc/123456789/join?pwd=pw",
    );
    expect(zoomAdapter.meetingUrl(zoom({ meetingUrl: "https://zoom.us/j/12345678901?pwd=q" }), urls)).toBe(
      "http://127.0.0.1:41234/wc/12345678901/join?pwd=q",
    );
  });

  it("takes only an http(s) override from a BotConfig", () => {
    const parsed = RunnerSettings.safeParse({ platformUrls: { zoomWeb: "ftp://example.com" } });
    expect(parsed.error?.issues[0]).toMatchObject({
      path: ["platformUrls", "zoomWeb"],
      message: "must be an http(s) URL",
    });
  });
});
