import { hash, verify } from "@node-rs/argon2";

/** Algorithm.Argon2id (a const enum, which isolatedModules cannot import). */
const ARGON2ID = 2;

export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: ARGON2ID });
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;

/**
 * Spends the time of one verification when the e-mail is unknown, so that the response time of a
 * login does not tell whether an account exists.
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword("not-a-real-password-000");
  await verifyPassword(await dummyHash, password);
  return false;
}

/**
 * Stored as the password hash of users created by OAuth sign-in (users.password_hash is NOT NULL):
 * not an argon2 hash, so no password ever matches it.
 */
export const NO_PASSWORD = "!no-password";

/** False for NO_PASSWORD (and anything else that is not an argon2 hash). */
export function isPasswordHash(passwordHash: string): boolean {
  return passwordHash.startsWith("$argon2");
}
