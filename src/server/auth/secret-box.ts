import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Secrets at rest (bot-account sessions): AES-256-GCM under the operator's key, env
 * MEETBOT_SECRET_KEY. Each sealed secret keeps the id of the key that sealed it, its 96-bit
 * random nonce and its 128-bit tag beside the ciphertext, so that keys can be rotated: the first
 * key seals, any configured key opens what it sealed.
 *
 * MEETBOT_SECRET_KEY is one key, `<base64 of 32 bytes>` (its id is `default`), or several,
 * `<id>:<base64>,<id>:<base64>,...`, the first one sealing. Rotating: add the new key after the
 * current one on every server (`k1:...,k2:...`), then put it first (`k2:...,k1:...`); each server
 * rewrites the sessions still under other keys with the first one when it starts. Once every
 * server has started so, the old key can go.
 *
 * The additional data binds a sealed secret to what it belongs to (e.g. its owner), so that a
 * ciphertext copied onto another row does not open there.
 */

export interface SecretKey {
  id: string;
  key: Buffer;
}

export interface Sealed {
  keyId: string;
  /** base64 of the 12-byte nonce. */
  nonce: string;
  /** base64 of the 16-byte GCM tag. */
  tag: string;
  /** base64 of the ciphertext. */
  ciphertext: string;
}

export const DEFAULT_KEY_ID = "default";
const KEY_ID = /^[A-Za-z0-9_.-]{1,32}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * Parses MEETBOT_SECRET_KEY; an empty value is no key. Throws an Error whose message never
 * shows a key's bytes (only ids and positions).
 */
export function parseSecretKeys(raw: string): SecretKey[] {
  const text = raw.trim();
  if (text === "") return [];
  const entries = text.split(",").map((entry) => entry.trim());
  const keys: SecretKey[] = [];
  for (const [index, entry] of entries.entries()) {
    const colon = entry.indexOf(":");
    const single = colon < 0 && entries.length === 1;
    if (colon < 0 && !single)
      throw new Error(`entry ${index + 1}: with several keys, each must be <id>:<base64 of 32 bytes>`);
    const id = single ? DEFAULT_KEY_ID : entry.slice(0, colon);
    const encoded = single ? entry : entry.slice(colon + 1);
    if (!KEY_ID.test(id))
      throw new Error(`entry ${index + 1}: a key id is 1 to 32 of A-Z a-z 0-9 . _ - (before the colon)`);
    // Node's base64 decoder takes the URL-safe alphabet too.
    const key = BASE64.test(encoded) ? Buffer.from(encoded, "base64") : null;
    if (!key || key.length !== 32)
      throw new Error(
        `key "${id}" must be 32 bytes in base64 (openssl rand -base64 32), got ${key ? `${key.length} bytes` : "no base64"}`,
      );
    if (keys.some((known) => known.id === id)) throw new Error(`key id "${id}" is given twice`);
    keys.push({ id, key });
  }
  return keys;
}

export class SecretBox {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: readonly SecretKey[]) {
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** Whether any key is configured: without one, nothing can be sealed. */
  get configured(): boolean {
    return this.keys.length > 0;
  }

  /** The id of the key that seals; undefined without keys. */
  get currentKeyId(): string | undefined {
    return this.keys[0]?.id;
  }

  has(keyId: string): boolean {
    return this.byId.has(keyId);
  }

  seal(plaintext: string, additionalData: string): Sealed {
    const current = this.keys[0];
    if (!current) throw new Error("no secret key is configured (MEETBOT_SECRET_KEY)");
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", current.key, nonce, { authTagLength: 16 });
    cipher.setAAD(Buffer.from(additionalData, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return {
      keyId: current.id,
      nonce: nonce.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      ciphertext: ciphertext.toString("base64"),
    };
  }

  /** The plaintext; throws when the key is not configured or the secret does not authenticate. */
  open(sealed: Sealed, additionalData: string): string {
    const key = this.byId.get(sealed.keyId);
    if (!key) throw new Error(`secret key "${sealed.keyId}" is not configured (MEETBOT_SECRET_KEY)`);
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.nonce, "base64"), {
      authTagLength: 16,
    });
    decipher.setAAD(Buffer.from(additionalData, "utf8"));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    try {
      return Buffer.concat([
        decipher.update(Buffer.from(sealed.ciphertext, "base64")),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      throw new Error(`a secret sealed with key "${sealed.keyId}" does not open: wrong key or altered data`);
    }
  }
}
