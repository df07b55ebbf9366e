import { connect } from "node:net";
import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  type ApiResponse,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
  errorDetail,
  type ErrorFields,
} from "../helpers/server-harness.js";

/**
 * Spec §7 everywhere: whatever is wrong with a request (route, URL, framing, content type, size,
 * JSON, schema), the answer is a 4xx in one of the spec's two shapes, never a 5xx.
 */

test.override("serverOptions", { rateLimit: { perMinute: 0, perHour: 0 } });

// The file's helpers read these: the file's server, and each test's own fresh user.
let server: TestServer;
let user: TestUser;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});
test.beforeEach(({ user: testUser }) => {
  user = testUser;
});

/** `{detail: string}` or `{detail: [{loc, msg, type}, ...]}`, nothing else. */
function expectSpecError(res: ApiResponse, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(res.body as object)).toEqual(["detail"]);
  if (typeof (res.body as ErrorFields).detail === "string") return;
  expect(validationIssues(res.body).length).toBeGreaterThan(0);
  for (const issue of validationIssues(res.body)) {
    expect(issue).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  }
}

/** Sends raw bytes on a fresh connection and returns the status line and body of the answer. */
function rawRequest(bytes: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => (data += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1]);
      resolve({ status, body: data.slice(data.indexOf("\r\n\r\n") + 4) });
    });
  });
}

describe("unknown routes", () => {
  test("are 404 {detail: Not Found} for every method, under both prefixes and none", async () => {
    const paths = ["/nope", "/v1/nope", "/api/v1/nope", "/v2/bots", "/v1/bots/1/nope", "/v1//bots"];
    for (const path of paths) {
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        const res = await server.api.request(method, path, { token: user.token });
        expectSpecError(res, 404);
        expect(errorDetail(res.body), `${method} ${path}`).toBe("Not Found");
      }
    }
  });

  test("include a known path with a method it does not have", async () => {
    for (const [method, path] of [
      ["DELETE", "/v1/events"],
      ["PUT", "/v1/bots"],
      ["POST", "/v1/users/me/usage"],
    ] as const) {
      expectSpecError(await server.api.request(method, path, { token: user.token }), 404);
    }
  });
});

describe("malformed requests", () => {
  test("a URL that does not percent-decode is 400", async () => {
    const res = await server.api.get("/v1/bots/%E0%A4%A", { token: user.token });
    expectSpecError(res, 400);
    expect(res.body.detail).toBe("Malformed URL");
  });

  test("a request line Node cannot parse is 400 {detail}", async () => {
    const res = await rawRequest("NOT AN HTTP REQUEST\r\n\r\n");
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ detail: "Bad Request" });
  });

  test("headers over Node's limit are 431 {detail}", async () => {
    const res = await rawRequest(`GET /v1/bots HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toEqual({ detail: "Request Header Fields Too Large" });
  });
});

describe("request bodies", () => {
  const post = <P extends string = "/v1/bots">(
    rawBody: string | Uint8Array,
    contentType?: string,
    path?: P,
  ) =>
    server.api.post(path ?? "/v1/bots", {
      token: user.token,
      rawBody,
      headers: contentType === undefined ? {} : { "content-type": contentType },
    });

  test("malformed JSON, and JSON with prototype keys, are 400", async () => {
    for (const body of ['{"meetingInfo": ', "{'a': 1}", '{"__proto__": {"admin": true}}', "[1,]"]) {
      const res = await post(body, "application/json");
      expectSpecError(res, 400);
      expect(errorDetail(res.body), body).toBe("Request body is not valid JSON");
    }
  });

  test("JSON that is not UTF-8, or holds a lone surrogate, is 400 and nothing is stored", async () => {
    const listed = async () => (await server.api.get("/v1/bots", { token: user.token })).body.total;
    const before = await listed();
    const title = (escaped: string) =>
      `{"meetingInfo":${JSON.stringify(TEST_MEETING)},"meetingTitle":"${escaped}"}`;
    const notUtf8 = Buffer.concat([
      Buffer.from(title("A")).subarray(0, -2),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    const cases: [string | Uint8Array, string][] = [
      [notUtf8, "Request body is not valid UTF-8"],
      [Buffer.from([0xef, 0xbb, 0xbf, 0xff, 0xfe]), "Request body is not valid UTF-8"],
      [title("\\ud800"), "Request body has a lone surrogate (a \\uD800-\\uDFFF escape without its pair)"],
      [title("x\\uDFFFy"), "Request body has a lone surrogate (a \\uD800-\\uDFFF escape without its pair)"],
      [
        `{"meetingInfo":${JSON.stringify(TEST_MEETING)},"\\ud83d":1}`,
        "Request body has a lone surrogate (a \\uD800-\\uDFFF escape without its pair)",
      ],
    ];
    for (const [body, detail] of cases) {
      const res = await post(body, "application/json");
      expectSpecError(res, 400);
      expect(errorDetail(res.body)).toBe(detail);
    }
    expect(await listed()).toBe(before);
    // A whole pair, escaped or as UTF-8, and an escaped backslash before "ud800", are text.
    for (const escaped of ["\\ud83d\\udca9", "💩", "\\\\ud800"]) {
      const res = await post(title(escaped), "application/json");
      expect(res.status).toBe(201);
      expect(res.body.meetingTitle).toBe(JSON.parse(`"${escaped}"`));
    }
  });

  test("a body that is not JSON is 415, also when the content type is missing", async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const res = await post("meetingInfo=google", contentType);
      expectSpecError(res, 415);
      expect(errorDetail(res.body)).toBe("Content-Type must be application/json");
    }
    expectSpecError(await post(new TextEncoder().encode('{"a":1}')), 415);
    expectSpecError(await post("{}", "text/plain", "/api/v1/bots"), 415);
  });

  test("a JSON content type with parameters is accepted", async () => {
    const res = await post(JSON.stringify({ meetingInfo: TEST_MEETING }), "application/json; charset=utf-8");
    expect(res.status).toBe(201);
  });

  test("a body over 1 MiB is 413, with or without Content-Length", async () => {
    const big = JSON.stringify({ meetingInfo: TEST_MEETING, meetingTitle: "x".repeat(1024 * 1024) });
    const sized = await post(big, "application/json");
    expectSpecError(sized, 413);
    expect(errorDetail(sized.body)).toBe("Request body is larger than 1048576 bytes");

    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("x".repeat(100_000)));
        controller.close();
      },
    });
    // A route with only the 1 MiB limit: /v1/bots reads up to the room for a picture first
    // (output.image), then holds the rest of the body to 1 MiB (server-picture.test.ts).
    const response = await fetch(new URL("/v1/webhooks", server.url), {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ detail: "Request body is larger than 1048576 bytes" });
  });

  test("valid JSON of the wrong shape is 422 with the validation body", async () => {
    for (const body of ["null", "[]", '"text"', "42", "{}", '{"meetingInfo": []}']) {
      const res = await post(body, "application/json");
      expectSpecError(res, 422);
      expect(validationIssues(res.body)[0]?.loc[0], body).toBe("body");
    }
    const absent = await server.api.post("/v1/bots", { token: user.token });
    expectSpecError(absent, 422);
    expect(absent.body.detail).toEqual([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  });
});

describe("path ids and query strings", () => {
  test("an id that is not a positive integer is 422 at path.id", async () => {
    for (const id of ["0", "-1", "1e3", "0x10", "abc", "1.5", "99999999999999999999", "%20"]) {
      for (const path of [`/v1/bots/${id}`, `/v1/api-keys/${id}/usage`, `/api/v1/bots/${id}/logs`]) {
        const res = await server.api.get(path, { token: user.token });
        expectSpecError(res, 422);
        expect(validationIssues(res.body)[0]?.loc, path).toEqual(["path", "id"]);
      }
    }
  });

  test("query values out of range, of the wrong type or repeated are 422 at query.<name>", async () => {
    const cases: [string, string][] = [
      ["/v1/bots?page=0", "page"],
      ["/v1/bots?page_size=101", "page_size"],
      ["/v1/bots?page=abc", "page"],
      ["/v1/bots?page=1&page=2", "page"],
      ["/v1/bots?status=SLEEPING", "status"],
      ["/v1/events?start_date=yesterday", "start_date"],
      ["/v1/users/me/api-logs?page_size=0", "page_size"],
      ["/v1/users/me/usage?period=2026-13", "period"],
      ["/v1/users/me/analytics?days=0", "days"],
    ];
    for (const [path, name] of cases) {
      const res = await server.api.get(path, { token: user.token });
      expectSpecError(res, 422);
      expect(validationIssues(res.body)[0]?.loc, path).toEqual(["query", name]);
    }
  });

  test("unknown query parameters are ignored", async () => {
    expect((await server.api.get("/v1/bots?colour=blue", { token: user.token })).status).toBe(200);
  });
});

describe("closing the server", () => {
  test("does not wait for a connection that never sent a request (a preconnect, a pool's spare)", async () => {
    const closing = await startTestServer();
    const { hostname, port } = new URL(closing.url);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once("connect", resolve));
    const ended = new Promise((resolve) => socket.once("close", resolve));
    // Without the sweep, close() waits for as long as the client keeps the connection.
    await closing.close();
    await ended;
    expect(socket.bytesRead).toBe(0);
  });
});
