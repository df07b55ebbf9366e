import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, it } from "vitest";
import { dbfs, startAgentServer, toneLevel } from "../helpers/agent-server.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * A live audio channel for agents (issue 22 §3), with a real bot in real Chromium against the mock
 * Meet page, which plays a participant's tone bursts and hears the bot's microphone as a real
 * meeting does. The agent (test/helpers/agent-server.ts, a WebSocket server on 127.0.0.1) answers
 * each sound it hears with a 2 kHz tone: the meeting hears the answers; the agent never hears them
 * back (its stream is the meeting without the bot's voice); after the agent's server restarts the
 * runner connects again and the answers are heard again.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
let agent: Awaited<ReturnType<typeof startAgentServer>>;
const TOKEN = "agent-secret-token-1234";
beforeAll(async () => {
  stack = await startStack({
    env: {
      // The agent listens on loopback: allowed as for webhooks in tests.
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
      MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
    },
  });
  agent = await startAgentServer();
});
afterAll(async () => {
  await stack?.close();
  await agent?.close();
});

interface Attendee {
  mic: { muted: boolean };
  heard: { levels: Array<{ atMs: number; dbfs: number }> };
}
const REPLY_HZ = 2000;

describe("an agent on the bot's audio stream (Meet)", { timeout: 300_000 }, () => {
  it("hears the meeting, is heard in it, never hears itself, and is reconnected after a restart", async ({
    expect,
  }) => {
    const id = "agt-stre-ama";
    await stack.control.configure("google", id, { admit: "open", participants: 1, media: "speech" });
    const bot = await stack.api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${id}` },
      botDisplayName: "Agent Bot",
      audioStream: { url: agent.url, token: TOKEN },
    });
    expect(bot.audioStream).toEqual({ url: agent.url, sampleRate: 16000, hasToken: true });
    await stack.api.deploy(bot.id);
    const attendee = async () =>
      ((await stack.control.state("google", id)) as { attendees: Attendee[] }).attendees[0] as Attendee;

    // ---- connected: the start frame, the token, the roster ----
    await eventually(
      async () => (agent.state.replies.length >= 3 ? true : undefined),
      "three replies",
      120_000,
    );
    expect(agent.state.authorizations[0]).toBe(`Bearer ${TOKEN}`);
    expect(agent.state.json[0]).toMatchObject({
      type: "start",
      botId: bot.id,
      sampleRate: 16000,
      encoding: "pcm_s16le",
      channels: 1,
      frameMs: 20,
    });
    expect(agent.state.json[1]).toMatchObject({ type: "participants" });
    expect(agent.state.json.some((f) => f.type === "speaker.started" && f.participantId !== "self")).toBe(
      true,
    );
    // 20 ms frames of the meeting's sound, some of them the participant's tone.
    expect(agent.state.frames.every((f) => f.pcm.length === 320)).toBe(true);
    expect(agent.state.frames.some((f) => dbfs(f.pcm) > -40)).toBe(true);

    // ---- the meeting hears the answers; the microphone stays on ----
    const loudAfter = async (fromMs: number) =>
      (await attendee()).heard.levels.filter((l) => l.atMs >= fromMs && l.dbfs > -40).length;
    await eventually(async () => ((await loudAfter(0)) >= 5 ? true : undefined), "the answers heard", 30_000);
    expect((await attendee()).mic.muted).toBe(false);

    // ---- the agent never hears its own answers ----
    const ownTone = agent.state.frames.map((f) => toneLevel(f.pcm, REPLY_HZ, 16000));
    expect(Math.max(...ownTone)).toBeLessThan(-50);

    // ---- the agent's server restarts: the runner connects again ----
    const heardBefore = (await attendee()).heard.levels.length * 100;
    const repliesBefore = agent.state.replies.length;
    await agent.restart();
    await eventually(
      async () => (agent.state.connections >= 2 ? true : undefined),
      "a second connection",
      60_000,
    );
    expect(agent.state.json.filter((f) => f.type === "start").length).toBe(2);
    expect(agent.state.authorizations[1]).toBe(`Bearer ${TOKEN}`);
    await eventually(
      async () => (agent.state.replies.length >= repliesBefore + 2 ? true : undefined),
      "replies after the restart",
      60_000,
    );
    await eventually(
      async () => ((await loudAfter(heardBefore)) >= 3 ? true : undefined),
      "answers heard after the restart",
      30_000,
    );
    const logs = (await stack.api.botLogs(bot.id)).map((l) => l.message).join("\n");
    expect(logs).toMatch(/audio stream connected to ws:\/\/127\.0\.0\.1:\d+/);
    expect(logs).toMatch(/closed \(code \d+.*reconnecting/);
    expect(logs).not.toContain(TOKEN);

    await stack.control.end("google", id);
    expect((await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 })).status).toBe(
      "DONE",
    );
    const last = agent.state.json.at(-1);
    expect(last?.type).toBe("end");
  });
});
