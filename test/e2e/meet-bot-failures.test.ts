import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

describe("a bot that cannot get into the call", () => {
  it("is denied by the host: FATAL ADMISSION_DENIED, with a screenshot, the page and a trace", async () => {
    const { api, mock } = stack;
    const bot = await api.createBot({
      meetingInfo: {
        platform: "google",
        meetingUrl: `${mock.url}/meet/den-iedb-ott?admit=deny&admitAfterMs=500`,
      },
    });
    await api.deploy(bot.id);
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
    expect(final.status).toBe("FATAL");
    expect(final.deploymentError?.code).toBe("ADMISSION_DENIED");
    // What the bot saw, downloadable by its owner: a screenshot, the page, the Playwright trace.
    const artifacts = final.deploymentError?.artifacts ?? [];
    expect(artifacts).toEqual([
      `/v1/bots/${bot.id}/artifacts/failure.png`,
      `/v1/bots/${bot.id}/artifacts/failure.html`,
      `/v1/bots/${bot.id}/artifacts/trace.zip`,
    ]);
    const bytes = async (path: string) => {
      const response = await api.fetchRaw(path);
      expect(response.status).toBe(200);
      return Buffer.from(await response.arrayBuffer());
    };
    expect((await bytes(artifacts[0] as string)).subarray(1, 4).toString()).toBe("PNG");
    expect((await bytes(artifacts[1] as string)).toString()).toContain(
      "Someone in the call denied your request to join",
    );
    expect((await bytes(artifacts[2] as string)).subarray(0, 2).toString()).toBe("PK");
    const types = (await api.botEvents(bot.id)).map((e) => e.eventType);
    expect(types).toContain("ERROR");
    expect(types).not.toContain("BOT_JOINED");
    expect(final.recording).toBeNull();
  });
});
