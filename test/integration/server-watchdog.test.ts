import { describe, expect, vi } from "vitest";
import { test } from "../helpers/fixtures.js";
import {
  deployedBot,
  openServerDatabase,
  registerUser,
  type TestServer,
  type TestUser,
} from "../helpers/server-harness.js";

let server: TestServer;
let user: TestUser;
test.override("serverOptions", {
  watchdog: { intervalMs: 100, launchTimeoutMs: 1500, heartbeatTimeoutMultiple: 3 },
  // These tests poll; rate limits have tests of their own.
  rateLimit: { perMinute: 0, perHour: 0 },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  user = await registerUser(server.api);
});

/** Polls the bot until its status is one of `wanted`, for at most 15 s. */
async function statusBecomes(botId: number, wanted: string[]) {
  return vi.waitFor(
    async () => {
      const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
      if (!wanted.includes(bot.body.status)) throw new Error(`bot ${botId} still ${bot.body.status}`);
      return bot.body;
    },
    { timeout: 15_000, interval: 100 },
  );
}

describe("the watchdog", () => {
  test("ends a bot whose runner never reports as FATAL LAUNCH_TIMEOUT and stops the runner", async () => {
    const { botId } = await deployedBot(server, user);
    const bot = await statusBecomes(botId, ["FATAL"]);
    expect(bot.deploymentError).toMatchObject({ code: "LAUNCH_TIMEOUT" });
    expect(server.launcher.stopped).toContain(botId);
    const events = await server.api.get(`/v1/bots/${botId}/events`, { token: user.token });
    expect(events.body.map((e: { eventType: string }) => e.eventType)).toEqual(["ERROR"]);
  });

  test("ends a bot whose heartbeats stop as FATAL HEARTBEAT_TIMEOUT, and leaves a live one alone", async () => {
    const silent = await deployedBot(server, user, { heartbeatInterval: 500 });
    const alive = await deployedBot(server, user, { heartbeatInterval: 500 });
    await silent.runner.status("JOINING_CALL");
    await alive.runner.status("JOINING_CALL");
    let beating = true;
    const beat = (async () => {
      while (beating) {
        await alive.runner.send({ type: "heartbeat", data: {} });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const dead = await statusBecomes(silent.botId, ["FATAL"]);
    expect(dead.deploymentError).toMatchObject({ code: "HEARTBEAT_TIMEOUT" });
    expect(server.launcher.stopped).toContain(silent.botId);
    // The beating bot outlived the silent one's 1.5 s limit and is still joining.
    const live = await server.api.get(`/v1/bots/${alive.botId}`, { token: user.token });
    expect(live.body.status).toBe("JOINING_CALL");
    expect(server.launcher.stopped).not.toContain(alive.botId);
    beating = false;
    await beat;
  });

  test("sends a timed-out bot's bot.ended once its runner's wind-down is over, not before", async () => {
    const hook = await server.api.post("/v1/webhooks", {
      token: user.token,
      body: { name: "ends", url: "https://hooks.example.com/ends", events: ["bot.error", "bot.ended"] },
    });
    expect(hook.status).toBe(201);
    const { botId, runner } = await deployedBot(server, user, { heartbeatInterval: 500 });
    await runner.status("JOINING_CALL");
    await statusBecomes(botId, ["FATAL"]);
    const db = await openServerDatabase(server);
    try {
      const queued = async () =>
        (
          await db.kysely
            .selectFrom("webhook_deliveries")
            .select("event")
            .where("bot_id", "=", botId)
            .orderBy("id")
            .execute()
        ).map((row) => row.event);
      // Held: the runner may still be uploading its recording (a recording.ready to come first).
      expect(await queued()).toEqual(["bot.error"]);
      // The wind-down (an hour) is made to be over; the next sweep sends bot.ended.
      await db.kysely
        .updateTable("bots")
        .set({ callback_token_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("id", "=", botId)
        .execute();
      await expect.poll(queued, { timeout: 10_000, interval: 100 }).toEqual(["bot.error", "bot.ended"]);
    } finally {
      await db.close();
    }
  });

  test("leaves bots that are not running alone", async () => {
    const created = await server.api.post("/v1/bots", {
      token: user.token,
      body: { meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" } },
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const bot = await server.api.get(`/v1/bots/${created.body.id}`, { token: user.token });
    expect(bot.body.status).toBe("READY_TO_DEPLOY");
  });
});
