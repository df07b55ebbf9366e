import { describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  type Api,
  deployedBot,
  registerUser,
  type TestServer,
  type TestUser,
  mp4Bytes,
  errorDetail,
} from "../helpers/server-harness.js";

/**
 * No route can forget its guard or its ownership check: the guard is checked on every route the
 * OpenAPI document (built from the route table) marks as authenticated, with every bad credential;
 * ownership on every route that takes a bot id.
 */

/**
 * The only routes without the bearer guard: auth itself, the runner's (and an account check's:
 * their own tokens), the signed file link, share links, and the transcription provider's webhook
 * (its job's secret header).
 */
const PUBLIC_ROUTES = [
  "POST /v1/auth/register",
  "POST /v1/auth/login",
  "POST /v1/auth/refresh",
  "GET /v1/auth/oauth",
  "GET /v1/auth/oauth/{provider}",
  "GET /v1/auth/oauth/{provider}/callback",
  "POST /v1/bot-account-checks/{id}/result",
  "POST /v1/bot-callbacks/{id}/event",
  "GET /v1/bot-callbacks/{id}/commands",
  "PUT /v1/bot-callbacks/{id}/recording",
  "PUT /v1/bot-callbacks/{id}/recording/segments/{seq}",
  "POST /v1/bot-callbacks/{id}/recording/complete",
  "PUT /v1/bot-callbacks/{id}/artifacts/{name}",
  "PUT /v1/bot-callbacks/{id}/login-session",
  "GET /v1/bot-callbacks/{id}/output-clips/{clipId}",
  "GET /v1/bot-callbacks/{id}/output-images/{imageId}",
  "GET /v1/recordings/{bot_id}/file",
  "GET /v1/share/{token}",
  "GET /v1/share/{token}/stream",
  "POST /v1/webhook-receivers/assemblyai/{job_id}",
];

type Method = "get" | "post" | "patch" | "delete";
/** `body` is sent as JSON; `file`, as it is with its content type. */
type Route = {
  method: Method;
  path: (botId: number) => string;
  body?: unknown;
  file?: { type: string; bytes: Uint8Array };
};

/** Every route that takes a bot id (a foreign bot must look exactly like a missing one). */
const BOT_ROUTES: Route[] = [
  { method: "get", path: (id) => `/v1/bots/${id}` },
  { method: "get", path: (id) => `/api/v1/bots/${id}` },
  { method: "patch", path: (id) => `/v1/bots/${id}`, body: { meetingTitle: "hijacked" } },
  { method: "post", path: (id) => `/v1/bots/${id}/deploy` },
  { method: "post", path: (id) => `/v1/bots/${id}/kill` },
  { method: "get", path: (id) => `/v1/bots/${id}/events` },
  { method: "get", path: (id) => `/v1/bots/${id}/logs` },
  { method: "get", path: (id) => `/v1/bots/${id}/artifacts/failure.png` },
  { method: "get", path: (id) => `/v1/recordings/${id}` },
  { method: "get", path: (id) => `/v1/recordings/${id}/download` },
  { method: "get", path: (id) => `/v1/recordings/${id}/stream` },
  { method: "post", path: (id) => `/v1/recordings/${id}/share`, body: {} },
  { method: "get", path: (id) => `/v1/recordings/${id}/share` },
  { method: "delete", path: (id) => `/v1/recordings/${id}/share` },
  { method: "delete", path: (id) => `/v1/recordings/${id}` },
  { method: "post", path: (id) => `/v1/bots/${id}/speak`, body: { text: "hijacked" } },
  {
    method: "post",
    path: (id) => `/v1/bots/${id}/output-audio`,
    file: { type: "audio/wav", bytes: new TextEncoder().encode("RIFF") },
  },
  { method: "delete", path: (id) => `/v1/bots/${id}/output-audio` },
  { method: "delete", path: (id) => `/v1/bots/${id}` },
];

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
let botId: number;
let badTokens: [string, string | undefined][];
let documented: { method: string; path: string; authenticated: boolean }[];

test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api);
  const bot = await deployedBot(server, owner);
  botId = bot.botId;
  await bot.runner.upload(mp4Bytes(1000), 1000);
  const secret = await loadServerSecret(server.dataDir);
  const ownerId = Number(owner.userId.slice(4));
  const key = await server.api.post("/v1/api-keys", { token: owner.token, body: { name: "revoked" } });
  await server.api.delete(`/v1/api-keys/${key.body.id}`, { token: owner.token });
  // A second sign-in of the owner, ended by a reused refresh token.
  const ended = await server.api.post("/v1/auth/login", {
    body: { email: owner.email, password: owner.password },
  });
  for (let i = 0; i < 2; i++) {
    await server.api.post("/v1/auth/refresh", { body: { refresh_token: ended.body.refresh_token } });
  }
  badTokens = [
    ["no token", undefined],
    ["garbage", "garbage.token.here"],
    ["refresh token", owner.refreshToken],
    [
      "expired access token",
      await new JwtIssuer(secret).sign(ownerId, "access", new Date(Date.now() - 7_200_000)),
    ],
    ["token signed with another secret", await new JwtIssuer(Buffer.alloc(32, 1)).sign(ownerId, "access")],
    ["callback token", bot.config.callback.token],
    ["revoked API key", key.body.key],
    ["access token of an ended sign-in", ended.body.access_token],
  ];
  const doc = (await server.api.get("/openapi.json")).body as {
    paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
  };
  documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      // The user's bearer credential (public routes say `[]`, the runners' their callbackToken).
      authenticated: op.security?.some((scheme) => "bearer" in scheme) ?? false,
    })),
  );
});

const call = (api: Api, route: Route, token: string | undefined, id = botId) =>
  api[route.method](route.path(id), {
    ...(token === undefined ? {} : { token }),
    ...(route.body === undefined ? {} : { body: route.body }),
    ...(route.file === undefined
      ? {}
      : { rawBody: route.file.bytes, headers: { "content-type": route.file.type } }),
  });

describe("every authenticated route", () => {
  test("is every route but the known public ones", () => {
    const publicRoutes = documented.filter((r) => !r.authenticated).map((r) => `${r.method} ${r.path}`);
    expect(publicRoutes.sort()).toEqual([...PUBLIC_ROUTES].sort());
    expect(documented.filter((r) => r.authenticated).length).toBeGreaterThan(20);
  });

  test("answers 401 {detail} to each bad credential, under /v1 and /api/v1", async () => {
    for (const route of documented.filter((r) => r.authenticated)) {
      const path = route.path.replace(/\{[a-z_]+\}/g, (name) =>
        name === "{name}" ? "failure.png" : String(botId),
      );
      for (const prefix of ["", "/api"]) {
        for (const [what, token] of badTokens) {
          const res = await server.api.request(route.method, `${prefix}${path}`, {
            ...(token === undefined ? {} : { token }),
            ...(route.method === "GET" || route.method === "DELETE" ? {} : { body: {} }),
          });
          expect(res.status, `${route.method} ${prefix}${path} with ${what}`).toBe(401);
          expect(typeof errorDetail(res.body)).toBe("string");
        }
      }
    }
  });

  test("answers 404 for another user's bot, exactly like a missing one, and changes nothing", async () => {
    for (const route of BOT_ROUTES) {
      const foreign = await call(server.api, route, stranger.token);
      const missing = await call(server.api, route, stranger.token, 999_999);
      expect(foreign.status, `${route.method} ${route.path(botId)}`).toBe(404);
      expect(foreign.body, route.path(botId)).toEqual(missing.body);
    }
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body).toMatchObject({ status: "DEPLOYING", meetingTitle: "Weekly sync" });
    expect(server.launcher.launched.filter((c) => c.botId === botId)).toHaveLength(1);
    expect(server.launcher.stopped).not.toContain(botId);
  });
});
