import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
} from "../helpers/server-harness.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const newEmail = () => `auth-${Math.random().toString(36).slice(2)}@example.com`;

describe("POST /v1/auth/register", () => {
  it("creates the account and answers the authentication result with a prefixed user_id", async () => {
    const email = newEmail();
    const res = await server.api.post("/v1/auth/register", {
      body: { email, password: "long enough password", name: "Ada" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_type: "bearer", email, name: "Ada" });
    expect(res.body.user_id).toMatch(/^usr_[0-9]+$/);
    const access = decodeJwt(res.body.access_token);
    const refresh = decodeJwt(res.body.refresh_token);
    expect(access.typ).toBe("access");
    expect(refresh.typ).toBe("refresh");
    expect(access.sub).toBe(res.body.user_id.slice(4));
    // 30 minutes and 7 days, from the tokens' own claims
    expect((access.exp ?? 0) - (access.iat ?? 0)).toBe(30 * 60);
    expect((refresh.exp ?? 0) - (refresh.iat ?? 0)).toBe(7 * 24 * 60 * 60);
  });

  it("refuses a second account with the same e-mail (any case) with 409", async () => {
    const email = newEmail();
    const body = { email, password: "long enough password", name: "Ada" };
    expect((await server.api.post("/v1/auth/register", { body })).status).toBe(201);
    const again = await server.api.post("/v1/auth/register", {
      body: { ...body, email: email.toUpperCase() },
    });
    expect(again.status).toBe(409);
    expect(typeof again.body.detail).toBe("string");
  });

  it("answers 422 with loc for a short password and a bad e-mail", async () => {
    const res = await server.api.post("/v1/auth/register", {
      body: { email: "not-an-email", password: "short", name: "Ada" },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: string[] }) => d.loc.join("."));
    expect(locs).toEqual(expect.arrayContaining(["body.email", "body.password"]));
  });

  it("answers 422 type missing for an absent field", async () => {
    const res = await server.api.post("/v1/auth/register", {
      body: { email: newEmail(), password: "long enough" },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ["body", "name"], msg: "Field required", type: "missing" }]);
  });

  it("stores an argon2id hash, never the password", async () => {
    const user = await registerUser(server.api);
    const db = await openServerDatabase(server);
    const row = await db.kysely
      .selectFrom("users")
      .select("password_hash")
      .where("email", "=", user.email)
      .executeTakeFirstOrThrow();
    await db.close();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain(user.password);
  });
});

describe("POST /v1/auth/login", () => {
  it("answers the authentication result with an integer user_id", async () => {
    const user = await registerUser(server.api, "Grace");
    const res = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: "bearer", email: user.email, name: "Grace" });
    expect(res.body.user_id).toBe(Number(user.userId.slice(4)));
    const me = await server.api.get("/v1/bots", { token: res.body.access_token });
    expect(me.status).toBe(200);
  });

  it("answers the same 401 for a wrong password and an unknown e-mail", async () => {
    const user = await registerUser(server.api);
    const wrong = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: "wrong password" },
    });
    const unknown = await server.api.post("/v1/auth/login", {
      body: { email: newEmail(), password: "wrong password" },
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual({ detail: "Invalid email or password" });
    expect(unknown.body).toEqual(wrong.body);
  });
});

describe("POST /v1/auth/refresh", () => {
  it("trades a refresh token for a working access token, and refuses an access token", async () => {
    const user = await registerUser(server.api);
    const res = await server.api.post("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe("bearer");
    expect((await server.api.get("/v1/bots", { token: res.body.access_token })).status).toBe(200);

    const wrongType = await server.api.post("/v1/auth/refresh", { body: { refresh_token: user.token } });
    expect(wrongType.status).toBe(401);
  });
});

describe("bearer tokens on protected routes", () => {
  it("refuses a missing, garbage, refresh-typed or expired token with 401 {detail}", async () => {
    const user = await registerUser(server.api);
    const secret = await loadServerSecret(server.dataDir);
    const userId = Number(user.userId.slice(4));
    const expired = await new JwtIssuer(secret).sign(userId, "access", new Date(Date.now() - 3_600_000));
    const forged = await new JwtIssuer(Buffer.alloc(32, 7)).sign(userId, "access");
    for (const token of [undefined, "garbage", user.refreshToken, expired, forged]) {
      const res = await server.api.get("/v1/bots", token === undefined ? {} : { token });
      expect(res.status, `token ${token?.slice(0, 12)}`).toBe(401);
      expect(typeof res.body.detail).toBe("string");
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  it("keeps the generated secret in <dataDir>/jwt-secret with mode 0600", async () => {
    const file = path.join(server.dataDir, "jwt-secret");
    expect((await readFile(file, "utf8")).trim()).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });
});

describe("POST /v1/auth/logout", () => {
  it("answers 200 with a message; the server invalidates nothing (spec §5)", async () => {
    const user = await registerUser(server.api);
    const res = await server.api.post("/v1/auth/logout", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: "Logged out; discard the access and refresh tokens" });
    // The client discards its tokens; until they expire they still work.
    expect((await server.api.get("/v1/bots", { token: user.token })).status).toBe(200);
  });

  it("needs a valid access token: none, a refresh token or an expired one is 401", async () => {
    const user = await registerUser(server.api);
    const expired = await new JwtIssuer(await loadServerSecret(server.dataDir)).sign(
      Number(user.userId.slice(4)),
      "access",
      new Date(Date.now() - 30 * 60_000 - 1000),
    );
    for (const token of [undefined, user.refreshToken, expired]) {
      const res = await server.api.post("/v1/auth/logout", token === undefined ? {} : { token });
      expect(res.status).toBe(401);
      expect(typeof res.body.detail).toBe("string");
    }
  });
});

describe("token lifetimes and the signing secret", () => {
  it("accepts an access token until 30 minutes after issue, and refuses an expired refresh token", async () => {
    const user = await registerUser(server.api);
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const userId = Number(user.userId.slice(4));
    const almost = await jwt.sign(userId, "access", new Date(Date.now() - 29 * 60_000));
    expect((await server.api.get("/v1/bots", { token: almost })).status).toBe(200);
    const old = await jwt.sign(userId, "refresh", new Date(Date.now() - 7 * 86_400_000 - 1000));
    const res = await server.api.post("/v1/auth/refresh", { body: { refresh_token: old } });
    expect(res.status).toBe(401);
  });

  it("keeps the generated secret across a restart: earlier tokens still work", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-restart-"));
    try {
      const first = await startTestServer({ dataDir });
      const user = await registerUser(first.api);
      await first.close();
      const second = await startTestServer({ dataDir });
      try {
        expect((await second.api.get("/v1/bots", { token: user.token })).status).toBe(200);
        const refreshed = await second.api.post("/v1/auth/refresh", {
          body: { refresh_token: user.refreshToken },
        });
        expect(refreshed.status).toBe(200);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("signs with MEETBOT_JWT_SECRET when it is set, and writes no secret file", async () => {
    const secret = "a configured secret of enough length";
    // a token of the generated-secret server, foreign to the configured one
    const foreign = await new JwtIssuer(await loadServerSecret(server.dataDir)).sign(1, "access");
    const saved = process.env.MEETBOT_JWT_SECRET;
    process.env.MEETBOT_JWT_SECRET = secret;
    let configured: TestServer | undefined;
    try {
      configured = await startTestServer();
      const user = await registerUser(configured.api);
      const mine = await new JwtIssuer(Buffer.from(secret, "utf8")).sign(
        Number(user.userId.slice(4)),
        "access",
      );
      expect((await configured.api.get("/v1/bots", { token: mine })).status).toBe(200);
      expect((await configured.api.get("/v1/bots", { token: foreign })).status).toBe(401);
      await expect(stat(path.join(configured.dataDir, "jwt-secret"))).rejects.toThrow(/ENOENT/);
    } finally {
      if (saved === undefined) delete process.env.MEETBOT_JWT_SECRET;
      else process.env.MEETBOT_JWT_SECRET = saved;
      await configured?.close();
    }
  });
});
