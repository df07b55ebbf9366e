import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * POST /v1/bots/{id}/kill on a bot in its call, with a real runner: the bot is FATAL KILLED at
 * once, the runner leaves, and its recording is still finalized, uploaded and kept. Also when the
 * server that kills it is not the one that started it (a restart in between), so that nothing can
 * signal the runner: it learns from the answer to its next heartbeat.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

async function botRecording(code: string) {
  const { api, mock } = stack;
  const bot = await api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${mock.url}/meet/${code}?admit=open&participants=2` },
    botDisplayName: "Doomed Bot",
    heartbeatInterval: 1000,
  });
  await api.deploy(bot.id);
  await eventually(
    async () => (await api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED"),
    `bot ${bot.id} recording`,
    60_000,
  );
  await stack.recordedOnDisk(bot.id, 2_500); // a few seconds worth keeping
  return bot.id;
}

async function expectKilledWithRecording(botId: number, meetingCode: string) {
  const { api, control } = stack;
  await eventually(async () => ((await api.bot(botId)).recording ? true : undefined), "the upload", 60_000);
  const final = await api.bot(botId);
  expect(final.status).toBe("FATAL");
  expect(final.deploymentError?.code).toBe("KILLED");
  const media = await stack.downloadRecording(botId);
  expect(media.streams.map((s) => s.type).sort()).toEqual(["audio", "video"]);
  expect(media.durationSeconds).toBeGreaterThan(2);
  const aggregated = (await api.events({ bot_id: botId, page_size: 100 })).events;
  expect([...aggregated].sort((a, b) => a.id - b.id).map((e) => e.eventType)).toEqual([
    "JOINING_CALL",
    "IN_CALL",
    "RECORDING",
    "FATAL",
  ]);
  // The bot really left the meeting, by its Leave button: a killed bot leaves as one asked to.
  const meeting = (await control.state("google", meetingCode)) as {
    attendees: Array<{ state: string; leftBy: string | null }>;
  };
  expect(meeting.attendees.map((a) => `${a.state} (${a.leftBy})`)).toEqual(["left (leave)"]);
}

describe("killing a bot in its call", () => {
  it(
    "is FATAL KILLED at once; the runner leaves and its recording is kept",
    { timeout: 120_000 },
    async () => {
      const code = "kil-lmen-owz";
      const botId = await botRecording(code);
      const exited = stack.launcher.waitForExit(botId);
      const answer = await stack.api.kill(botId);
      expect(answer).toEqual({ message: expect.any(String), botId, status: "FATAL" });
      expect((await stack.api.bot(botId)).status).toBe("FATAL");
      expect(await exited).toEqual({ code: 0, signal: null });
      await expectKilledWithRecording(botId, code);
    },
  );

  it(
    "reaches a runner the killing server did not start, through its heartbeat's answer",
    { timeout: 120_000 },
    async () => {
      const code = "kil-lorp-han";
      const botId = await botRecording(code);
      const exited = stack.launcher.waitForExit(botId);
      // A restarted server with a launcher of its own: it has no handle on the running bot.
      const restart = await stack.stopServer();
      await restart({ freshLauncher: true });
      await stack.api.kill(botId);
      expect(await exited).toEqual({ code: 0, signal: null });
      await expectKilledWithRecording(botId, code);
    },
  );
});
