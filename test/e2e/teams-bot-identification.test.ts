import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * Teams bot identification end to end: the server, configured with an Entra ID app
 * (MEETBOT_TEAMS_BOT_*), mints the token from a stand-in of Microsoft's token endpoint (real HTTP
 * on 127.0.0.1) and puts it in the BotConfig of a real runner (Chromium, ffmpeg), which opens the
 * mock Teams meeting with `#token=`: the mock's bot lobby lets the identified bot straight in, and
 * keeps a bot whose token the meeting does not take (the control that the first check can fail).
 * A failed mint is the integration test's (test/integration/server-teams-bot-token.test.ts).
 */

const CLIENT_ID = "00000000-aaaa-bbbb-cccc-000000000002";
const CLIENT_SECRET = `secret~${randomBytes(18).toString("base64url")}`;
/** The token the stand-in hands out, and the one the mock Teams host takes as valid. */
const TOKEN = `eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.e2e-${randomUUID()}.sig`;

const forms: Array<Record<string, string>> = [];
let endpoint: Server;
let stack: Awaited<ReturnType<typeof startStack>>;

beforeAll(async () => {
  endpoint = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      forms.push(Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString())));
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ token_type: "Bearer", expires_in: 3599, access_token: TOKEN }));
    });
  });
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  const port = (endpoint.address() as AddressInfo).port;
  stack = await startStack({
    env: {
      MEETBOT_TEAMS_BOT_TENANT_ID: "tenant-1.onmicrosoft.com",
      MEETBOT_TEAMS_BOT_CLIENT_ID: CLIENT_ID,
      MEETBOT_TEAMS_BOT_CLIENT_SECRET: CLIENT_SECRET,
      MEETBOT_TEAMS_TOKEN_URL: `http://127.0.0.1:${port}/tenant-1/oauth2/v2.0/token`,
    },
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await new Promise((resolve) => endpoint?.close(resolve));
});

const FINAL = ["DONE", "FATAL"] as const;
const meetingInfo = (id: string) => ({
  platform: "teams",
  meetingId: id,
  tenantId: "tenant-1",
  organizerId: "organizer-1",
});
const meetingState = async (id: string) =>
  (await stack.control.state("teams", id)) as unknown as MeetingState;

async function deploy(id: string): Promise<number> {
  // Audio-only: the token is under test, not the picture.
  const bot = await stack.api.createBot({
    meetingInfo: meetingInfo(id) as never,
    botDisplayName: "Meetbot",
    recording: { video: false },
  });
  await stack.api.deploy(bot.id);
  return bot.id;
}

describe("Teams bot identification", { timeout: 180_000 }, () => {
  it("the server's minted token takes a real runner past the bot lobby; it is in no log", async () => {
    const id = "TeamsIdentified0001";
    await stack.control.configure("teams", id, {
      admit: "open",
      participants: 1,
      botLobby: true,
      botToken: TOKEN,
    });
    const botId = await deploy(id);
    await eventually(
      async () =>
        (await stack.api.botEvents(botId)).some((e) => e.eventType === "RECORDING_STARTED")
          ? true
          : undefined,
      "the bot to record",
      90_000,
    );
    expect(forms).toEqual([
      {
        grant_type: "client_credentials",
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        scope: "https://ic3.teams.office.com/.default",
      },
    ]);
    expect((await meetingState(id)).attendees).toMatchObject([{ state: "in_call", identified: true }]);
    await stack.control.end("teams", id);
    const final = await stack.api.waitForStatus(botId, [...FINAL], { timeoutMs: 90_000 });
    expect(final.status).toBe("DONE");
    const types = (await stack.api.botEvents(botId)).map((e) => e.eventType);
    expect(types).not.toContain("IN_WAITING_ROOM");
    const texts = [
      await readFile(stack.launcher.logFile(botId), "utf8"),
      JSON.stringify(await stack.api.botLogs(botId)),
      JSON.stringify(await stack.api.botEvents(botId)),
      JSON.stringify(await stack.api.bot(botId)),
    ];
    for (const text of texts) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(CLIENT_SECRET);
    }
  });

  it("a meeting that takes another token keeps the bot in its bot lobby; the token was not minted again", async () => {
    const id = "TeamsUnidentified01";
    await stack.control.configure("teams", id, {
      admit: "open",
      participants: 1,
      botLobby: true,
      botToken: "another-valid-token",
    });
    const botId = await deploy(id);
    await stack.api.waitForStatus(botId, ["IN_WAITING_ROOM"], { timeoutMs: 90_000 });
    expect((await meetingState(id)).attendees).toMatchObject([{ state: "lobby", identified: false }]);
    expect(forms).toHaveLength(1); // the cached token, shared
    await stack.api.kill(botId);
    await stack.api.waitForStatus(botId, ["FATAL"], { timeoutMs: 30_000 });
  });
});
