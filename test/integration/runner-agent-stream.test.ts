import type { Page } from "playwright";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { CallbackEventBody } from "../../src/core/index.js";
import { ConnectRefused, openAgentSocket } from "../../src/runner/agent-stream/connection.js";
import { type AgentAudioPort, AgentStream } from "../../src/runner/agent-stream/index.js";
import { startAgentServer } from "../helpers/agent-server.js";
import { eventually } from "../helpers/stack.js";

/**
 * The runner's audio stream to an agent (src/runner/agent-stream/) over a real WebSocket on
 * 127.0.0.1, with the sound card stood in for by a port that records what it is given: the
 * address rule at connect, the token, frames both ways, barge-in, the bot's own turns, reconnects
 * after the agent's server restarts, and the end of the call.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function agentServer() {
  const agent = await startAgentServer();
  agent.state.answering = false;
  cleanups.push(() => agent.close());
  return agent;
}

/** A sound card that plays into arrays: `meeting(frame)` is the meeting making a sound. */
function fakeAudio() {
  const played: Buffer[] = [];
  let clears = 0;
  let onFrame: ((frame: Buffer) => void) | null = null;
  const port: AgentAudioPort = {
    listen: (_rate, frame) => {
      onFrame = frame;
      return { stop: async () => {} };
    },
    player: () => ({
      write: (pcm) => played.push(Buffer.from(pcm)),
      clear: () => {
        clears++;
      },
      close: async () => {},
    }),
  };
  return { port, played, clears: () => clears, meeting: (frame: Buffer) => onFrame?.(frame) };
}

function agentStream(url: string, audio: AgentAudioPort, token?: string) {
  const reports: CallbackEventBody[] = [];
  const stream = new AgentStream({
    botId: 42,
    options: { url, sampleRate: 16000, ...(token ? { token } : {}), allowPrivateTargets: true },
    audio,
    page: null as unknown as Page,
    microphone: null,
    selfName: "Agent Bot",
    report: (body) => {
      reports.push(body);
      stream.noteEvent(body);
    },
    log: pino({ level: "silent" }),
    note: () => {},
  });
  cleanups.push(() => stream.stop());
  return { stream, reports };
}

describe("connecting to an agent", () => {
  it("refuses loopback and private addresses unless the server allows them, before connecting", async () => {
    const agent = await agentServer();
    await expect(openAgentSocket({ url: agent.url, allowPrivateTargets: false })).rejects.toThrow(
      /127\.0\.0\.1 is a loopback address/,
    );
    await expect(
      openAgentSocket({ url: agent.url.replace("127.0.0.1", "localhost"), allowPrivateTargets: false }),
    ).rejects.toBeInstanceOf(ConnectRefused);
    await expect(
      openAgentSocket({ url: "ws://169.254.169.254/", allowPrivateTargets: true }),
    ).rejects.toThrow(/metadata/);
    expect(agent.state.connections).toBe(0);
  });

  it("sends the token as a Bearer authorization", async () => {
    const agent = await agentServer();
    const { close } = await openAgentSocket({
      url: agent.url,
      token: "t0k3n-abc",
      allowPrivateTargets: true,
    });
    await eventually(async () => (agent.state.connections === 1 ? true : undefined), "the connection");
    expect(agent.state.authorizations).toEqual(["Bearer t0k3n-abc"]);
    await close();
  });
});

describe("the audio stream", () => {
  it("streams the meeting and its events to the agent and plays the agent's sound as the bot's turn", async () => {
    const agent = await agentServer();
    const audio = fakeAudio();
    const { stream, reports } = agentStream(agent.url, audio.port);
    stream.noteEvent({
      type: "participant.joined",
      data: { participantId: "p-1", participantName: "Alice" },
    });
    stream.start();
    await eventually(async () => (agent.state.json.length >= 2 ? true : undefined), "start and roster");
    expect(agent.state.json[0]).toMatchObject({ type: "start", botId: 42, sampleRate: 16000 });
    expect(agent.state.json[1]).toMatchObject({
      type: "participants",
      participants: [{ participantId: "p-1", participantName: "Alice" }],
    });

    // The meeting's sound, as it comes, in binary frames.
    const frame = Buffer.alloc(640, 7);
    audio.meeting(frame);
    audio.meeting(frame);
    stream.noteEvent({ type: "speaker.started", data: { participantId: "p-1", participantName: "Alice" } });
    await eventually(async () => (agent.state.frames.length === 2 ? true : undefined), "two frames");
    expect(Buffer.from(agent.state.frames[0]!.pcm.buffer)).toEqual(frame);
    await eventually(
      async () => (agent.state.json.some((f) => f.type === "speaker.started") ? true : undefined),
      "the speaker frame",
    );

    // The agent speaks 100 ms: played, and a turn of the bot's own that ends after it.
    agent.broadcast(Buffer.alloc(3200, 1));
    await eventually(async () => (audio.played.length === 1 ? true : undefined), "the agent's sound played");
    expect(audio.played[0]!.length).toBe(3200);
    await eventually(
      async () => (reports.some((r) => r.type === "speaker.stopped") ? true : undefined),
      "the bot's turn to end",
    );
    expect(reports.filter((r) => r.type.startsWith("speaker.")).map((r) => [r.type, r.data])).toEqual([
      ["speaker.started", { participantId: "self", participantName: "Agent Bot" }],
      ["speaker.stopped", { participantId: "self", participantName: "Agent Bot" }],
    ]);
    // The agent hears of the bot's own turn too.
    await eventually(
      async () => (agent.state.json.some((f) => f.participantId === "self") ? true : undefined),
      "the bot's turn at the agent",
    );

    // An odd byte waits for its sample's other half; clear drops what is queued.
    agent.broadcast(Buffer.alloc(3, 2));
    agent.broadcast(Buffer.alloc(1, 2));
    await eventually(async () => (audio.played.length === 3 ? true : undefined), "whole samples");
    expect(audio.played.slice(1).map((b) => b.length)).toEqual([2, 2]);
    agent.broadcast({ type: "clear" });
    agent.broadcast({ type: "unknown-to-this-bot" });
    await eventually(async () => (audio.clears() === 1 ? true : undefined), "the clear");

    await stream.stop();
    await eventually(
      async () => (agent.state.json.at(-1)?.type === "end" ? true : undefined),
      "the end frame",
    );
  });

  it("connects again after the agent's server restarts, with the roster; the sound between is dropped", async () => {
    const agent = await agentServer();
    const audio = fakeAudio();
    const { stream, reports } = agentStream(agent.url, audio.port, "secret-token-xyz");
    stream.start();
    stream.noteEvent({ type: "participant.joined", data: { participantId: "p-2", participantName: "Bob" } });
    await eventually(async () => (agent.state.connections === 1 ? true : undefined), "the first connection");
    await agent.restart();
    // While it is down, the meeting's sound goes nowhere (and is not kept for later).
    audio.meeting(Buffer.alloc(640, 3));
    await eventually(async () => (agent.state.connections === 2 ? true : undefined), "a second connection");
    const second = () => agent.state.json.filter((f) => f.connection === 1);
    await eventually(async () => (second().length >= 2 ? true : undefined), "start and roster again");
    expect(second().slice(0, 2)).toMatchObject([
      { type: "start" },
      { type: "participants", participants: [{ participantId: "p-2", participantName: "Bob" }] },
    ]);
    expect(agent.state.frames).toEqual([]);
    expect(agent.state.authorizations).toEqual(["Bearer secret-token-xyz", "Bearer secret-token-xyz"]);
    const logs = reports.filter((r) => r.type === "log").map((r) => (r.data as { message: string }).message);
    expect(logs.join("\n")).toMatch(
      /connected to ws:\/\/127\.0\.0\.1:\d+\n.*closed \(code \d+.*reconnecting\n[\s\S]*connected to/,
    );
    expect(logs.join("\n")).not.toContain("secret-token-xyz");
    expect(logs.join("\n")).not.toContain("/agent");
  });
});
