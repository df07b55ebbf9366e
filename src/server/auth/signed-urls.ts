import { createHmac, timingSafeEqual } from "node:crypto";
import { deriveKey } from "./tokens.js";

/** How long a recording download link stays valid. */
export const DOWNLOAD_LINK_TTL_S = 60 * 60;

/**
 * Download links carry their own credential: `signature = hex HMAC-SHA256(key, "<botId>.<expires>")`,
 * `expires` in Unix seconds, the key derived from the server secret for this purpose only.
 */
export class DownloadSigner {
  private readonly key: Buffer;
  private readonly etagKey: Buffer;

  constructor(secret: Uint8Array) {
    this.key = deriveKey(secret, "recording-download");
    this.etagKey = deriveKey(secret, "recording-etag");
  }

  /**
   * A recording's strong validator: it changes with the stored file (`version`: its size and when
   * it was stored) and, keyed, tells whoever holds a share link nothing, not even the bot's id.
   */
  etag(botId: number, version: string): string {
    const digest = createHmac("sha256", this.etagKey).update(`${botId}.${version}`).digest("base64url");
    return `"${digest.slice(0, 27)}"`;
  }

  sign(botId: number, expires: number): string {
    return createHmac("sha256", this.key).update(`${botId}.${expires}`).digest("hex");
  }

  /** True when the signature matches and `expires` (Unix seconds) is not in the past. */
  verify(botId: number, expires: string | undefined, signature: string | undefined, now: Date): boolean {
    if (!expires || !signature || !/^[0-9]{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) {
      return false;
    }
    const expected = Buffer.from(this.sign(botId, Number(expires)), "hex");
    const given = Buffer.from(signature, "hex");
    if (!timingSafeEqual(expected, given)) return false;
    return Number(expires) * 1000 >= now.getTime();
  }
}
