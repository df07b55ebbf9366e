import { readFile } from "node:fs/promises";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import { registerUser, startTestServer, type TestServer } from "../helpers/server-harness.js";

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
    const { default: SQLite } = await import("better-sqlite3");
    const db = new SQLite(path.join(server.dataDir, "meetbot.sqlite"), { readonly: true });
    const row = db.prepare("select password_hash from users where email = ?").get(user.email) as {
      password_hash: string;
    };
    db.close();
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
    const { stat } = await import("node:fs/promises");
    const file = path.join(server.dataDir, "jwt-secret");
    expect((await readFile(file, "utf8")).trim()).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });
});
