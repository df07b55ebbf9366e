import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseSecretKeys, SecretBox } from "../../src/server/auth/secret-box.js";
import { resolveConfig } from "../../src/server/config.js";
import { StartupError } from "../../src/server/startup-error.js";

const k1 = randomBytes(32);
const k2 = randomBytes(32);

describe("MEETBOT_SECRET_KEY", () => {
  it("is one key (id default) or several with ids, the first one sealing; empty is none", () => {
    expect(parseSecretKeys("")).toEqual([]);
    expect(parseSecretKeys(` ${k1.toString("base64")} `)).toEqual([{ id: "default", key: k1 }]);
    expect(parseSecretKeys(`k2:${k2.toString("base64")}, k1:${k1.toString("base64url")}`)).toEqual([
      { id: "k2", key: k2 },
      { id: "k1", key: k1 },
    ]);
  });

  it("refuses a bad value in one line per variable, never showing a key", () => {
    const refusal = (value: string) => {
      try {
        resolveConfig({ dataDir: "/tmp/meetbot-keys", env: { MEETBOT_SECRET_KEY: value } });
      } catch (err) {
        expect(err).toBeInstanceOf(StartupError);
        expect((err as Error).message).not.toContain(value.split(":").at(-1));
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    const short = randomBytes(16).toString("base64");
    expect(refusal(short)).toBe(
      'MEETBOT_SECRET_KEY: key "default" must be 32 bytes in base64 (openssl rand -base64 32), got 16 bytes',
    );
    expect(refusal(`k1:${k1.toString("base64")},${k2.toString("base64")}`)).toBe(
      "MEETBOT_SECRET_KEY: entry 2: with several keys, each must be <id>:<base64 of 32 bytes>",
    );
    expect(refusal(`k1:${k1.toString("base64")},k1:${k2.toString("base64")}`)).toBe(
      'MEETBOT_SECRET_KEY: key id "k1" is given twice',
    );
    expect(refusal(`k 1:${k1.toString("base64")}`)).toMatch(/^MEETBOT_SECRET_KEY: entry 1: a key id is/);
    expect(refusal("not base64!")).toMatch(/got no base64$/);
  });
});

describe("SecretBox", () => {
  const box = new SecretBox([
    { id: "k2", key: k2 },
    { id: "k1", key: k1 },
  ]);

  it("seals with the first key (AES-256-GCM: a fresh nonce, a 16-byte tag) and opens with any", () => {
    const sealed = box.seal("the session", "user 1");
    expect(sealed.keyId).toBe("k2");
    expect(Buffer.from(sealed.nonce, "base64")).toHaveLength(12);
    expect(Buffer.from(sealed.tag, "base64")).toHaveLength(16);
    expect(Buffer.from(sealed.ciphertext, "base64").toString("utf8")).not.toContain("session");
    expect(box.seal("the session", "user 1").nonce).not.toBe(sealed.nonce);
    expect(box.open(sealed, "user 1")).toBe("the session");
    const old = new SecretBox([{ id: "k1", key: k1 }]).seal("older", "user 1");
    expect(box.open(old, "user 1")).toBe("older");
  });

  it("opens nothing altered, bound to something else, or under a key it does not have", () => {
    const sealed = box.seal("the session", "user 1");
    expect(() => box.open(sealed, "user 2")).toThrow(/does not open/);
    const flipped = Buffer.from(sealed.ciphertext, "base64");
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => box.open({ ...sealed, ciphertext: flipped.toString("base64") }, "user 1")).toThrow(
      /does not open/,
    );
    expect(() => new SecretBox([{ id: "k1", key: k1 }]).open(sealed, "user 1")).toThrow(
      'secret key "k2" is not configured (MEETBOT_SECRET_KEY)',
    );
    expect(() => new SecretBox([]).seal("x", "y")).toThrow(/no secret key/);
  });
});
