import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";

/** "whsec_" + 64 hex characters (32 random bytes). The HMAC key is this whole string. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("hex")}`;
}

/** "whdel_" + 24 hex characters: X-Webhook-Id, unique across servers without coordination. */
export function newDeliveryId(): string {
  return `whdel_${randomBytes(12).toString("hex")}`;
}

/**
 * The secret that signs deliveries to the callbackUrl of `userId`'s bots, made the first time
 * anyone needs it. Two callers racing to make it both end up with the one that was stored.
 */
export async function signingSecretOf(
  db: Kysely<Database>,
  userId: number,
  now: string,
): Promise<{ secret: string; createdAt: string }> {
  const existing = await db
    .selectFrom("webhook_signing_secrets")
    .select(["secret", "created_at"])
    .where("user_id", "=", userId)
    .executeTakeFirst();
  if (existing) return { secret: existing.secret, createdAt: existing.created_at };
  await db
    .insertInto("webhook_signing_secrets")
    .values({ user_id: userId, secret: newWebhookSecret(), created_at: now })
    .onConflict((oc) => oc.column("user_id").doNothing())
    .execute();
  const stored = await db
    .selectFrom("webhook_signing_secrets")
    .select(["secret", "created_at"])
    .where("user_id", "=", userId)
    .executeTakeFirstOrThrow();
  return { secret: stored.secret, createdAt: stored.created_at };
}

/** Replaces the user's signing secret; deliveries from now on (retries included) use the new one. */
export async function rotateSigningSecret(
  db: Kysely<Database>,
  userId: number,
  now: string,
): Promise<{ secret: string; createdAt: string }> {
  const secret = newWebhookSecret();
  await db
    .insertInto("webhook_signing_secrets")
    .values({ user_id: userId, secret, created_at: now })
    .onConflict((oc) => oc.column("user_id").doUpdateSet({ secret, created_at: now }))
    .execute();
  return { secret, createdAt: now };
}
