import { isApiKeyCandidate } from "../auth/api-keys.js";
import type { AuthUser, Principal } from "../auth/guard.js";
import { hashPassword, isPasswordHash, verifyAgainstDummy, verifyPassword } from "../auth/passwords.js";
import { isUniqueViolation, toIso } from "../db/database.js";
import { preparedQuery } from "../db/prepared.js";
import { ConflictError, UnauthorizedError } from "../errors.js";
import type { AuthResult, LoginBody, RefreshResult, RegisterBody } from "../schemas/index.js";
import type { ApiKeyService } from "./api-keys.js";
import type { ServiceContext } from "./context.js";

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export interface TokenPair {
  access_token: string;
  refresh_token: string;
}

// Prepared: every request with an access token looks its user up.
const selectAuthUser = preparedQuery((db, id: number) =>
  db.selectFrom("users").select(["id", "email", "name"]).where("id", "=", id),
);

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

  async refresh(refreshToken: string): Promise<RefreshResult> {
    const userId = await this.ctx.jwt.verify(refreshToken, "refresh");
    const user = userId === null ? undefined : await this.findById(userId);
    if (!user) throw new UnauthorizedError("Invalid or expired refresh token");
    return { access_token: await this.ctx.jwt.sign(user.id, "access", this.ctx.now()), token_type: "bearer" };
  }

  /** The guard's resolver: an API key ("mbk_…") or a JWT access token to its user. */
  async resolveBearer(token: string): Promise<Principal | null> {
    if (isApiKeyCandidate(token)) return this.apiKeys.resolve(token);
    const userId = await this.ctx.jwt.verify(token, "access");
    const user = userId === null ? undefined : await this.findById(userId);
    return user ? { user, credential: { kind: "access_token" } } : null;
  }

  private async findById(id: number): Promise<AuthUser | undefined> {
    const [user] = await selectAuthUser(this.ctx.db, id);
    return user;
  }

  /** A fresh access token (30 min) and refresh token (7 days). */
  async issueTokens(userId: number): Promise<TokenPair> {
    const now = this.ctx.now();
    return {
      access_token: await this.ctx.jwt.sign(userId, "access", now),
      refresh_token: await this.ctx.jwt.sign(userId, "refresh", now),
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
