import { randomBytes } from "node:crypto";
import { sha256Hex } from "./tokens.js";

/**
 * API keys are "mbk_" + 64 hex characters (32 random bytes). The fixed prefix tells a key from a
 * JWT without a lookup, and lets secret scanners recognise a leaked key.
 */
export const API_KEY_PREFIX = "mbk_";
const API_KEY = /^mbk_[0-9a-f]{64}$/;

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString("hex");
}

/** True for anything that claims to be an API key (a JWT never starts with the prefix). */
export function isApiKeyCandidate(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

export function isWellFormedApiKey(token: string): boolean {
  return API_KEY.test(token);
}

/** Only this is stored: the key itself is shown once, at creation. */
export function hashApiKey(key: string): string {
  return sha256Hex(key);
}

/** Prefix, the first 6 and the last 4 hex characters: "mbk_1a2b3c...9f8e" (216 bits stay secret). */
export function apiKeyPreview(key: string): string {
  return `${key.slice(0, API_KEY_PREFIX.length + 6)}...${key.slice(-4)}`;
}
