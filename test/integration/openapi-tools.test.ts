import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import {
  compileGeneratedClient,
  errorsOf,
  lintOpenApi,
  OpenApiDocument,
  type OpenApiOperation as Operation,
} from "../helpers/openapi-tools.js";
import type { TestServer } from "../helpers/server-harness.js";

/**
 * The bot API's /openapi.json is a good input for client generators. Redocly's
 * recommended rules and a TypeScript client generated from it, both run on the served document.
 */

let server: TestServer;
let doc: OpenApiDocument;
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  const res = await server.api.get("/openapi.json");
  expect(res.status).toBe(200);
  doc = OpenApiDocument.parse(res.body);
});

const operations = (document: OpenApiDocument) =>
  Object.entries(document.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );

/**
 * Warnings the document keeps on purpose. The webhook paths are the spec's (Fastify matches the
 * static segment first); the OAuth routes are browser redirects that never answer 2xx.
 */
const ACCEPTED_WARNINGS = [
  "no-ambiguous-paths at #/paths/~1v1~1webhooks~1{id}~1rotate-secret",
  "no-ambiguous-paths at #/paths/~1v1~1webhooks~1{id}~1test",
  "no-ambiguous-paths at #/paths/~1v1~1webhooks~1{id}~1deliveries",
  "operation-2xx-response at #/paths/~1v1~1auth~1oauth~1{provider}/get/responses",
  "operation-2xx-response at #/paths/~1v1~1auth~1oauth~1{provider}~1callback/get/responses",
];

describe("Redocly's recommended rules", () => {
  test("report no error on the document, and only the accepted warnings", async () => {
    const problems = await lintOpenApi(doc);
    expect(errorsOf(problems)).toEqual([]);
    const warnings = problems.filter((p) => p.severity === "warn").map((p) => `${p.rule} at ${p.where}`);
    expect(warnings.sort()).toEqual([...ACCEPTED_WARNINGS].sort());
  });

  test("do report an operation without a summary or security (the check can fail)", async () => {
    const broken = structuredClone(doc);
    const login = broken.paths["/v1/auth/login"]?.post as Operation;
    delete login.summary;
    delete login.security;
    const errors = errorsOf(await lintOpenApi(broken));
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^operation-summary at #\/paths\/~1v1~1auth~1login\/post/),
        expect.stringMatching(/^security-defined at #\/paths\/~1v1~1auth~1login\/post/),
      ]),
    );
  });
});

describe("every operation", () => {
  test("has a unique camelCase operationId and a one-line summary", () => {
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(50);
    for (const { name, op } of ops) {
      expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]*$/);
      expect(op.summary, name).toMatch(/^[^\n]{3,80}$/);
    }
    const ids = ops.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("declares its credential: public, the runner's callback token, a provider's webhook secret, or the user's bearer", () => {
    const bySecurity = new Map<string, string[]>();
    for (const { name, op } of operations(doc)) {
      const key = JSON.stringify(op.security);
      bySecurity.set(key, [...(bySecurity.get(key) ?? []), name]);
    }
    expect([...bySecurity.keys()].sort()).toEqual(
      ["[]", '[{"bearer":[]}]', '[{"callbackToken":[]}]', '[{"providerWebhookSecret":[]}]'].sort(),
    );
    expect(bySecurity.get('[{"providerWebhookSecret":[]}]')).toEqual([
      "POST /v1/webhook-receivers/assemblyai/{job_id}",
    ]);
    expect(bySecurity.get("[]")?.sort()).toEqual(
      [
        "POST /v1/auth/register",
        "POST /v1/auth/login",
        "POST /v1/auth/refresh",
        "GET /v1/auth/oauth",
        "GET /v1/auth/oauth/{provider}",
        "GET /v1/auth/oauth/{provider}/callback",
        "GET /v1/share/{token}",
        "GET /v1/share/{token}/stream",
        "GET /v1/recordings/{bot_id}/file",
      ].sort(),
    );
    expect(bySecurity.get('[{"callbackToken":[]}]')?.sort()).toEqual(
      [
        "POST /v1/bot-account-checks/{id}/result",
        "PUT /v1/bot-callbacks/{id}/artifacts/{name}",
        "PUT /v1/bot-callbacks/{id}/login-session",
        "POST /v1/bot-callbacks/{id}/event",
        "GET /v1/bot-callbacks/{id}/commands",
        "GET /v1/bot-callbacks/{id}/output-clips/{clipId}",
        "GET /v1/bot-callbacks/{id}/output-images/{imageId}",
        "PUT /v1/bot-callbacks/{id}/recording",
        "PUT /v1/bot-callbacks/{id}/recording/segments/{seq}",
        "POST /v1/bot-callbacks/{id}/recording/complete",
      ].sort(),
    );
  });
});

describe("servers", () => {
  test("is this server's public base URL, under which the documented paths answer", async () => {
    expect(doc.servers).toEqual([{ url: server.url, description: "This server" }]);
    // What a generated client does: the server's URL, then a documented path.
    const res = await fetch(`${doc.servers?.[0]?.url}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "nobody@example.com", password: "not-the-password" }),
    });
    expect(res.status).toBe(401);
  });

  test("is the same in the document Swagger UI reads", async () => {
    const res = await server.api.get("/docs/json");
    expect(OpenApiDocument.parse(res.body).servers).toEqual(doc.servers);
  });
});

describe("the file routes", () => {
  test.each(["/v1/recordings/{bot_id}/stream", "/v1/recordings/{bot_id}/file", "/v1/share/{token}/stream"])(
    "%s answers 200 or 206 with video/mp4 or audio/mp4 (an audio-only recording), and 416 past the end",
    (path) => {
      const { responses } = doc.paths[path]?.get as Operation;
      for (const status of ["200", "206"]) {
        expect(responses[status]?.content, `${status}`).toEqual({
          "video/mp4": { schema: { type: "string", format: "binary" } },
          "audio/mp4": { schema: { type: "string", format: "binary" } },
        });
      }
      expect(responses["416"]).toMatchObject({
        headers: { "Content-Range": expect.any(Object) },
        content: { "application/json": expect.any(Object) },
      });
    },
  );

  test("a bot's artifact answers 200 with the file's type", () => {
    const { responses } = doc.paths["/v1/bots/{id}/artifacts/{name}"]?.get as Operation;
    expect(Object.keys(responses["200"]?.content ?? {}).sort()).toEqual(
      ["application/zip", "image/png", "text/plain"].sort(),
    );
  });
});

describe("a TypeScript client generated with openapi-typescript", () => {
  // Uses the generated types the way a client does: request bodies, JSON answers, a file answer.
  const USAGE = `
import type { operations, paths } from "./api.js";

type CreateBot = NonNullable<operations["createBot"]["requestBody"]>["content"]["application/json"];
type BotList = operations["listBots"]["responses"][200]["content"]["application/json"];
type Login = paths["/v1/auth/login"]["post"]["requestBody"];
type Stream = operations["getRecordingStream"]["responses"][206]["content"]["video/mp4"];

export const body: CreateBot = { meetingInfo: { platform: "zoom", meetingUrl: "https://zoom.us/j/1" } };
export const firstId = (list: BotList): number | undefined => list.bots[0]?.id;
export const login: Login = { content: { "application/json": { email: "a@b.c", password: "p" } } };
export const bytes = (stream: Stream): string => stream;
`;

  test("compiles, with the operations used as a client uses them", async () => {
    expect(await compileGeneratedClient(doc, USAGE)).toEqual([]);
  });

  test("does not compile a use the document does not allow (the check can fail)", async () => {
    const diagnostics = await compileGeneratedClient(
      doc,
      `${USAGE}\nexport const bad: BotList = { bots: "none" };`,
    );
    expect(diagnostics.join("\n")).toMatch(/not assignable/);
  });
});
