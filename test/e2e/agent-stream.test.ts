import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, it } from "vitest";
import { dbfs, startAgentServer, toneLevel } from "../helpers/agent-server.js";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * A live audio channel for agents, with real bots in real Chromium against the mock
 * pages of the three platforms, which play a participant's tone bursts and hear the bot's
 * microphone as a real meeting does. The agent (test/helpers/agent-server.ts, a WebSocket server on 127.0.0.1) answers
 * each sound it hears with a 2 kHz tone: the meeting hears the answers; the agent never hears them
 * back (its stream is the meeting without the bot's voice); after the agent's server restarts the
 * runner connects again and the answers are heard again.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
/** Every test's own agent: a bot left running by a failed test cannot reach the next one's. */
const agents: Array<Awaited<ReturnType<typeof startAgentServer>>> = [];
const TOKEN = "agent-secret-token-1234";
beforeAll(async () => {
  stack = await startStack({
    env: {
      // The agent listens on loopback: allowed as for webhooks in tests.
      MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
      MEETBOT_SECRET_KEY: randomBytes(32).toString("base64"),
    },
  });
});
afterAll(async () => {
  await stack?.close();
  for (const agent of agents) await agent.close();
});

interface Attendee {
  mic: { muted: boolean };
  heard: { levels: Array<{ atMs: number; dbfs: number }> };
}
const REPLY_HZ = 2000;

type PlatformName = "google" | "zoom" | "teams";
function meeting(platform: PlatformName): { id: string; meetingInfo: Record<string, unknown> } {
  switch (platform) {
    case "google": {
      const id = "agt-stre-ama";
      return { id, meetingInfo: { platform, meetingUrl: `${stack.mock.url}/meet/${id}` } };
    }
    case "zoom":
      return { id: "84100000001", meetingInfo: { platform, meetingId: "84100000001" } };
    case "teams": {
      const id = "agentmeeting0001";
      return {
        id,
        meetingInfo: { platform, meetingId: id, tenantId: "agent-tenant", organizerId: "agent-org" },
      };
    }
  }
}

// One platform at a time (the meeting hears the bot through the bot's own Chromium; see bot-voice).
describe.each(["google", "zoom", "teams"] as const)(
  "an agent on the bot's audio stream, %s",
  { timeout: 300_000 },
  (platform) => {
    it("hears the meeting, is heard in it, never hears itself, and is reconnected after a restart", async ({
      expect,
    }) => {
      const { id, meetingInfo } = meeting(platform);
      const agent = await startAgentServer();
      agents.push(agent);
      await stack.control.configure(platform, id, { admit: "open", participants: 1, media: "speech" });
      const bot = await stack.api.createBot({
        meetingInfo,
        botDisplayName: "Agent Bot",
        audioStream: { url: agent.url, token: TOKEN },
        recording: { video: false },
      });
      expect(bot.audioStream).toEqual({ url: agent.url, sampleRate: 16000, hasToken: true });
      await stack.api.deploy(bot.id);
      const attendee = async () =>
        ((await stack.control.state(platform, id)) as { attendees: Attendee[] }).attendees[0] as Attendee;

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
      // The participant reaches the agent: in the roster frame, or joining after it.
      const names = () =>
        agent.state.json.flatMap((f) =>
          f.type === "participants"
            ? (f.participants as Array<{ participantName: string }>).map((p) => p.participantName)
            : f.type === "participant.joined"
              ? [f.participantName as string]
              : [],
        );
      await eventually(async () => (names().length > 0 ? true : undefined), "the participant");
      expect(names()[0]).toMatch(/Example/);
      // And its turns (Zoom marks the active speaker only with more than two in the call).
      if (platform !== "zoom")
        await eventually(
          async () =>
            agent.state.json.some((f) => f.type === "speaker.started" && f.participantId !== "self")
              ? true
              : undefined,
          "a speaker frame",
        );
      // 20 ms frames of the meeting's sound, some of them the participant's tone.
      expect(agent.state.frames.every((f) => f.pcm.length === 320)).toBe(true);
      expect(agent.state.frames.some((f) => dbfs(f.pcm) > -40)).toBe(true);

      // ---- the meeting hears the answers; the microphone stays on ----
      const loudAfter = async (fromMs: number) =>
        (await attendee()).heard.levels.filter((l) => l.atMs >= fromMs && l.dbfs > -40).length;
      await eventually(
        async () => ((await loudAfter(0)) >= 5 ? true : undefined),
        "the answers heard",
        30_000,
      );
      expect((await attendee()).mic.muted).toBe(false);

      // ---- the agent never hears its own answers ----
      // A frame with the answer's tone in it, loud and a main part of what the frame holds (a
      // participant's tone switching on clicks across all frequencies, 2 kHz too, but 25-30 dB
      // under the frame's level: measured on Zoom's mock).
      const echoes = agent.state.frames.filter((f) => {
        const own = toneLevel(f.pcm, REPLY_HZ, 16000);
        return own > -50 && own > dbfs(f.pcm) - 20;
      });
      expect(echoes.length).toBe(0);

      // ---- the agent's server restarts: the runner connects again ----
      const heardBefore = (await attendee()).heard.levels.length * 100;
      const repliesBefore = agent.state.replies.length;
      await agent.restart();
      // Its first frame, not just the socket: the two come apart on a loaded machine.
      const starts = () => agent.state.json.filter((f) => f.type === "start").length;
      await eventually(async () => (starts() >= 2 ? true : undefined), "a second connection's start", 60_000);
      expect(starts()).toBe(2);
      expect(agent.state.connections).toBe(2);
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

      await stack.control.end(platform, id);
      expect((await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 90_000 })).status).toBe(
        "DONE",
      );
      const last = agent.state.json.at(-1);
      expect(last?.type).toBe("end");
    });
  },
);
