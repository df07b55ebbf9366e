import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { EncryptJWT, errors as joseErrors, jwtDecrypt, type JWTPayload, jwtVerify, SignJWT } from "jose";

export const ACCESS_TOKEN_TTL_S = 30 * 60;
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60;

export type TokenType = "access" | "refresh";

/**
 * The server's one secret: the configured one (env MEETBOT_JWT_SECRET, checked by the server's
 * config), else 32 random bytes generated once and kept (hex, mode 0600) in `<dataDir>/jwt-secret`.
 * Purpose-specific keys are derived from it.
 */
export async function loadServerSecret(dataDir: string, configured?: string): Promise<Buffer> {
  if (configured) return Buffer.from(configured, "utf8");
  const file = path.join(dataDir, "jwt-secret");
  await mkdir(dataDir, { recursive: true });
  try {
    await writeFile(file, randomBytes(32).toString("hex"), { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const hex = (await readFile(file, "utf8")).trim();
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error(`${file} does not hold a 32-byte hex secret`);
  return Buffer.from(hex, "hex");
}

/** A key for one purpose, so that a JWT key never signs a download link and vice versa. */
export function deriveKey(secret: Uint8Array, purpose: string): Buffer {
  return createHmac("sha256", secret).update(`meetbot:${purpose}`).digest();
}

/**
 * What ties a JWT to its sign-in (src/server/services/users.ts): the user's session generation
 * when it was issued (a password change or a revoke of all sessions moves it on, so every token
 * of an earlier generation is refused), and its refresh-token family (one per sign-in; refresh
 * tokens rotate within it and a reused one ends it).
 */
export interface SessionClaims {
  gen: number;
  fam: string;
}

/** A valid, unexpired token of the expected type. */
export interface VerifiedToken {
  userId: number;
  /** The token's own id; every token the server issues has one. */
  jti: string | null;
  /** Null for a token without well-formed session claims, which no sign-in accepts. */
  session: SessionClaims | null;
}

/** A random id for a token (`jti`) or a refresh-token family: 16 bytes, base64url (22 characters). */
export function newTokenId(): string {
  return randomBytes(16).toString("base64url");
}

const TOKEN_ID = /^[A-Za-z0-9_-]{16,64}$/;

/** When a token of this type issued at `now` expires (whole seconds, as in its `exp`). */
export function tokenExpiry(typ: TokenType, now: Date): Date {
  const iat = Math.floor(now.getTime() / 1000);
  return new Date((iat + (typ === "access" ? ACCESS_TOKEN_TTL_S : REFRESH_TOKEN_TTL_S)) * 1000);
}

export class JwtIssuer {
  private readonly key: Uint8Array;
  private readonly sealKey: Uint8Array;

  constructor(secret: Uint8Array) {
    this.key = deriveKey(secret, "jwt");
    this.sealKey = deriveKey(secret, "sealed-state");
  }

  /**
   * A token for `userId`. Every token gets a `jti` (a fresh random one unless given), so that two
   * tokens issued in the same second differ. Without `session` the token carries no session
   * claims and the user service refuses it: only tests sign such tokens.
   */
  async sign(
    userId: number,
    typ: TokenType,
    now = new Date(),
    session?: SessionClaims & { jti?: string },
  ): Promise<string> {
    const iat = Math.floor(now.getTime() / 1000);
    const claims = session ? { typ, gen: session.gen, fam: session.fam } : { typ };
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(String(userId))
      .setJti(session?.jti ?? newTokenId())
      .setIssuedAt(iat)
      .setExpirationTime(tokenExpiry(typ, now).getTime() / 1000)
      .sign(this.key);
  }

  /** The user id and claims of a valid, unexpired token of the expected type; null otherwise. */
  async verify(token: string, expected: TokenType): Promise<VerifiedToken | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ["HS256"],
        requiredClaims: ["exp", "sub"],
      });
      const { sub, jti, gen, fam } = payload as { sub: unknown; jti: unknown; gen: unknown; fam: unknown };
      if (payload.typ !== expected || typeof sub !== "string" || !/^[1-9][0-9]{0,9}$/.test(sub)) return null;
      const wellFormed =
        typeof gen === "number" &&
        Number.isSafeInteger(gen) &&
        gen >= 0 &&
        typeof fam === "string" &&
        TOKEN_ID.test(fam);
      return {
        userId: Number(sub),
        jti: typeof jti === "string" && TOKEN_ID.test(jti) ? jti : null,
        session: wellFormed ? { gen, fam } : null,
      };
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }

  /**
   * Encrypts (JWE, dir + A256GCM) state that the server hands to a browser and reads back later,
   * e.g. the OAuth flow cookie: the browser can neither read nor alter it, and any server process
   * with the same secret can open it until `ttlS` has passed.
   */
  async seal(payload: JWTPayload, ttlS: number, now = new Date()): Promise<string> {
    const iat = Math.floor(now.getTime() / 1000);
    return new EncryptJWT(payload)
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlS)
      .encrypt(this.sealKey);
  }

  /** The payload of an unexpired token made by `seal`; null when expired, altered or foreign. */
  async unseal(token: string, now = new Date()): Promise<JWTPayload | null> {
    try {
      const { payload } = await jwtDecrypt(token, this.sealKey, {
        keyManagementAlgorithms: ["dir"],
        contentEncryptionAlgorithms: ["A256GCM"],
        currentDate: now,
      });
      return payload;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) return null;
      throw err;
    }
  }
}

/** A fresh per-bot callback token: 32 random bytes, base64url. */
export function newCallbackToken(): string {
  return randomBytes(32).toString("base64url");
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** Constant-time comparison of two hex digests of the same length. */
export function hexDigestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}
