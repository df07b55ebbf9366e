import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

/**
 * What a receiver installs: the built package's `meetbot/webhooks` entry point (the compiled
 * dist, as `make build` leaves it), imported by name from a separate Node process.
 */
describe("the package's webhook verification helper", () => {
  it("verifies a delivery signed as the server signs it, and refuses a tampered one", async () => {
    const secret = "whsec_test_0123456789abcdef";
    const body = JSON.stringify({
      event: "bot.joined",
      botId: 7,
      timestamp: new Date().toISOString(),
      data: {},
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
    const headers = {
      "x-webhook-signature": signature,
      "x-webhook-timestamp": String(timestamp),
      "x-webhook-id": "whdel_test",
      "x-webhook-event": "bot.joined",
    };
    const script = `
      const { verifyWebhook } = await import("meetbot/webhooks");
      const [secret, body, headers] = JSON.parse(process.argv[1]);
      const good = verifyWebhook({ secret, rawBody: body, headers });
      const bad = verifyWebhook({ secret, rawBody: body.replace("7", "8"), headers });
      console.log(JSON.stringify({ good: good.ok, bad: bad.ok }));
    `;
    const { stdout } = await run(process.execPath, [
      "--input-type=module",
      "-e",
      script,
      JSON.stringify([secret, body, headers]),
    ]);
    expect(JSON.parse(stdout)).toEqual({ good: true, bad: false });
  });
});
