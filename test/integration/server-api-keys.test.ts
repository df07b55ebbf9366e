import { createHash } from "node:crypto";
import { describe } from "vitest";
import { expect, test } from "../helpers/fixtures.js";
import { JwtIssuer, loadServerSecret } from "../../src/server/auth/tokens.js";
import {
  openServerDatabase,
  registerUser,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";

// The file's helpers read this: the file's server.
let server: TestServer;
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});

async function createKey(user: TestUser, body: Record<string, unknown> = { name: "ci" }) {
  const res = await server.api.post("/v1/api-keys", { token: user.token, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const inOneDay = () => new Date(Date.now() + 86_400_000).toISOString();

describe("POST /v1/api-keys", () => {
  test("returns the full key once: a fixed prefix then 64 hex characters, with its preview", async () => {
    const user = await registerUser(server.api);
    const expiresAt = inOneDay();
    const res = await server.api.post("/v1/api-keys", {
      token: user.token,
      body: { name: "deploys", expiresAt },
    });
    expect(res.status).toBe(201);
    const { key, keyPreview } = res.body;
    expect(key).toMatch(/^mbk_[0-9a-f]{64}$/);
    expect(keyPreview).toBe(`${key.slice(0, 10)}...${key.slice(-4)}`);
    expect(res.body).toEqual({
      id: expect.any(Number),
      name: "deploys",
      key,
      keyPreview,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      expiresAt,
      isRevoked: false,
    });
  });

  test("stores only the key's sha256", async () => {
    const user = await registerUser(server.api);
    const { id, key } = await createKey(user);
    const db = await openServerDatabase(server);
    try {
      const row = await db.kysely
        .selectFrom("api_keys")
        .selectAll()
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(row.key_hash).toBe(createHash("sha256").update(key).digest("hex"));
      expect(JSON.stringify(row)).not.toContain(key.slice(4, 40));
    } finally {
      await db.close();
    }
  });

  test("normalises an expiresAt with an offset to UTC, and keeps a key without one from expiring", async () => {
    const user = await registerUser(server.api);
    const withOffset = await server.api.post("/v1/api-keys", {
      token: user.token,
      body: { name: "offset", expiresAt: "2999-01-01T02:00:00+02:00" },
    });
    expect(withOffset.body.expiresAt).toBe("2999-01-01T00:00:00.000Z");
    const never = await server.api.post("/v1/api-keys", { token: user.token, body: { name: "forever" } });
    expect(never.body.expiresAt).toBeNull();
  });

  test("answers 422 for an expiresAt in the past, a bad date, and a missing name", async () => {
    const user = await registerUser(server.api);
    const past = await server.api.post("/v1/api-keys", {
      token: user.token,
      body: { name: "old", expiresAt: "2020-01-01T00:00:00Z" },
    });
    expect(past.status).toBe(422);
    expect(past.body.detail).toEqual([
      { loc: ["body", "expiresAt"], msg: "expiresAt must be in the future", type: "value_error" },
    ]);
    const bad = await server.api.post("/v1/api-keys", {
      token: user.token,
      body: { name: "x", expiresAt: "soon" },
    });
    expect(bad.status).toBe(422);
    expect(validationIssues(bad.body)[0]?.loc).toEqual(["body", "expiresAt"]);
    const nameless = await server.api.post("/v1/api-keys", { token: user.token, body: { name: "  " } });
    expect(nameless.status).toBe(422);
    expect(validationIssues(nameless.body)[0]?.loc).toEqual(["body", "name"]);
    expect((await server.api.get("/v1/api-keys", { token: user.token })).body.total).toBe(0);
  });
});

describe("an API key as the Bearer credential", () => {
  test("works everywhere an access token does, as the same user", async () => {
    const user = await registerUser(server.api);
    const { key } = await createKey(user);
    const created = await server.api.post("/v1/bots", { token: key, body: { meetingInfo: TEST_MEETING } });
    expect(created.status).toBe(201);
    const viaToken = await server.api.get(`/v1/bots/${created.body.id}`, { token: user.token });
    expect(viaToken.status).toBe(200);
    expect((await server.api.get("/v1/api-keys", { token: key })).status).toBe(200);
    expect((await server.api.post("/v1/auth/logout", { token: key })).status).toBe(200);
  });

  test("is refused (401) once revoked, at once, even right after a successful use", async () => {
    const user = await registerUser(server.api);
    const { id, key } = await createKey(user);
    expect((await server.api.get("/v1/bots", { token: key })).status).toBe(200);
    expect((await server.api.delete(`/v1/api-keys/${id}`, { token: user.token })).status).toBe(204);
    const res = await server.api.get("/v1/bots", { token: key });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Could not validate credentials" });
  });

  test("is refused (401) after its expiresAt", async () => {
    const user = await registerUser(server.api);
    const { id, key } = await createKey(user, { name: "short", expiresAt: inOneDay() });
    const db = await openServerDatabase(server);
    try {
      await db.kysely
        .updateTable("api_keys")
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("id", "=", id)
        .execute();
    } finally {
      await db.close();
    }
    expect((await server.api.get("/v1/bots", { token: key })).status).toBe(401);
  });

  test("refuses unknown, malformed and altered keys with 401", async () => {
    const user = await registerUser(server.api);
    const { key } = await createKey(user);
    const altered = `${key.slice(0, -1)}${key.endsWith("0") ? "1" : "0"}`;
    for (const token of [altered, "mbk_", `${key}0`, key.toUpperCase(), `mbk_${"0".repeat(64)}`]) {
      const res = await server.api.get("/v1/bots", { token });
      expect(res.status, token).toBe(401);
    }
  });
});

describe("GET /v1/api-keys", () => {
  test("lists the user's own keys, newest first, without the key, with lastUsedAt and isRevoked", async () => {
    const user = await registerUser(server.api);
    const other = await registerUser(server.api);
    const first = await createKey(user, { name: "first" });
    const second = await createKey(user, { name: "second" });
    await createKey(other, { name: "not yours" });
    await server.api.delete(`/v1/api-keys/${first.id}`, { token: user.token });

    const res = await server.api.get("/v1/api-keys", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    expect(res.body.apiKeys.map((k: { name: string }) => k.name)).toEqual(["second", "first"]);
    for (const listed of res.body.apiKeys) {
      expect(Object.keys(listed).sort()).toEqual(
        ["createdAt", "expiresAt", "id", "isRevoked", "keyPreview", "lastUsedAt", "name"].sort(),
      );
    }
    expect(res.body.apiKeys[0]).toMatchObject({
      id: second.id,
      keyPreview: second.keyPreview,
      isRevoked: false,
    });
    expect(res.body.apiKeys[1]).toMatchObject({ id: first.id, isRevoked: true });
    expect(JSON.stringify(res.body)).not.toContain(second.key);
  });

  test("needs a credential, and refuses an expired access token and a refresh token", async () => {
    const user = await registerUser(server.api);
    const jwt = new JwtIssuer(await loadServerSecret(server.dataDir));
    const userId = Number(user.userId.slice(4));
    const expired = await jwt.sign(userId, "access", new Date(Date.now() - 31 * 60_000));
    for (const token of [undefined, expired, user.refreshToken]) {
      const res = await server.api.get("/v1/api-keys", token === undefined ? {} : { token });
      expect(res.status).toBe(401);
      expect(typeof res.body.detail).toBe("string");
    }
  });
});

describe("DELETE /v1/api-keys/{id}", () => {
  test("revokes idempotently: 204 both times", async () => {
    const user = await registerUser(server.api);
    const { id } = await createKey(user);
    expect((await server.api.delete(`/v1/api-keys/${id}`, { token: user.token })).status).toBe(204);
    const again = await server.api.delete(`/v1/api-keys/${id}`, { token: user.token });
    expect(again.status).toBe(204);
    expect(again.body).toBe("");
  });

  test("answers 404 for another user's key, which keeps working", async () => {
    const owner = await registerUser(server.api);
    const stranger = await registerUser(server.api);
    const { id, key } = await createKey(owner);
    const res = await server.api.delete(`/v1/api-keys/${id}`, { token: stranger.token });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "API key not found" });
    expect((await server.api.delete("/v1/api-keys/999999", { token: stranger.token })).body).toEqual(
      res.body,
    );
    expect((await server.api.get("/v1/bots", { token: key })).status).toBe(200);
  });

  test("answers 422 for an id that is not a positive integer", async () => {
    const user = await registerUser(server.api);
    const res = await server.api.delete("/v1/api-keys/abc", { token: user.token });
    expect(res.status).toBe(422);
    expect(validationIssues(res.body)[0]?.loc).toEqual(["path", "id"]);
  });
});
