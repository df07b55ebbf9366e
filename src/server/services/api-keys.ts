import { apiKeyPreview, hashApiKey, isWellFormedApiKey, newApiKey } from "../auth/api-keys.js";
import type { Principal } from "../auth/guard.js";
import { toIso } from "../db/database.js";
import { preparedQuery } from "../db/prepared.js";
import type { ApiKeysTable } from "../db/schema.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { ApiKey, ApiKeyList, CreateApiKeyBody, CreatedApiKey } from "../schemas/index.js";
import type { ServiceContext } from "./context.js";

/**
 * How long a resolved key is trusted without asking the database. Revoking a key in this process
 * takes effect at once; another server process may accept a revoked key (or a deleted user's) for
 * at most this long. Expiry is checked on every request, cached or not.
 */
export const API_KEY_CACHE_TTL_MS = 30_000;
/** Bounds the cache's memory; the oldest entry goes first. Unknown keys are never cached. */
const API_KEY_CACHE_MAX = 10_000;

interface CachedKey {
  principal: Principal;
  expiresAt: string | null;
  cachedUntil: number;
}

// Prepared: each key is looked up at least every API_KEY_CACHE_TTL_MS while in use.
const selectKeyByHash = preparedQuery((db, hash: string) =>
  db
    .selectFrom("api_keys")
    .innerJoin("users", "users.id", "api_keys.user_id")
    .select([
      "api_keys.id as key_id",
      "api_keys.expires_at",
      "api_keys.revoked_at",
      "users.id as user_id",
      "users.email",
      "users.name",
    ])
    .where("api_keys.key_hash", "=", hash),
);

export class ApiKeyService {
  private readonly cache = new Map<string, CachedKey>();
  /** Counts revocations, so that a lookup that raced one is not cached. */
  private revocations = 0;

  constructor(private readonly ctx: ServiceContext) {}

  async create(userId: number, input: CreateApiKeyBody): Promise<CreatedApiKey> {
    const now = this.ctx.now();
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= now.getTime()) {
      throw new ValidationError([
        { loc: ["body", "expiresAt"], msg: "expiresAt must be in the future", type: "value_error" },
      ]);
    }
    const key = newApiKey();
    const row = await this.ctx.db
      .insertInto("api_keys")
      .values({
        user_id: userId,
        name: input.name,
        key_hash: hashApiKey(key),
        key_preview: apiKeyPreview(key),
        created_at: toIso(now),
        expires_at: expiresAt ? toIso(expiresAt) : null,
      })
      .returning(["id", "name", "key_preview", "created_at", "expires_at"])
      .executeTakeFirstOrThrow();
    return {
      id: row.id,
      name: row.name,
      key,
      keyPreview: row.key_preview,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      isRevoked: false,
    };
  }

  /** The user's keys, newest first, revoked and expired ones included. */
  async list(userId: number): Promise<ApiKeyList> {
    const rows = await this.ctx.db
      .selectFrom("api_keys")
      .select(["id", "name", "key_preview", "created_at", "last_used_at", "expires_at", "revoked_at"])
      .where("user_id", "=", userId)
      .orderBy("id", "desc")
      .execute();
    return { apiKeys: rows.map(toApiKey), total: rows.length };
  }

  /** Idempotent: revoking a revoked key keeps its first revocation time. Another user's key is a 404. */
  async revoke(userId: number, keyId: number): Promise<void> {
    const key = await this.ctx.db
      .selectFrom("api_keys")
      .select(["key_hash", "revoked_at"])
      .where("id", "=", keyId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!key) throw new NotFoundError("API key not found");
    if (key.revoked_at === null) {
      await this.ctx.db
        .updateTable("api_keys")
        .set({ revoked_at: toIso(this.ctx.now()) })
        .where("id", "=", keyId)
        .where("revoked_at", "is", null)
        .execute();
    }
    this.revocations++;
    this.cache.delete(key.key_hash);
  }

  /** The guard's API key branch: one indexed query (by key_hash), or none when cached. */
  async resolve(token: string): Promise<Principal | null> {
    if (!isWellFormedApiKey(token)) return null;
    const hash = hashApiKey(token);
    const now = this.ctx.now();
    const cached = this.cache.get(hash);
    if (cached && cached.cachedUntil > Date.now()) {
      return isExpired(cached.expiresAt, now) ? null : cached.principal;
    }
    this.cache.delete(hash);

    const revocations = this.revocations;
    const [row] = await selectKeyByHash(this.ctx.db, hash);
    if (!row || row.revoked_at !== null) return null;
    const principal: Principal = {
      user: { id: row.user_id, email: row.email, name: row.name },
      credential: { kind: "api_key", keyId: row.key_id },
    };
    if (revocations === this.revocations) this.remember(hash, principal, row.expires_at);
    return isExpired(row.expires_at, now) ? null : principal;
  }

  private remember(hash: string, principal: Principal, expiresAt: string | null): void {
    if (this.cache.size >= API_KEY_CACHE_MAX) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, { principal, expiresAt, cachedUntil: Date.now() + API_KEY_CACHE_TTL_MS });
  }
}

function isExpired(expiresAt: string | null, now: Date): boolean {
  return expiresAt !== null && expiresAt <= toIso(now);
}

type ApiKeyRow = Pick<
  ApiKeysTable,
  "name" | "key_preview" | "created_at" | "last_used_at" | "expires_at" | "revoked_at"
> & { id: number };

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    keyPreview: row.key_preview,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    isRevoked: row.revoked_at !== null,
  };
}
