import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  type Api,
  deployedBot,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";

/**
 * One table of every authenticated route, run against every bad credential and a foreign owner,
 * so that no route can forget its guard or its ownership check.
 */
type Route = { method: "get" | "post"; path: (botId: number) => string; body?: unknown; ownsBot: boolean };

const ROUTES: Route[] = [
  { method: "get", path: () => "/v1/bots", ownsBot: false },
  {
    method: "post",
    path: () => "/v1/bots",
    body: { meetingInfo: { platform: "zoom", meetingId: "1" } },
    ownsBot: false,
  },
  { method: "get", path: (id) => `/v1/bots/${id}`, ownsBot: true },
  { method: "post", path: (id) => `/v1/bots/${id}/deploy`, ownsBot: true },
  { method: "get", path: (id) => `/v1/bots/${id}/events`, ownsBot: true },
  { method: "get", path: (id) => `/v1/bots/${id}/logs`, ownsBot: true },
  { method: "get", path: () => "/v1/events", ownsBot: false },
  { method: "get", path: (id) => `/v1/recordings/${id}`, ownsBot: true },
  { method: "get", path: (id) => `/v1/recordings/${id}/download`, ownsBot: true },
];

let server: TestServer;
let owner: TestUser;
let stranger: TestUser;
let botId: number;
let badTokens: [string, string | undefined][];

beforeAll(async () => {
  server = await startTestServer();
  owner = await registerUser(server.api);
  stranger = await registerUser(server.api);
  const bot = await deployedBot(server, owner);
  botId = bot.botId;
  await bot.runner.upload(new Uint8Array(1000), 1000);
  const secret = await loadServerSecret(server.dataDir);
  const ownerId = Number(owner.userId.slice(4));
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
  ];
});
afterAll(() => server?.close());

const call = (api: Api, route: Route, token: string | undefined) =>
  api[route.method](route.path(botId), {
    ...(token === undefined ? {} : { token }),
    ...(route.body === undefined ? {} : { body: route.body }),
  });

describe("every authenticated route", () => {
  it("answers 401 {detail} to each bad credential", async () => {
    for (const route of ROUTES) {
      for (const [what, token] of badTokens) {
        const res = await call(server.api, route, token);
        expect(res.status, `${route.method} ${route.path(botId)} with ${what}`).toBe(401);
        expect(typeof res.body.detail).toBe("string");
      }
    }
  });

  it("answers 404 Bot not found / Not found for another user's bot, exactly like a missing one", async () => {
    for (const route of ROUTES.filter((r) => r.ownsBot)) {
      const foreign = await call(server.api, route, stranger.token);
      const missing = await server.api[route.method](route.path(999_999), { token: stranger.token });
      expect(foreign.status, `${route.method} ${route.path(botId)}`).toBe(404);
      expect(foreign.body, route.path(botId)).toEqual(missing.body);
    }
    // and the stranger changed nothing: the bot is still the owner's, still deployed once
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: owner.token });
    expect(bot.body.status).toBe("DEPLOYING");
    expect(server.launcher.launched.filter((c) => c.botId === botId)).toHaveLength(1);
  });
});
