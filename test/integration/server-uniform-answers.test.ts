import type { NotesApiResponses } from "../../src/notes/responses.js";
import { connect } from "node:net";
import { describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import {
  Api,
  deployedBot,
  mp4Bytes,
  registerUser,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";

/**
 * Answers that tell an attacker nothing and that no browser reinterprets: every answer of both
 * interfaces carries `X-Content-Type-Options: nosniff`, and the runner's public routes answer an
 * unknown bot exactly as they answer a wrong token.
 */

let server: TestServer;
let user: TestUser;
let notes: Api<NotesApiResponses>;

test.override("serverOptions", { notes: { port: 0 } });
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  notes = new Api<NotesApiResponses>(server.notesUrl as string);
  user = await registerUser(server.api);
});

/** The raw answer to bytes Node's HTTP parser refuses (answered before any Fastify hook). */
function rawAnswer(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

describe("X-Content-Type-Options", () => {
  test("is nosniff on every kind of answer of both interfaces", async () => {
    const { botId, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await runner.status("CALL_ENDED");
    expect((await runner.upload(mp4Bytes(4096), 1000)).status).toBe(201);
    await runner.status("DONE");
    const share = await server.api.post(`/v1/recordings/${botId}/share`, { token: user.token, body: {} });
    expect(share.status).toBe(201);
    const link = await server.api.get(`/v1/recordings/${botId}/download`, { token: user.token });

    const answers: Array<[string, Promise<Response>]> = [
      ["JSON", fetch(`${server.url}/v1/bots`, { headers: { authorization: `Bearer ${user.token}` } })],
      ["401", fetch(`${server.url}/v1/bots`)],
      ["404 route", fetch(`${server.url}/v1/nothing-here`)],
      [
        "400 JSON",
        fetch(`${server.url}/v1/auth/login`, {
          method: "POST",
          body: "{",
          headers: { "content-type": "application/json" },
        }),
      ],
      [
        "422",
        fetch(`${server.url}/v1/auth/login`, {
          method: "POST",
          body: "{}",
          headers: { "content-type": "application/json" },
        }),
      ],
      ["bad URL", fetch(`${server.url}/v1/bots/%E0%A4%A`)],
      ["recording", fetch(link.body.url)],
      ["share page", fetch(`${server.url}/v1/share/${share.body.token}`)],
      [
        "share stream",
        fetch(`${server.url}/v1/share/${share.body.token}/stream`, { headers: { range: "bytes=0-9" } }),
      ],
      ["dashboard", fetch(`${server.url}/`)],
      [
        "notes",
        fetch(`${notes.baseUrl}/v1/meetings`, { headers: { authorization: `Bearer ${user.token}` } }),
      ],
      ["notes 401", fetch(`${notes.baseUrl}/v1/meetings`)],
    ];
    for (const [what, answer] of answers) {
      const res = await answer;
      await res.arrayBuffer();
      expect(res.headers.get("x-content-type-options"), `${what} (${res.status})`).toBe("nosniff");
    }

    // An event stream is written past Fastify's reply: the header is still there.
    const stream = new AbortController();
    const events = await fetch(`${server.url}/v1/events/stream`, {
      headers: { authorization: `Bearer ${user.token}` },
      signal: stream.signal,
    });
    expect(events.headers.get("content-type")).toContain("text/event-stream");
    expect(events.headers.get("x-content-type-options")).toBe("nosniff");
    stream.abort();

    const port = Number(new URL(server.url).port);
    const refused = await rawAnswer(port, "GET /v1/bots HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n");
    expect(refused).toMatch(/^HTTP\/1\.1 400/);
    expect(refused.toLowerCase()).toContain("x-content-type-options: nosniff");
  });
});

describe("the runner's routes", () => {
  test("answer an unknown bot as they answer a wrong token: 401, the same body", async () => {
    const { botId, runner } = await deployedBot(server, user);
    const unknown = botId + 1000;
    const event = { seq: 1, type: "heartbeat", eventTime: new Date().toISOString(), data: {} };
    const routes: Array<[string, string, Record<string, unknown>]> = [
      ["POST", "event", { body: event }],
      [
        "PUT",
        "recording",
        { rawBody: mp4Bytes(64), headers: { "content-type": "video/mp4", "x-recording-duration-ms": "1" } },
      ],
      ["PUT", "recording/segments/0", { rawBody: mp4Bytes(64), headers: { "content-type": "video/mp4" } }],
      ["POST", "recording/complete", { body: { segments: 1 } }],
      [
        "PUT",
        "artifacts/failure.png",
        { rawBody: new Uint8Array(8), headers: { "content-type": "application/octet-stream" } },
      ],
    ];
    for (const [method, route, opts] of routes) {
      const wrong = await server.api.request(method, `/v1/bot-callbacks/${botId}/${route}`, {
        ...opts,
        token: "not-the-token",
      });
      const missing = await server.api.request(method, `/v1/bot-callbacks/${unknown}/${route}`, {
        ...opts,
        token: runner.config.callback.token,
      });
      expect(wrong.status, route).toBe(401);
      expect(missing.status, route).toBe(401);
      expect(missing.body, route).toEqual(wrong.body);
    }
  });
});
