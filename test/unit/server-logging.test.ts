import { describe, expect, it } from "vitest";
import { redactUrl } from "../../src/server/http/api-server.js";

describe("redactUrl", () => {
  it("hides a download link's signature wherever it sits in the query", () => {
    expect(redactUrl("/v1/recordings/3/file?expires=17&signature=ab12")).toBe(
      "/v1/recordings/3/file?expires=17&signature=[redacted]",
    );
    expect(redactUrl("/x?signature=ab12&expires=17")).toBe("/x?signature=[redacted]&expires=17");
    expect(redactUrl("/v1/bots?page=2")).toBe("/v1/bots?page=2");
  });
});
