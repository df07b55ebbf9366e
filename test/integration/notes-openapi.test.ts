import { describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import {
  checkPathParamTypes,
  compileGeneratedClient,
  errorsOf,
  lintOpenApi,
  OpenApiDocument,
  type OpenApiOperation as Operation,
} from "../helpers/openapi-tools.js";
import { Api, registerUser, type TestServer } from "../helpers/server-harness.js";

/**
 * The meeting-notes interface's /openapi.json, as served on its own port, is a
 * good input for client generators (Redocly's recommended rules; a generated TypeScript client
 * compiles), and says what every answer carries: the credential, the rate-limit headers, the 429.
 */

let server: TestServer;
let notesUrl: string;
let doc: OpenApiDocument;
test.override("serverOptions", { notes: { port: 0 }, jobs: { worker: false } });
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  notesUrl = server.notesUrl as string;
  const res = await new Api(notesUrl).request("GET", "/openapi.json");
  expect(res.status).toBe(200);
  doc = OpenApiDocument.parse(res.body);
});

const operations = (document: OpenApiDocument) =>
  Object.entries(document.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );

describe("Redocly's recommended rules", () => {
  test("report no error and no warning on the notes document", async () => {
    const problems = await lintOpenApi(doc);
    expect(problems.map((p) => `${p.severity} ${p.rule} at ${p.where}: ${p.message}`)).toEqual([]);
  });

  test("do report an operation without a summary or security (the check can fail)", async () => {
    const broken = structuredClone(doc);
    const list = broken.paths["/v1/meetings"]?.get as Operation;
    delete list.summary;
    delete list.security;
    expect(errorsOf(await lintOpenApi(broken))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^operation-summary at #\/paths\/~1v1~1meetings\/get/),
        expect.stringMatching(/^security-defined at #\/paths\/~1v1~1meetings\/get/),
      ]),
    );
  });
});

describe("every operation", () => {
  test("has a unique camelCase operationId, a one-line summary and the user's bearer credential", () => {
    const ops = operations(doc);
    expect(ops.map((o) => o.name)).toEqual(
      expect.arrayContaining([
        "GET /v1/meetings",
        "GET /v1/meetings/{id}",
        "GET /v1/meetings/{id}/transcript",
        "GET /v1/meetings/{id}/summary",
      ]),
    );
    for (const { name, op } of ops) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]*$/);
      expect(op.summary, name).toMatch(/^[^\n]{3,120}$/);
      expect(op.security, name).toEqual([{ bearer: [] }]);
    }
    const ids = ops.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("documents the X-RateLimit-* headers on its success answer, and its 429 with Retry-After", () => {
    const limitHeaders = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"];
    for (const { name, op } of operations(doc)) {
      const successes = Object.keys(op.responses).filter((status) => status.startsWith("2"));
      expect(successes.length, name).toBeGreaterThan(0);
      for (const status of successes)
        expect(Object.keys(op.responses[status]?.headers ?? {}), `${name} ${status}`).toEqual(
          expect.arrayContaining(limitHeaders),
        );
      expect(Object.keys(op.responses["429"]?.headers ?? {}).sort(), name).toEqual(
        [...limitHeaders, "Retry-After"].sort(),
      );
      // Numbers on every plan (Enterprise's are 2147483647): a client parses them as integers.
      for (const [status, response] of Object.entries(op.responses))
        for (const [header, value] of Object.entries(response.headers ?? {}))
          expect(value, `${name} ${status} ${header}`).toMatchObject({ schema: { type: "integer" } });
    }
  });
});

describe("path parameters", () => {
  test("are integers where the route takes an integer (a webhook's id), strings elsewhere (a meeting's)", async () => {
    const user = await registerUser(server.api);
    const { mismatches, integers, others } = await checkPathParamTypes(doc, notesUrl, { bearer: user.token });
    expect(mismatches).toEqual([]);
    expect(integers).toBe(2); // GET and DELETE /v1/webhooks/{id}
    expect(others).toBe(3); // the meeting, its transcript and its summary: mtg_…
  });
});

describe("servers", () => {
  test("is the notes interface's own base URL, under which the documented paths answer", async () => {
    expect(doc.servers).toEqual([{ url: notesUrl, description: "This server" }]);
    const res = await fetch(`${doc.servers?.[0]?.url}/v1/meetings`);
    expect(res.status).toBe(401);
    expect(res.headers.get("x-ratelimit-limit")).not.toBeNull();
  });
});

describe("a TypeScript client generated with openapi-typescript", () => {
  // A client's use of it: the list with its filters, one meeting, its transcript and its summary.
  const USAGE = `
import type { operations } from "./api.js";

type ListQuery = NonNullable<operations["listMeetings"]["parameters"]["query"]>;
type MeetingList = operations["listMeetings"]["responses"][200]["content"]["application/json"];
type Meeting = operations["getMeeting"]["responses"][200]["content"]["application/json"];
type Transcript = operations["getMeetingTranscript"]["responses"][200]["content"]["application/json"];
type Summary = operations["getMeetingSummary"]["responses"][200]["content"]["application/json"];
type MeetingPath = operations["getMeeting"]["parameters"]["path"];

export const query: ListQuery = { platform: "zoom", status: "completed", q: "budget", limit: 10, from: "2030-01-01" };
export const path: MeetingPath = { id: "mtg_000000000000000000000000" };
export const next = (list: MeetingList): string | null | undefined => list.next_cursor;
export const firstTitle = (list: MeetingList): string | null | undefined => list.data[0]?.title;
export const title = (meeting: Meeting): string | null => meeting.title;
export const lines = (t: Transcript): string[] => t.utterances.map((u) => u.text);
export const overview = (s: Summary): string => s.overview;
export const owners = (s: Summary): (string | null)[] => s.actionItems.map((item) => item.owner);
`;

  test("compiles, with the operations used as a client uses them", async () => {
    expect(await compileGeneratedClient(doc, USAGE)).toEqual([]);
  });

  test("does not compile a use the document does not allow (the check can fail)", async () => {
    const diagnostics = await compileGeneratedClient(
      doc,
      `${USAGE}\nexport const bad: ListQuery = { platform: "skype" };`,
    );
    expect(diagnostics.join("\n")).toMatch(/not assignable/);
  });
});
