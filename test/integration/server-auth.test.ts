import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";
import { describe } from "vitest";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  registerUser,
  startTestServer,
  type TestServer,
  validationIssues,
} from "../helpers/server-harness.js";
import { expect, readRow, test } from "../helpers/fixtures.js";

let server: TestServer;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});

const newEmail = () => `auth-${Math.random().toString(36).slice(2)}@example.com`;

/** The session claims of a token the server issued, to sign others of the same sign-in with. */
const sessionOf = (token: string) => {
  const { gen, fam } = decodeJwt(token) as { gen: number; fam: string };
  return { gen, fam };
};

describe("POST /v1/auth/register", () => {
  test("creates the account and answers the authentication result with a prefixed user_id", async () => {
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
    expect(access.sub).toBe(String(res.body.user_id).slice(4)); // "usr_<id>"
    // 30 minutes and 7 days, from the tokens' own claims
    expect((access.exp ?? 0) - (access.iat ?? 0)).toBe(30 * 60);
    expect((refresh.exp ?? 0) - (refresh.iat ?? 0)).toBe(7 * 24 * 60 * 60);
  });

  test("refuses a second account with the same e-mail (any case) with 409", async () => {
    const email = newEmail();
    const body = { email, password: "long enough password", name: "Ada" };
    expect((await server.api.post("/v1/auth/register", { body })).status).toBe(201);
    const again = await server.api.post("/v1/auth/register", {
      body: { ...body, email: email.toUpperCase() },
    });
    expect(again.status).toBe(409);
    expect(typeof again.body.detail).toBe("string");
  });

  test("answers 422 with loc for a short password and a bad e-mail", async () => {
    const res = await server.api.post("/v1/auth/register", {
      body: { email: "not-an-email", password: "short", name: "Ada" },
    });
    expect(res.status).toBe(422);
    const locs = validationIssues(res.body).map((d) => d.loc.join("."));
    expect(locs).toEqual(expect.arrayContaining(["body.email", "body.password"]));
  });

  test("answers 422 type missing for an absent field", async () => {
    const res = await server.api.post("/v1/auth/register", {
      body: { email: newEmail(), password: "long enough" },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ["body", "name"], msg: "Field required", type: "missing" }]);
  });

  test("stores an argon2id hash, never the password", async ({ user, db }) => {
    const row = await readRow(db, "users", user.email, "email");
    expect(row?.password_hash).toMatch(/^\$argon2id\$/);
    expect(row?.password_hash).not.toContain(user.password);
  });
});

describe("POST /v1/auth/login", () => {
  test("answers the authentication result with an integer user_id", async () => {
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

  test("answers the same 401 for a wrong password and an unknown e-mail", async ({ user }) => {
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
  test("trades a refresh token for a working access token, and refuses an access token", async ({ user }) => {
    const res = await server.api.post("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["access_token", "refresh_token", "token_type"]);
    expect(res.body.token_type).toBe("bearer");
    expect(decodeJwt(res.body.refresh_token).typ).toBe("refresh");
    expect((await server.api.get("/v1/bots", { token: res.body.access_token })).status).toBe(200);

    const wrongType = await server.api.post("/v1/auth/refresh", { body: { refresh_token: user.token } });
    expect(wrongType.status).toBe(401);
  });
});

describe("sessions: rotation, reuse and revocation", () => {
  const refresh = (token: string) => server.api.post("/v1/auth/refresh", { body: { refresh_token: token } });
  const works = async (access: string) => (await server.api.get("/v1/bots", { token: access })).status;
  const login = async (user: { email: string; password: string }) => {
    const res = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(res.status).toBe(200);
    return res.body;
  };

  test("gives every token its own jti: two sign-ins in the same second get different tokens", async ({
    user,
  }) => {
    // Two logins at once, until a pair lands in the same second (the first, nearly always).
    let pair: { access_token: string; refresh_token: string }[] = [];
    for (let i = 0; i < 10; i++) {
      pair = await Promise.all([login(user), login(user)]);
      if (decodeJwt(pair[0]!.access_token).iat === decodeJwt(pair[1]!.access_token).iat) break;
    }
    const [first, second] = pair as [(typeof pair)[0], (typeof pair)[0]];
    expect(decodeJwt(first.access_token).iat).toBe(decodeJwt(second.access_token).iat);
    expect(first.access_token).not.toBe(second.access_token);
    expect(first.refresh_token).not.toBe(second.refresh_token);
    const ids = [first, second].flatMap((t) =>
      [t.access_token, t.refresh_token].map((j) => decodeJwt(j).jti),
    );
    expect(ids.every((id) => typeof id === "string" && id.length >= 16)).toBe(true);
    expect(new Set(ids).size).toBe(4);

    // The same for the issuer itself, given one instant.
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const now = new Date();
    expect(await jwt.sign(1, "access", now)).not.toBe(await jwt.sign(1, "access", now));
  });

  test("rotates refresh tokens: each refresh answers a new one, which works once", async ({ user }) => {
    let current = user.refreshToken;
    const used = [current];
    for (let i = 0; i < 3; i++) {
      const res = await refresh(current);
      expect(res.status, `refresh ${i + 1}`).toBe(200);
      expect(used).not.toContain(res.body.refresh_token);
      expect(decodeJwt(res.body.refresh_token).fam).toBe(decodeJwt(user.refreshToken).fam);
      expect(await works(res.body.access_token)).toBe(200);
      current = res.body.refresh_token;
      used.push(current);
    }
    // The sign-in's first access token is still good: rotation ends nothing by itself.
    expect(await works(user.token)).toBe(200);
  });

  test("refuses a reused refresh token and ends its sign-in: the newest refresh token and its access tokens too", async ({
    user,
  }) => {
    const other = await login(user); // a second sign-in of the same user
    const rotated = await refresh(user.refreshToken);
    expect(rotated.status).toBe(200);

    const reused = await refresh(user.refreshToken);
    expect(reused.status).toBe(401);
    expect(reused.body.detail).toMatch(/already used.*sign in again/i);
    expect(reused.headers.get("www-authenticate")).toBe("Bearer");

    // Whoever holds the newest token (the thief, or the owner) is out too.
    expect((await refresh(rotated.body.refresh_token)).status).toBe(401);
    expect(await works(rotated.body.access_token)).toBe(401);
    expect(await works(user.token)).toBe(401);
    // Only that sign-in: the user's other one goes on.
    expect(await works(other.access_token)).toBe(200);
    expect((await refresh(other.refresh_token)).status).toBe(200);
  });

  test("lets only one of several simultaneous uses of a refresh token succeed", async ({ user }) => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => refresh(user.refreshToken)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401]);
    // The others were reuses: that sign-in is over, the winner's new tokens included.
    const winner = answers.find((a) => a.status === 200)!;
    expect((await refresh(winner.body.refresh_token)).status).toBe(401);
    expect(await works(winner.body.access_token)).toBe(401);
  });

  test("refuses tokens without session claims, even with a valid signature", async ({ user }) => {
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const userId = Number(user.userId.slice(4));
    expect(await works(await jwt.sign(userId, "access"))).toBe(401);
    expect((await refresh(await jwt.sign(userId, "refresh"))).status).toBe(401);
    // A forged family or generation is no better.
    const { gen, fam } = sessionOf(user.token);
    expect(await works(await jwt.sign(userId, "access", new Date(), { gen, fam: "A".repeat(22) }))).toBe(401);
    expect(await works(await jwt.sign(userId, "access", new Date(), { gen: gen + 1, fam }))).toBe(401);
    expect(await works(await jwt.sign(userId, "access", new Date(), { gen, fam }))).toBe(200);
  });
});

describe("sessions across server processes", () => {
  test("two servers on one database agree on rotation, reuse and revocation", async () => {
    const a = await startTestServer();
    // Same data dir (the same secret and, on SQLite, the same file) and the same database.
    const b = await startTestServer({
      dataDir: a.dataDir,
      databaseUrl: a.databaseUrl,
      webhooks: { worker: false },
      jobs: { worker: false },
    });
    try {
      const refresh = (s: TestServer, token: string) =>
        s.api.post("/v1/auth/refresh", { body: { refresh_token: token } });
      const user = await registerUser(a.api);

      // Rotated on A, reused on B: refused, and the sign-in is over on both.
      const rotated = await refresh(a, user.refreshToken);
      expect(rotated.status).toBe(200);
      expect((await refresh(b, user.refreshToken)).status).toBe(401);
      expect((await refresh(a, rotated.body.refresh_token)).status).toBe(401);
      expect((await a.api.get("/v1/bots", { token: rotated.body.access_token })).status).toBe(401);

      // One token at both at once: one answer at most is a success.
      const login = await b.api.post("/v1/auth/login", {
        body: { email: user.email, password: user.password },
      });
      const both = await Promise.all([a, b, a, b].map((s) => refresh(s, login.body.refresh_token)));
      expect(both.filter((r) => r.status === 200)).toHaveLength(1);

      // Revoked on B: ended on A.
      const again = await a.api.post("/v1/auth/login", {
        body: { email: user.email, password: user.password },
      });
      expect((await a.api.get("/v1/bots", { token: again.body.access_token })).status).toBe(200);
      expect((await b.api.post("/v1/auth/sessions/revoke", { token: again.body.access_token })).status).toBe(
        200,
      );
      expect((await a.api.get("/v1/bots", { token: again.body.access_token })).status).toBe(401);
      expect((await refresh(a, again.body.refresh_token)).status).toBe(401);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe("POST /v1/auth/sessions/revoke", () => {
  test("ends every access and refresh token of the caller issued before; a new login works at once", async ({
    user,
  }) => {
    const second = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    const rotated = await server.api.post("/v1/auth/refresh", {
      body: { refresh_token: second.body.refresh_token },
    });
    const key = await server.api.post("/v1/api-keys", { token: user.token, body: { name: "stays" } });
    const bystander = await registerUser(server.api);

    const res = await server.api.post("/v1/auth/sessions/revoke", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.stringMatching(/session/i) });

    for (const access of [user.token, second.body.access_token, rotated.body.access_token]) {
      expect((await server.api.get("/v1/bots", { token: access })).status).toBe(401);
    }
    for (const refreshToken of [user.refreshToken, rotated.body.refresh_token]) {
      const again = await server.api.post("/v1/auth/refresh", { body: { refresh_token: refreshToken } });
      expect(again.status).toBe(401);
      expect(typeof again.body.detail).toBe("string");
    }
    // API keys are not sessions; another user's sessions are not the caller's.
    expect((await server.api.get("/v1/bots", { token: key.body.key })).status).toBe(200);
    expect((await server.api.get("/v1/bots", { token: bystander.token })).status).toBe(200);

    // Issued in the same second as the revocation, but after it: good, and refreshable.
    const fresh = await server.api.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
    });
    expect(fresh.status).toBe(200);
    expect((await server.api.get("/v1/bots", { token: fresh.body.access_token })).status).toBe(200);
    const next = await server.api.post("/v1/auth/refresh", {
      body: { refresh_token: fresh.body.refresh_token },
    });
    expect(next.status).toBe(200);
    expect((await server.api.get("/v1/bots", { token: next.body.access_token })).status).toBe(200);
  });

  test("needs the caller's credential, and works with an API key too", async () => {
    const none = await server.api.post("/v1/auth/sessions/revoke");
    expect(none.status).toBe(401);
    expect(typeof none.body.detail).toBe("string");

    const user = await registerUser(server.api);
    const key = await server.api.post("/v1/api-keys", { token: user.token, body: { name: "ops" } });
    expect((await server.api.post("/v1/auth/sessions/revoke", { token: key.body.key })).status).toBe(200);
    expect((await server.api.get("/v1/bots", { token: user.token })).status).toBe(401);
    expect((await server.api.get("/v1/bots", { token: key.body.key })).status).toBe(200);
  });
});

describe("bearer tokens on protected routes", () => {
  test("refuses a missing, garbage, refresh-typed or expired token with 401 {detail}", async ({ user }) => {
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

  test("keeps the generated secret in <dataDir>/jwt-secret with mode 0600", async () => {
    const file = path.join(server.dataDir, "jwt-secret");
    expect((await readFile(file, "utf8")).trim()).toMatch(/^[0-9a-f]{64}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });
});

describe("POST /v1/auth/logout", () => {
  test("answers 200 with a message; the server invalidates nothing (spec §5)", async ({ user }) => {
    const res = await server.api.post("/v1/auth/logout", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: "Logged out; discard the access and refresh tokens" });
    // The client discards its tokens; until they expire they still work.
    expect((await server.api.get("/v1/bots", { token: user.token })).status).toBe(200);
    const refreshed = await server.api.post("/v1/auth/refresh", {
      body: { refresh_token: user.refreshToken },
    });
    expect(refreshed.status).toBe(200);
  });

  test("needs a valid access token: none, a refresh token or an expired one is 401", async ({ user }) => {
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
  test("accepts an access token until 30 minutes after issue, and refuses an expired refresh token", async ({
    user,
  }) => {
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const userId = Number(user.userId.slice(4));
    const almost = await jwt.sign(
      userId,
      "access",
      new Date(Date.now() - 29 * 60_000),
      sessionOf(user.token),
    );
    expect((await server.api.get("/v1/bots", { token: almost })).status).toBe(200);
    const old = await jwt.sign(userId, "refresh", new Date(Date.now() - 7 * 86_400_000 - 1000));
    const res = await server.api.post("/v1/auth/refresh", { body: { refresh_token: old } });
    expect(res.status).toBe(401);
  });

  test("keeps the generated secret across a restart: earlier tokens still work", async () => {
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

  test("signs with MEETBOT_JWT_SECRET when it is set, and writes no secret file", async () => {
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
        new Date(),
        sessionOf(user.token),
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
