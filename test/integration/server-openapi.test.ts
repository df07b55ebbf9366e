// Own server (startBuiltApp), not the fixture: checked against Fastify's own route table.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuiltApp, startBuiltApp } from "../helpers/built-app.js";
import {
  checkPathParamTypes,
  type JsonSchema,
  OpenApiDocument,
  type OpenApiOperation,
} from "../helpers/openapi-tools.js";
import { deployedBot, registerUser, TEST_MEETING, type BotApiBody } from "../helpers/server-harness.js";

/**
 * /openapi.json is generated from the routes' own zod schemas; /docs and /redoc are served from
 * installed packages by this server. Checked against Fastify's own route table.
 */

let server: BuiltApp;
let doc: OpenApiDocument;
beforeAll(async () => {
  server = await startBuiltApp();
  const res = await server.api.get("/openapi.json");
  expect(res.status).toBe(200);
  doc = OpenApiDocument.parse(res.body);
});

/** The documented operation `method` (lower case) of `path`; throws when there is none. */
function op(path: string, method: string): OpenApiOperation {
  const operation = doc.paths[path]?.[method];
  if (!operation) throw new Error(`${method} ${path} is not documented`);
  return operation;
}

/** The JSON schema of a request body or an answer, when it has one. */
const json = (o: { content?: Record<string, { schema?: JsonSchema }> } | undefined) =>
  o?.content?.["application/json"]?.schema;
afterAll(() => server?.close());

/** Every (method, url) Fastify routes, read from its route tree (HEAD is Fastify's GET twin). */
const WEBSOCKETS = new Set(["/v1/bots/:id/live/ws"]);

function registeredRoutes(): { method: string; url: string }[] {
  const routes: { method: string; url: string }[] = [];
  const segments: string[] = [];
  for (const line of server.app.printRoutes({ commonPrefix: false }).split("\n")) {
    const match = /^(.*?)(?:├──|└──) (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] as string).length / 4;
    segments.length = depth;
    segments.push(match[2] as string);
    for (const method of (match[3] ?? "").split(", ").filter(Boolean)) {
      if (method !== "HEAD") routes.push({ method, url: segments.join("") });
    }
  }
  return routes;
}

/** Fastify's "/v1/bots/:id" is OpenAPI's "/v1/bots/{id}". */
const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

describe("/openapi.json", () => {
  it("documents every /v1 route Fastify has, with its method, and nothing else", async () => {
    // The live stream's WebSocket is no HTTP operation OpenAPI 3 can describe: docs/api.md has it.
    const routes = registeredRoutes().filter((r) => r.url.startsWith("/v1/") && !WEBSOCKETS.has(r.url));
    expect(routes.length).toBeGreaterThan(20);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(routes.map((r) => `${r.method} ${toOpenApiPath(r.url)}`).sort());
  });

  it("answers the same routes under /api/v1 without listing them twice", async () => {
    const v1 = registeredRoutes().filter((r) => r.url.startsWith("/v1/"));
    const sandbox = registeredRoutes().filter((r) => r.url.startsWith("/api/v1/"));
    expect(sandbox.map((r) => `${r.method} ${r.url.slice(4)}`).sort()).toEqual(
      v1.map((r) => `${r.method} ${r.url}`).sort(),
    );
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith("/v1/"))).toEqual([]);
  });

  it("marks the authenticated routes with the bearer scheme, the public ones with none", () => {
    expect(doc.components?.securitySchemes?.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    for (const [path, method] of [
      ["/v1/bots", "get"],
      ["/v1/bots/{id}", "get"],
      ["/v1/users/me", "patch"],
      ["/v1/api-keys/{id}/usage", "get"],
    ]) {
      expect(op(path as string, method as string).security, `${method} ${path}`).toEqual([{ bearer: [] }]);
    }
    for (const [path, method] of [
      ["/v1/auth/login", "post"],
      ["/v1/auth/register", "post"],
      ["/v1/recordings/{bot_id}/file", "get"],
    ]) {
      expect(op(path as string, method as string).security, `${method} ${path}`).toEqual([]);
    }
    // The runners' callbacks have a credential of their own.
    expect(op("/v1/bot-callbacks/{id}/event", "post").security).toEqual([{ callbackToken: [] }]);
  });

  it("carries the zod rules the routes validate with", () => {
    const pageSize = op("/v1/bots", "get").parameters?.find((p) => p.name === "page_size");
    expect(pageSize).toMatchObject({ in: "query", schema: { type: "integer", minimum: 1, maximum: 100 } });
    const body = json(op("/v1/bots", "post").requestBody);
    expect(body?.required).toContain("meetingInfo");
    expect(body?.properties?.meetingInfo?.properties?.platform?.enum).toEqual(["google", "zoom", "teams"]);
    const profile = json(op("/v1/users/me", "get").responses["200"]);
    expect(Object.keys(profile?.properties ?? {})).toEqual(
      expect.arrayContaining(["id", "email", "name", "createdAt", "hasPassword", "oauthProviders"]),
    );
  });

  it("documents commands: asked by the owner (202), fetched by the runner with its token", () => {
    expect(op("/v1/bots/{id}/leave", "post").security).toEqual([{ bearer: [] }]);
    expect(Object.keys(op("/v1/bots/{id}/leave", "post").responses)).toContain("202");
    expect(op("/v1/bots/{id}/commands/{commandId}", "get").security).toEqual([{ bearer: [] }]);
    expect(op("/v1/bot-callbacks/{id}/commands", "get").security).toEqual([{ callbackToken: [] }]);
    // Results come as `command.result` events, in order with the runner's other reports.
    expect(doc.paths["/v1/bot-callbacks/{id}/commands/{commandId}/result"]).toBeUndefined();
  });

  it("documents a bot that speaks: JSON text, a binary audio file, the clip the runner fetches", () => {
    const speak = op("/v1/bots/{id}/speak", "post");
    expect(speak).toMatchObject({ operationId: "speak", security: [{ bearer: [] }] });
    expect(json(speak.requestBody)).toMatchObject({
      required: ["text"],
      properties: { text: { type: "string", minLength: 1, maxLength: 4096 }, voice: { type: "string" } },
    });
    expect(Object.keys(speak.responses)).toContain("202");
    const play = op("/v1/bots/{id}/output-audio", "post");
    expect(play).toMatchObject({ operationId: "playOutputAudio", security: [{ bearer: [] }] });
    expect(play.requestBody?.required).toBe(true);
    expect(Object.keys(play.requestBody?.content ?? {})).toEqual([
      "audio/wav",
      "audio/x-wav",
      "audio/wave",
      "audio/mpeg",
      "audio/mp3",
      "audio/ogg",
      "application/ogg",
    ]);
    expect(play.requestBody?.content["audio/mpeg"]?.schema).toMatchObject({
      type: "string",
      format: "binary",
    });
    expect(op("/v1/bots/{id}/output-audio", "delete")).toMatchObject({
      operationId: "stopOutputAudio",
      security: [{ bearer: [] }],
    });
    const clip = op("/v1/bot-callbacks/{id}/output-clips/{clipId}", "get");
    expect(clip).toMatchObject({ operationId: "fetchOutputClip", security: [{ callbackToken: [] }] });
    expect(clip.responses["200"]?.content).toEqual({
      "audio/wav": { schema: { type: "string", format: "binary" } },
    });
  });

  it("documents bot accounts and signed-in bots, never with a session in an answer", () => {
    expect(op("/v1/bot-accounts", "post").security).toEqual([{ bearer: [] }]);
    expect(op("/v1/bot-accounts/{id}", "patch").security).toEqual([{ bearer: [] }]);
    expect(op("/v1/bot-callbacks/{id}/login-session", "put").security).toEqual([{ callbackToken: [] }]);
    // Account checks: asked for by the owner, answered by the check's runner with its own token.
    expect(op("/v1/bot-accounts/{id}/check", "post").security).toEqual([{ bearer: [] }]);
    expect(Object.keys(op("/v1/bot-accounts/{id}/check", "post").responses)).toContain("202");
    expect(op("/v1/bot-account-checks/{id}/result", "post").security).toEqual([{ callbackToken: [] }]);
    const created = op("/v1/bot-accounts", "post");
    expect(json(created.requestBody)).toMatchObject({
      required: expect.arrayContaining(["platform", "name", "session"]),
    });
    const account = json(created.responses["201"]);
    expect(Object.keys(account?.properties ?? {})).not.toContain("session");
    expect(account?.properties?.status?.enum).toEqual(["unchecked", "active", "expired", "disabled"]);
    for (const [path, method, status] of [
      ["/v1/bot-accounts", "get", "200"],
      ["/v1/bot-accounts/{id}", "get", "200"],
      ["/v1/bot-accounts/{id}", "patch", "200"],
      ["/v1/bots/{id}", "get", "200"],
      ["/v1/bot-callbacks/{id}/login-session", "put", "200"],
    ] as const) {
      expect(JSON.stringify(json(op(path, method).responses[status])), `${method} ${path}`).not.toMatch(
        /"session"|cookies/,
      );
    }
    const bot = json(op("/v1/bots/{id}", "get").responses["200"]);
    expect(bot?.properties?.login).toBeDefined();
    expect(bot?.properties?.deploymentError?.properties?.code?.enum).toEqual(
      expect.arrayContaining(["SIGN_IN_REQUIRED", "BOT_BLOCKED", "SESSION_EXPIRED", "LOGIN_UNAVAILABLE"]),
    );
  });

  it("types every path parameter its route takes as an integer as an integer, and only those", async () => {
    const user = await registerUser(server.api);
    const { botId, config } = await deployedBot(server, user);
    const { mismatches, integers, others } = await checkPathParamTypes(doc, server.url, {
      bearer: user.token,
      callback: { botId, token: config.callback.token },
      headers: {
        "PUT /v1/bot-callbacks/{id}/recording/segments/{seq}": { "content-type": "video/mp4" },
        "POST /v1/bots/{id}/output-audio": { "content-type": "audio/wav" },
        "POST /v1/bots/{id}/output-image": { "content-type": "image/png" },
      },
    });
    expect(mismatches).toEqual([]);
    // Both kinds were met: bot, key, webhook, delivery and job ids, segment numbers; tokens, names.
    expect(integers).toBeGreaterThan(30);
    expect(others).toBeGreaterThanOrEqual(5);
    const bot = op("/v1/bots/{id}", "get").parameters?.[0];
    expect(bot).toMatchObject({ in: "path", name: "id", schema: { type: "integer", minimum: 1 } });
  });

  it("makes a request body optional where the route takes none (nullable), required elsewhere", () => {
    const body = (path: string) => op(path, "post").requestBody;
    for (const path of [
      "/v1/recordings/{bot_id}/share",
      "/v1/transcripts/{bot_id}/transcribe",
      "/v1/summaries/{bot_id}/summarize",
    ]) {
      expect(body(path)?.required, path).toBe(false);
      expect(json(body(path))?.nullable, path).toBe(true);
    }
    expect(body("/v1/bots")?.required).toBe(true);
  });

  it("documents the spec's error bodies as every operation's 4XX answer", () => {
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        expect(op.responses["4XX"]).toMatchObject({
          content: { "application/json": { schema: { required: ["detail"] } } },
        });
      }
    }
  });
});

describe("the sandbox prefix", () => {
  it("is the same API: a bot created under /api/v1 is listed under /v1", async () => {
    const user = await registerUser(server.api);
    // /api/v1 is the same API as /v1: its answer has the /v1 route's type.
    const created = await server.api.request<BotApiBody<"POST", "/v1/bots">>("POST", "/api/v1/bots", {
      token: user.token,
      body: { meetingInfo: TEST_MEETING },
    });
    expect(created.status).toBe(201);
    const listed = await server.api.get("/v1/bots", { token: user.token });
    expect(listed.body.bots.map((b) => b.id)).toEqual([created.body.id]);
    expect((await server.api.get("/api/v1/bots")).status).toBe(401);
  });
});

describe("the documentation pages", () => {
  /** Fetches a page and every script and stylesheet it links, from this server only. */
  async function pageAndAssets(path: string) {
    const page = await fetch(new URL(path, server.url));
    const html = await page.text();
    const links = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)="([^"]+)"/g)].map(
      (m) => m[1] as string,
    );
    const assets = await Promise.all(
      links.map(async (link) => {
        const url = new URL(link, page.url);
        const res = await fetch(url);
        await res.arrayBuffer();
        return { url, status: res.status, type: res.headers.get("content-type") ?? "" };
      }),
    );
    return { page, html, assets };
  }

  it("/docs is Swagger UI with its scripts and styles served here, limited to this origin", async () => {
    const { page, html, assets } = await pageAndAssets("/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toMatch(/^default-src 'self'/);
    expect(html).toContain("swagger-ui");
    const scripts = assets.filter((a) => a.url.pathname.endsWith(".js"));
    const styles = assets.filter((a) => a.url.pathname.endsWith(".css"));
    expect(scripts.length).toBeGreaterThanOrEqual(3);
    expect(styles.length).toBeGreaterThanOrEqual(1);
    for (const asset of assets) {
      expect(asset.url.origin, asset.url.href).toBe(server.url);
      expect(asset.status, asset.url.href).toBe(200);
    }
    for (const script of scripts) expect(script.type).toMatch(/^(application|text)\/javascript/);
    for (const style of styles) expect(style.type).toMatch(/^text\/css/);

    const spec = await server.api.request<{ paths: unknown }>("GET", "/docs/json");
    expect(spec.status).toBe(200);
    expect(spec.body.paths).toEqual(doc.paths);
  });

  it("/redoc is ReDoc's standalone bundle from node_modules, reading /openapi.json", async () => {
    const { page, html, assets } = await pageAndAssets("/redoc");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toMatch(/^default-src 'self'/);
    expect(html).toContain('<redoc spec-url="openapi.json">');
    expect(assets).toEqual([
      {
        url: new URL("/redoc/redoc.standalone.js", server.url),
        status: 200,
        type: expect.stringMatching(/^text\/javascript/),
      },
    ]);
    const bundle = await fetch(new URL("/redoc/redoc.standalone.js", server.url));
    expect(Number(bundle.headers.get("content-length"))).toBeGreaterThan(500_000);
    expect(await bundle.text()).toContain("Redoc");
  });
});
