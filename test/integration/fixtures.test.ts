import { describe } from "vitest";
import { expect, readRow, test } from "../helpers/fixtures.js";

// The fixture's promises: one server per file, a fresh user per test, a recording only when asked.
// The options are this file's own, to show that a file can set them.
test.override("serverOptions", { rateLimit: { perMinute: 0, perHour: 0 } });

const seen = { servers: new Set<string>(), users: new Set<string>() };

describe("the integration fixture", () => {
  test("gives a server on the run's database with the file's options", async ({ server, user }) => {
    seen.servers.add(server.url);
    seen.users.add(user.userId);
    const me = await server.api.get("/v1/users/me", { token: user.token });
    expect(me.status).toBe(200);
    // perMinute 0 turns the limiter off: no rate-limit headers on an answer.
    expect(me.headers.get("x-ratelimit-limit")).toBeNull();
  });

  test("shares the server across the file and makes a fresh user per test", async ({ server, user }) => {
    seen.servers.add(server.url);
    seen.users.add(user.userId);
    expect(seen.servers.size).toBe(1);
    expect(seen.users.size).toBe(2);
    const bots = await server.api.get("/v1/bots", { token: user.token });
    expect(bots.body.total).toBe(0);
  });

  test("makes a recorded bot whose row readRow finds", async ({ server, user, recording, db }) => {
    const bot = await server.api.get(`/v1/bots/${recording.botId}`, { token: user.token });
    expect(bot.body.status).toBe("DONE");
    const row = await readRow(db, "bots", recording.botId);
    expect(row?.status).toBe("DONE");
    expect(row?.meeting_title).toBe("Standup");
    expect(await readRow(db, "bots", recording.botId + 1_000)).toBeUndefined();
  });

  // The README's example, kept true.
  test("a deleted bot leaves no row", async ({ server, user, db, recording }) => {
    const deleted = await server.api.delete(`/v1/bots/${recording.botId}`, { token: user.token });
    expect(deleted.status).toBe(204);
    expect(await readRow(db, "bots", recording.botId)).toBeUndefined();
  });
});
