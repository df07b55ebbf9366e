import type { Kysely } from "kysely";
import { isApiKeyCandidate } from "../auth/api-keys.js";
import type { AuthUser, Principal } from "../auth/guard.js";
import { hashPassword, isPasswordHash, verifyAgainstDummy, verifyPassword } from "../auth/passwords.js";
import { newTokenId, tokenExpiry } from "../auth/tokens.js";
import { isUniqueViolation, toIso } from "../db/database.js";
import { preparedQuery } from "../db/prepared.js";
import type { Database } from "../db/schema.js";
import { ConflictError, UnauthorizedError } from "../errors.js";
import type { AuthResult, LoginBody, RefreshResult, RegisterBody } from "../schemas/index.js";
import type { ApiKeyService } from "./api-keys.js";
import type { ServiceContext } from "./context.js";

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export interface TokenPair {
  access_token: string;
  refresh_token: string;
}

/**
 * The guard's queries (prepared: they run on every request with an access token): the user, if
 * the token's generation is still the user's, and whether the token's family is live. Two
 * primary-key lookups, not a join: better-sqlite3 13 re-prepares a join at every call (see
 * BotService.get).
 */
const selectSessionUser = preparedQuery((db, id: number, generation: number) =>
  db
    .selectFrom("users")
    .select(["id", "email", "name"])
    .where("id", "=", id)
    .where("session_generation", "=", generation),
);
const selectLiveFamily = preparedQuery((db, family: string, userId: number) =>
  db
    .selectFrom("refresh_token_families")
    .select("id")
    .where("id", "=", family)
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null),
);

/** The user of a session token, if its generation is current and its family not revoked. */
async function sessionUser(db: Kysely<Database>, userId: number, generation: number, family: string) {
  const [user] = await selectSessionUser(db, userId, generation);
  if (!user) return undefined;
  const [live] = await selectLiveFamily(db, family, userId);
  return live ? user : undefined;
}

/**
 * Accounts and sessions. A sign-in (register, login, OAuth) starts a refresh-token family; its
 * refresh tokens rotate: each refresh answers a new one and only the newest may be used, and a
 * reused one ends the family (whoever holds the other copy, thief or owner, has to sign in
 * again). A password change or POST /v1/auth/sessions/revoke moves the user's session generation
 * on, which ends every token issued before. All of it is in the database, so every server
 * process sharing it agrees.
 */
export class UserService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly apiKeys: ApiKeyService,
  ) {}

  async register(input: RegisterBody): Promise<AuthResult> {
    const email = normalizeEmail(input.email);
    const { db } = this.ctx;
    const exists = await db.selectFrom("users").select("id").where("email", "=", email).executeTakeFirst();
    if (exists) throw new ConflictError("Email already registered");
    const passwordHash = await hashPassword(input.password);
    let id: number;
    try {
      const row = await db
        .insertInto("users")
        .values({ email, name: input.name, password_hash: passwordHash, created_at: toIso(this.ctx.now()) })
        .returning("id")
        .executeTakeFirstOrThrow();
      id = row.id;
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConflictError("Email already registered");
      throw err;
    }
    // Spec §2: register shows user_id as a prefixed string, login as an integer.
    return this.authResult({ id, email, name: input.name }, `usr_${id}`);
  }

  async login(input: LoginBody): Promise<AuthResult> {
    const user = await this.ctx.db
      .selectFrom("users")
      .selectAll()
      .where("email", "=", normalizeEmail(input.email))
      .executeTakeFirst();
    // An unknown e-mail and an account without a password (OAuth only) cost the same time as a
    // wrong password, and answer the same.
    const ok =
      user && isPasswordHash(user.password_hash)
        ? await verifyPassword(user.password_hash, input.password)
        : await verifyAgainstDummy(input.password);
    if (!user || !ok) throw new UnauthorizedError("Invalid email or password");
    return this.authResult(user, user.id);
  }

  /**
   * Rotation: the family's current refresh token is traded for a new access token and a new
   * refresh token, in one conditional UPDATE, so that of two uses of the same token only one can
   * win. A refresh token that is not its family's current one (used before) revokes the family.
   */
  async refresh(refreshToken: string): Promise<RefreshResult> {
    const token = await this.ctx.jwt.verify(refreshToken, "refresh");
    if (!token?.session || !token.jti) throw new UnauthorizedError("Invalid or expired refresh token");
    const { userId, jti, session } = token;
    const user = await sessionUser(this.ctx.db, userId, session.gen, session.fam);
    if (!user) throw new UnauthorizedError("Invalid, expired or revoked refresh token");

    const now = this.ctx.now();
    const next = newTokenId();
    const rotated = await this.ctx.db
      .updateTable("refresh_token_families")
      .set({ current_jti: next, expires_at: toIso(tokenExpiry("refresh", now)) })
      .where("id", "=", session.fam)
      .where("user_id", "=", userId)
      .where("current_jti", "=", jti)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    if (Number(rotated.numUpdatedRows) !== 1) {
      // Used before: one of two holders is not the owner. Neither keeps the session.
      const revoked = await this.ctx.db
        .updateTable("refresh_token_families")
        .set({ revoked_at: toIso(now) })
        .where("id", "=", session.fam)
        .where("user_id", "=", userId)
        .where("revoked_at", "is", null)
        .executeTakeFirst();
      if (Number(revoked.numUpdatedRows) > 0) {
        this.ctx.log.warn({ userId }, "a refresh token was used again: its sign-in is ended");
      }
      throw new UnauthorizedError(
        "This refresh token was already used; the sign-in it belongs to has been ended for safety. Sign in again",
      );
    }
    return {
      access_token: await this.ctx.jwt.sign(user.id, "access", now, session),
      refresh_token: await this.ctx.jwt.sign(user.id, "refresh", now, { ...session, jti: next }),
      token_type: "bearer",
    };
  }

  /** The guard's resolver: an API key ("mbk_…") or a JWT access token of a live session to its user. */
  async resolveBearer(token: string): Promise<Principal | null> {
    if (isApiKeyCandidate(token)) return this.apiKeys.resolve(token);
    const verified = await this.ctx.jwt.verify(token, "access");
    if (!verified?.session) return null;
    const { gen, fam } = verified.session;
    const user = await sessionUser(this.ctx.db, verified.userId, gen, fam);
    return user ? { user, credential: { kind: "access_token" } } : null;
  }

  /**
   * Ends every session of the user: each access and refresh token issued before is refused from
   * now on (API keys are not sessions and stay). Returns the new generation, for tokens issued
   * after; `db` may be a transaction the change is part of (a password change).
   */
  async revokeSessions(userId: number, db: Kysely<Database> = this.ctx.db): Promise<number> {
    const { session_generation } = await db
      .updateTable("users")
      .set((eb) => ({ session_generation: eb("session_generation", "+", 1) }))
      .where("id", "=", userId)
      .returning("session_generation")
      .executeTakeFirstOrThrow();
    await db.deleteFrom("refresh_token_families").where("user_id", "=", userId).execute();
    return session_generation;
  }

  /**
   * A new sign-in: a fresh access token (30 min) and refresh token (7 days) in a new family.
   * `generation` when the caller knows it (it has just changed it); otherwise read.
   */
  async issueTokens(userId: number, generation?: number): Promise<TokenPair> {
    const { db } = this.ctx;
    const now = this.ctx.now();
    const gen =
      generation ??
      (
        await db
          .selectFrom("users")
          .select("session_generation")
          .where("id", "=", userId)
          .executeTakeFirstOrThrow()
      ).session_generation;
    const session = { gen, fam: newTokenId(), jti: newTokenId() };
    // The user's families whose last refresh token has expired are of no further use.
    await db
      .deleteFrom("refresh_token_families")
      .where("user_id", "=", userId)
      .where("expires_at", "<", toIso(now))
      .execute();
    await db
      .insertInto("refresh_token_families")
      .values({
        id: session.fam,
        user_id: userId,
        current_jti: session.jti,
        created_at: toIso(now),
        expires_at: toIso(tokenExpiry("refresh", now)),
        revoked_at: null,
      })
      .execute();
    return {
      access_token: await this.ctx.jwt.sign(userId, "access", now, { gen, fam: session.fam }),
      refresh_token: await this.ctx.jwt.sign(userId, "refresh", now, session),
    };
  }

  private async authResult(user: AuthUser, userId: string | number): Promise<AuthResult> {
    return {
      ...(await this.issueTokens(user.id)),
      token_type: "bearer",
      user_id: userId,
      email: user.email,
      name: user.name,
    };
  }
}
