import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  constructWebhookEvent,
  signWebhook,
  verifyWebhook,
  WebhookIdCache,
  WebhookVerificationError,
} from "../../src/client/webhooks.js";

const secret = "whsec_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const now = new Date("2026-11-21T10:00:00.000Z");
const ts = Math.floor(now.getTime() / 1000);
const body = JSON.stringify({
  event: "bot.joined",
  botId: 7,
  timestamp: "2026-11-21T09:59:59.000Z",
  data: { meetingTitle: "Weekly", platform: "google" },
});

function signedHeaders(opts: { at?: number; raw?: string; key?: string; id?: string } = {}) {
  const at = opts.at ?? ts;
  return {
    "X-Webhook-Signature": signWebhook(opts.key ?? secret, at, opts.raw ?? body),
    "X-Webhook-Timestamp": String(at),
    "X-Webhook-Id": opts.id ?? "whdel_00112233445566778899aabb",
    "X-Webhook-Event": "bot.joined",
  };
}

describe("signWebhook", () => {
  it("is sha256= and the hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the whole secret", () => {
    const expected = createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex");
    expect(signWebhook(secret, ts, body)).toBe(`sha256=${expected}`);
    expect(signWebhook(secret, ts, Buffer.from(body))).toBe(`sha256=${expected}`);
  });
});

describe("verifyWebhook", () => {
  it("accepts a delivery signed with the secret, from node headers or a fetch Headers", () => {
    const result = verifyWebhook({ rawBody: body, headers: signedHeaders(), secret, now });
    expect(result).toEqual({
      ok: true,
      webhook: { id: "whdel_00112233445566778899aabb", event: "bot.joined", payload: JSON.parse(body) },
    });
    const fetchHeaders = new Headers(signedHeaders());
    expect(verifyWebhook({ rawBody: Buffer.from(body), headers: fetchHeaders, secret, now }).ok).toBe(true);
  });

  it("rejects a tampered body, a tampered signature and the wrong secret", () => {
    const tamperedBody = body.replace('"botId":7', '"botId":8');
    expect(verifyWebhook({ rawBody: tamperedBody, headers: signedHeaders(), secret, now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    });
    const headers = signedHeaders();
    const sig = headers["X-Webhook-Signature"];
    const flipped = `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`;
    expect(
      verifyWebhook({ rawBody: body, headers: { ...headers, "X-Webhook-Signature": flipped }, secret, now }),
    ).toEqual({ ok: false, reason: "signature_mismatch" });
    expect(verifyWebhook({ rawBody: body, headers, secret: `${secret}0`, now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    });
  });

  it("rejects a timestamp that was re-signed-over: changing X-Webhook-Timestamp breaks the signature", () => {
    const headers = { ...signedHeaders(), "X-Webhook-Timestamp": String(ts + 1) };
    expect(verifyWebhook({ rawBody: body, headers, secret, now }).ok).toBe(false);
  });

  it("rejects stale and future timestamps beyond 300 s, accepts them within", () => {
    const at = (offset: number) =>
      verifyWebhook({ rawBody: body, headers: signedHeaders({ at: ts + offset }), secret, now });
    expect(at(-300).ok).toBe(true);
    expect(at(300).ok).toBe(true);
    expect(at(-301)).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" });
    expect(at(301)).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" });
    expect(
      verifyWebhook({
        rawBody: body,
        headers: signedHeaders({ at: ts - 3600 }),
        secret,
        now,
        toleranceSeconds: 7200,
      }).ok,
    ).toBe(true);
  });

  it("names what is missing or malformed", () => {
    const { "X-Webhook-Id": _id, ...noId } = signedHeaders();
    expect(verifyWebhook({ rawBody: body, headers: noId, secret, now })).toEqual({
      ok: false,
      reason: "missing_header",
    });
    const badTs = { ...signedHeaders(), "X-Webhook-Timestamp": "1e9" };
    expect(verifyWebhook({ rawBody: body, headers: badTs, secret, now })).toEqual({
      ok: false,
      reason: "malformed_timestamp",
    });
    const badSig = { ...signedHeaders(), "X-Webhook-Signature": "sha1=abc" };
    expect(verifyWebhook({ rawBody: body, headers: badSig, secret, now })).toEqual({
      ok: false,
      reason: "malformed_signature",
    });
    const notJson = "not json";
    expect(
      verifyWebhook({ rawBody: notJson, headers: signedHeaders({ raw: notJson }), secret, now }),
    ).toEqual({ ok: false, reason: "malformed_body" });
  });

  it("accepts either of two secrets while a receiver switches to a rotated one", () => {
    const rotated = `whsec_${"ab".repeat(32)}`;
    const headers = signedHeaders({ key: rotated });
    expect(verifyWebhook({ rawBody: body, headers, secret: [secret, rotated], now }).ok).toBe(true);
    expect(verifyWebhook({ rawBody: body, headers, secret: [secret], now }).ok).toBe(false);
  });

  it("constructWebhookEvent throws a WebhookVerificationError with the reason", () => {
    expect(constructWebhookEvent({ rawBody: body, headers: signedHeaders(), secret, now }).event).toBe(
      "bot.joined",
    );
    const stale = signedHeaders({ at: ts - 1000 });
    expect(() => constructWebhookEvent({ rawBody: body, headers: stale, secret, now })).toThrow(
      WebhookVerificationError,
    );
    try {
      constructWebhookEvent({ rawBody: body, headers: stale, secret, now });
    } catch (err) {
      expect((err as WebhookVerificationError).reason).toBe("timestamp_out_of_tolerance");
    }
  });
});

describe("replays", () => {
  it("pass the signature check within the tolerance, and WebhookIdCache catches them by X-Webhook-Id", () => {
    const headers = signedHeaders();
    const cache = new WebhookIdCache();
    const first = verifyWebhook({ rawBody: body, headers, secret, now });
    const replay = verifyWebhook({ rawBody: body, headers, secret, now: new Date(now.getTime() + 60_000) });
    expect(first.ok && replay.ok).toBe(true);
    if (!first.ok || !replay.ok) return;
    expect(cache.firstSeen(first.webhook.id, now)).toBe(true);
    expect(cache.firstSeen(replay.webhook.id, new Date(now.getTime() + 60_000))).toBe(false);
    expect(cache.firstSeen("whdel_other", now)).toBe(true);
  });

  it("WebhookIdCache forgets ids after their time to live, and keeps at most maxIds", () => {
    const cache = new WebhookIdCache(60, 2);
    expect(cache.firstSeen("a", now)).toBe(true);
    expect(cache.firstSeen("a", new Date(now.getTime() + 59_000))).toBe(false);
    expect(cache.firstSeen("a", new Date(now.getTime() + 61_000))).toBe(true);
    const later = new Date(now.getTime() + 62_000);
    expect(cache.firstSeen("b", later)).toBe(true);
    expect(cache.firstSeen("c", later)).toBe(true); // "a" makes way
    expect(cache.firstSeen("b", later)).toBe(false);
    expect(cache.firstSeen("a", later)).toBe(true);
  });
});
