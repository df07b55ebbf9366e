import { describe, expect, it } from "vitest";
import { sharePage, wantsHtml } from "../../src/server/http/share-page.js";

describe("wantsHtml", () => {
  it("is true when text/html is listed with a q above 0", () => {
    expect(wantsHtml("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")).toBe(true);
    expect(wantsHtml("application/json, TEXT/HTML;q=0.5")).toBe(true);
  });

  it("is false otherwise: JSON is the default", () => {
    for (const accept of [
      undefined,
      "",
      "*/*",
      "application/json",
      "text/*",
      "text/html;q=0",
      "text/htmlx",
    ]) {
      expect(wantsHtml(accept), String(accept)).toBe(false);
    }
  });
});

describe("sharePage", () => {
  const shared = {
    meetingTitle: "",
    platform: "zoom" as const,
    durationMs: 3_723_400,
    createdAt: "2030-01-02T10:31:00.000Z",
    streamUrl: "http://x/v1/share/t/stream",
    transcript: null,
  };

  it("names an untitled meeting, and shows its date and an hour-long length", () => {
    const html = sharePage(shared, "abc_-9");
    expect(html).toContain("<h1>Meeting recording</h1>");
    expect(html).toContain(">2030-01-02 10:31 UTC</time> · 1:02:03");
    expect(html).toContain('src="abc_-9/stream"');
  });

  it("never lets a token out of its attribute", () => {
    expect(sharePage(shared, '"><script>')).toContain('src="%22%3E%3Cscript%3E/stream"');
  });
});
