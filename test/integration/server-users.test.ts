import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  deployedBot,
  registerUser,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  mp4Bytes,
  validationIssues,
  errorDetail,
  defined,
} from "../helpers/server-harness.js";

test.override("serverOptions", { rateLimit: { perMinute: 0, perHour: 0 } });

// The file's helpers read this: the file's server.
let server: TestServer;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const today = () => new Date().toISOString().slice(0, 10);
const idOf = (user: TestUser) => Number(user.userId.slice(4));

describe("GET /v1/users/me", () => {
  test("returns the caller's profile", async () => {
    const user = await registerUser(server.api, "Ada Lovelace");
    const res = await server.api.get("/v1/users/me", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: idOf(user),
      email: user.email,
      name: "Ada Lovelace",
      createdAt: expect.stringMatching(ISO),
      hasPassword: true,
      oauthProviders: [],
    });
  });
});

describe("PATCH /v1/users/me", () => {
  test("changes the name", async () => {
    const user = await registerUser(server.api);
    const res = await server.api.patch("/v1/users/me", { token: user.token, body: { name: "  New Name " } });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("New Name");
    expect((await server.api.get("/v1/users/me", { token: user.token })).body.name).toBe("New Name");
    const login = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(login.body.name).toBe("New Name");
  });

  test("changes the password only with the current one", async () => {
    const user = await registerUser(server.api);
    const wrong = await server.api.patch("/v1/users/me", {
      token: user.token,
      body: { password: "a whole new secret", currentPassword: "not the password" },
    });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ detail: "Current password is incorrect" });

    const missing = await server.api.patch("/v1/users/me", {
      token: user.token,
      body: { password: "a whole new secret" },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toEqual([
      { loc: ["body", "currentPassword"], msg: "Field required", type: "missing" },
    ]);

    const ok = await server.api.patch("/v1/users/me", {
      token: user.token,
      body: { password: "a whole new secret", currentPassword: user.password },
    });
    expect(ok.status).toBe(200);
    const login = (password: string) =>
      server.api.post("/v1/auth/login", { body: { email: user.email, password } });
    expect((await login(user.password)).status).toBe(401);
    expect((await login("a whole new secret")).status).toBe(200);
  });

  test("ends every session with a password change, and answers a new sign-in's tokens", async () => {
    const user = await registerUser(server.api);
    const other = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    const refresh = (token: string) =>
      server.api.post("/v1/auth/refresh", { body: { refresh_token: token } });
    const me = async (token: string) => (await server.api.get("/v1/users/me", { token })).status;

    // Neither a name change nor a refused password change ends anything.
    const renamed = await server.api.patch("/v1/users/me", { token: user.token, body: { name: "Renamed" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.access_token).toBeUndefined();
    const refused = await server.api.patch("/v1/users/me", {
      token: user.token,
      body: { password: "a whole new secret", currentPassword: "wrong" },
    });
    expect(refused.status).toBe(403);
    expect(await me(user.token)).toBe(200);

    const changed = await server.api.patch("/v1/users/me", {
      token: user.token,
      body: { password: "a whole new secret", currentPassword: user.password },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id: idOf(user), name: "Renamed", token_type: "bearer" });
    // Every token issued before, of every sign-in, the caller's included, is refused.
    for (const token of [user.token, other.body.access_token]) expect(await me(token)).toBe(401);
    for (const token of [user.refreshToken, other.body.refresh_token]) {
      const res = await refresh(token);
      expect(res.status).toBe(401);
      expect(typeof res.body.detail).toBe("string");
    }
    // The answer's tokens work (issued in the same second as the change, after it), and rotate.
    // A password change answers with fresh tokens (optional in the schema: other changes do not).
    expect(await me(defined(changed.body.access_token, "access_token"))).toBe(200);
    const rotated = await refresh(defined(changed.body.refresh_token, "refresh_token"));
    expect(rotated.status).toBe(200);
    expect(await me(rotated.body.access_token)).toBe(200);
    // So does a new login with the new password.
    const fresh = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: "a whole new secret" },
    });
    expect(await me(fresh.body.access_token)).toBe(200);
  });

  test("refuses an e-mail change, unknown fields and invalid values with 422, changing nothing", async () => {
    const user = await registerUser(server.api, "Unchanged");
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ email: "someone-else@example.com" }, ["body", "email"]],
      [{ name: "" }, ["body", "name"]],
      [{ name: "x".repeat(201) }, ["body", "name"]],
      [{ password: "short", currentPassword: user.password }, ["body", "password"]],
      [{ name: "Ok", nickname: "typo" }, ["body"]],
    ];
    for (const [body, loc] of cases) {
      const res = await server.api.patch("/v1/users/me", { token: user.token, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(validationIssues(res.body)[0]?.loc, JSON.stringify(body)).toEqual(loc);
    }
    const profile = await server.api.get("/v1/users/me", { token: user.token });
    expect(profile.body).toMatchObject({ name: "Unchanged", email: user.email });
  });
});

describe("GET /v1/users/me/usage and /analytics", () => {
  let user: TestUser;
  let requestsBefore: number;
  test.beforeAll(async () => {
    user = await registerUser(server.api);
    await server.api.post("/v1/bots", { token: user.token, body: { meetingInfo: TEST_MEETING } });
    const failed = await deployedBot(server, user);
    expect((await failed.runner.status("FATAL", { subCode: "JOIN_FAILED" })).status).toBe(200);
    const recorded = await deployedBot(server, user);
    expect((await recorded.runner.upload(mp4Bytes(4_000), 90_000)).status).toBe(201);
    requestsBefore = 5; // the create, and create + deploy twice
  });

  test("usage counts this month's bots by status, recorded minutes and API requests", async () => {
    const res = await server.api.get("/v1/users/me/usage", { token: user.token });
    expect(res.status).toBe(200);
    const month = new Date().toISOString().slice(0, 7);
    expect(res.body).toEqual({
      period: {
        name: month,
        start: `${month}-01T00:00:00.000Z`,
        end: expect.stringMatching(/^\d{4}-\d\d-01T00:00:00\.000Z$/),
      },
      bots: {
        created: 3,
        byStatus: {
          READY_TO_DEPLOY: 1,
          DEPLOYING: 1,
          JOINING_CALL: 0,
          IN_WAITING_ROOM: 0,
          IN_CALL: 0,
          CALL_ENDED: 0,
          DONE: 0,
          FATAL: 1,
        },
      },
      recordings: { count: 1, recordedMinutes: 1.5 },
      apiRequests: requestsBefore,
    });
  });

  test("usage of another month is that month's (empty here)", async () => {
    const res = await server.api.get("/v1/users/me/usage?period=2000-02", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.period).toEqual({
      name: "2000-02",
      start: "2000-02-01T00:00:00.000Z",
      end: "2000-03-01T00:00:00.000Z",
    });
    expect(res.body.bots.created).toBe(0);
    expect(res.body.recordings).toEqual({ count: 0, recordedMinutes: 0 });
    expect(res.body.apiRequests).toBe(0);
    expect((await server.api.get("/v1/users/me/usage?period=2000-2", { token: user.token })).status).toBe(
      422,
    );
  });

  test("usage refuses a period before 1970 (years 0000-0099 were read as 1900-1999)", async () => {
    for (const period of ["0050-03", "0000-01", "1969-12"]) {
      const res = await server.api.get(`/v1/users/me/usage?period=${period}`, { token: user.token });
      expect([period, res.status, res.body]).toEqual([
        period,
        422,
        { detail: [{ loc: ["query", "period"], msg: "must be 1970-01 or later", type: "value_error" }] },
      ]);
    }
    const first = await server.api.get("/v1/users/me/usage?period=1970-01", { token: user.token });
    expect(first.body.period).toMatchObject({ name: "1970-01", start: "1970-01-01T00:00:00.000Z" });
  });

  test("analytics gives one entry per UTC day, 30 days ending today by default", async () => {
    const res = await server.api.get("/v1/users/me/analytics", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.days).toHaveLength(30);
    expect(res.body.end).toBe(today());
    expect(res.body.start).toBe(res.body.days[0]?.date);
    const last = defined(res.body.days[29], "today");
    expect(last).toEqual({
      date: today(),
      botsCreated: 3,
      recordedMinutes: 1.5,
      failures: { JOIN_FAILED: 1 },
      apiRequests: expect.any(Number),
    });
    expect(last.apiRequests).toBeGreaterThanOrEqual(requestsBefore);
    for (const day of res.body.days.slice(0, 29)) expect(day.botsCreated).toBe(0);
    expect(res.body.totals).toEqual({
      botsCreated: 3,
      recordedMinutes: 1.5,
      failures: { JOIN_FAILED: 1 },
      apiRequests: last.apiRequests,
    });
  });

  test("analytics takes days, or start and end (inclusive)", async () => {
    const week = await server.api.get("/v1/users/me/analytics?days=7", { token: user.token });
    expect(week.body.days).toHaveLength(7);
    const leap = await server.api.get("/v1/users/me/analytics?start=2024-02-27&end=2024-03-01", {
      token: user.token,
    });
    expect(leap.status).toBe(200);
    expect(leap.body.days.map((d: { date: string }) => d.date)).toEqual([
      "2024-02-27",
      "2024-02-28",
      "2024-02-29",
      "2024-03-01",
    ]);
    expect(leap.body.totals).toEqual({ botsCreated: 0, recordedMinutes: 0, failures: {}, apiRequests: 0 });
  });

  test("analytics refuses contradictory or too long ranges with 422", async () => {
    const cases: [string, string][] = [
      ["?start=2024-01-01&days=3", "days"],
      ["?start=2024-03-02&end=2024-03-01", "start"],
      ["?start=2020-01-01&end=2024-01-01", "start"],
      ["?end=2024-02-30", "end"],
      ["?days=367", "days"],
      // Years 0000-0099 were read as 1900-1999.
      ["?start=0099-01-01&end=0099-01-02", "start"],
      ["?end=0050-06-01", "end"],
    ];
    for (const [query, name] of cases) {
      const res = await server.api.get(`/v1/users/me/analytics${query}`, { token: user.token });
      expect(res.status, query).toBe(422);
      expect(validationIssues(res.body)[0]?.loc, query).toEqual(["query", name]);
    }
  });

  test("counts only the caller's own bots", async () => {
    const stranger = await registerUser(server.api);
    const usage = await server.api.get("/v1/users/me/usage", { token: stranger.token });
    expect(usage.body.bots.created).toBe(0);
    expect(usage.body.recordings.count).toBe(0);
    const analytics = await server.api.get("/v1/users/me/analytics?days=1", { token: stranger.token });
    expect(analytics.body.totals).toMatchObject({ botsCreated: 0, recordedMinutes: 0, failures: {} });
  });
});

describe("the users group's security", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/v1/users/me"],
    ["PATCH", "/v1/users/me", { name: "Mallory" }],
    ["GET", "/v1/users/me/usage"],
    ["GET", "/v1/users/me/analytics"],
    ["GET", "/v1/users/me/api-logs"],
  ];

  test("answers 401 without a credential, with an expired token and with a refresh token", async () => {
    const user = await registerUser(server.api, "Victim");
    const expired = await new JwtIssuer(await loadServerSecret(server.dataDir)).sign(
      idOf(user),
      "access",
      new Date(Date.now() - 2 * 3_600_000),
    );
    for (const [method, path, body] of routes) {
      for (const token of [undefined, expired, user.refreshToken]) {
        const res = await server.api.request(method, path, {
          ...(token === undefined ? {} : { token }),
          ...(body === undefined ? {} : { body }),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(typeof errorDetail(res.body)).toBe("string");
      }
    }
    expect((await server.api.get("/v1/users/me", { token: user.token })).body.name).toBe("Victim");
  });

  test("acts on the caller only: a PATCH by one user leaves another's profile alone", async () => {
    const alice = await registerUser(server.api, "Alice");
    const bob = await registerUser(server.api, "Bob");
    await server.api.patch("/v1/users/me", { token: bob.token, body: { name: "Bobby" } });
    expect((await server.api.get("/v1/users/me", { token: alice.token })).body).toMatchObject({
      id: idOf(alice),
      name: "Alice",
    });
  });
});
