import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import type { StorageState } from "../../src/core/index.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Bot account checks end to end: the server launches a real check runner (Chromium) through the
 * local launcher; it opens a mock Meet meeting with the account's session, reports, and exits.
 */

let stack: Awaited<ReturnType<typeof startStack>>;

beforeAll(async () => {
  stack = await startStack({
    env: {
      MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
      MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS: "0",
    },
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
});

async function mock(method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.mock.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

const account = (id: number) => stack.api.send("GET", `/v1/bot-accounts/${id}`);

describe("bot account checks", { timeout: 150_000 }, () => {
  it("a valid session checks active with the account's name; after the platform expires it, the next check finds it expired", async () => {
    const code = "chk-acco-unt";
    await mock("PUT", `/control/meetings/google/${code}`, { admit: "open", participants: 1 });
    await mock("PUT", "/control/accounts/google/check-bot-1", { name: "Ada Account" });
    const session = (await mock("POST", "/control/accounts/google/check-bot-1/sessions")) as StorageState;
    const created = await stack.api.send("POST", "/v1/bot-accounts", {
      platform: "google",
      name: "Checked",
      session,
    });
    expect(created.status).toBe("unchecked");

    const first = await stack.api.send("POST", `/v1/bot-accounts/${created.id}/check`, {
      meetingUrl: `${stack.mock.url}/meet/${code}`,
    });
    expect(first.status).toBe("queued");
    const checked = await eventually(
      async () => {
        const now = await account(created.id);
        return now.lastCheckedAt ? now : undefined;
      },
      "the first check's answer",
      90_000,
    );
    expect(checked).toMatchObject({
      status: "active",
      accountName: "Ada Account",
      accountEmail: "check-bot-1@example.com",
    });
    // The session the page rotated on this visit was written back.
    expect(checked.sessionUpdatedAt).not.toBe(created.sessionUpdatedAt);
    // It only looked: nobody asked to join the meeting.
    const state = (await mock("GET", `/control/meetings/google/${code}`)) as MeetingState;
    expect(state.attendees).toEqual([]);

    await mock("POST", "/control/accounts/google/check-bot-1/expire");
    const second = await stack.api.send("POST", `/v1/bot-accounts/${created.id}/check`, {});
    expect(second.checkId).not.toBe(first.checkId);
    const expired = await eventually(
      async () => {
        const now = await account(created.id);
        return now.lastCheckedAt !== checked.lastCheckedAt ? now : undefined;
      },
      "the second check's answer",
      90_000,
    );
    expect(expired.status).toBe("expired");

    // The runners' logs say what they saw, and hold no cookie of the session.
    const logs = [
      await readFile(stack.launcher.checkLogFile(first.checkId), "utf8"),
      await readFile(stack.launcher.checkLogFile(second.checkId), "utf8"),
    ].join("\n");
    expect(logs).toContain("signed in");
    expect(logs).toContain("account check: not signed in");
    for (const cookie of session.cookies.filter((c) => c.value.length >= 8))
      expect(logs).not.toContain(cookie.value);
  });
});
