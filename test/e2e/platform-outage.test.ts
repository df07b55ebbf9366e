import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startStack } from "../helpers/stack.js";

/**
 * The control plane goes away while a bot on each platform is in its call: someone joins, then
 * the host ends the call. The runners carry on, spool what happens meanwhile, and resend it when
 * the server is back, so that nothing is lost and nothing is applied twice. The three bots share
 * one outage, which lasts until every runner has spooled both (not a fixed time).
 *
 * Commands cross it too: a chat message asked for just before the server stops is
 * sent once and reported done. The runner gets it at once and sends it while the server is away,
 * so its result reaches the restarted server from the runner's retries; had the runner missed it,
 * the restarted server would hand it over from the table. Either way it is sent once.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const BEFORE_OUTAGE = "Asked for before the server stopped";
const MEETINGS = [
  {
    platform: "google",
    id: "out-agez-bot",
    meetingInfo: (url: string) => ({ platform: "google", meetingUrl: `${url}/meet/out-agez-bot` }),
  },
  {
    platform: "zoom",
    id: "83300000001",
    meetingInfo: () => ({ platform: "zoom", meetingId: "83300000001" }),
  },
  {
    platform: "teams",
    id: "outagemeeting0001",
    meetingInfo: () => ({
      platform: "teams",
      meetingId: "outagemeeting0001",
      tenantId: "outage-tenant",
      organizerId: "outage-org",
    }),
  },
] as const;

/**
 * Waits until the bot's runner has written an event to its spool (events.jsonl in its work
 * folder): what it saw while the server was away, not yet delivered.
 */
async function spooled(botId: number, what: string, matches: (event: SpooledEvent) => boolean) {
  const spool = join(stack.dataDir, "bots", String(botId), "work", "events.jsonl");
  await eventually(
    async () => {
      const lines = (await readFile(spool, "utf8").catch(() => "")).split("\n").filter(Boolean);
      return lines.map((line) => JSON.parse(line) as SpooledEvent).some(matches) ? true : undefined;
    },
    `bot ${botId}'s runner to spool ${what}`,
    60_000,
  );
}
interface SpooledEvent {
  type: string;
  data: Record<string, unknown>;
}

describe("a control plane that is down mid-call", () => {
  it("loses no event and applies none twice, on all three platforms", { timeout: 240_000 }, async () => {
    const { api, control } = stack;
    const bots = await Promise.all(
      MEETINGS.map(async (meeting) => {
        await control.configure(meeting.platform, meeting.id, { admit: "open", participants: 2 });
        const bot = await api.createBot({
          meetingInfo: meeting.meetingInfo(stack.mock.url),
          botDisplayName: "Outage Bot",
        });
        await api.deploy(bot.id);
        return { ...meeting, botId: bot.id };
      }),
    );
    for (const { botId } of bots) {
      await eventually(
        async () => {
          const events = await api.botEvents(botId);
          const joined = events.filter((e) => e.eventType === "PARTICIPANT_JOINED").length;
          return joined === 2 && events.some((e) => e.eventType === "RECORDING_STARTED") ? true : undefined;
        },
        `bot ${botId} recording with both participants reported`,
        90_000,
      );
    }

    const beforeOutage = await Promise.all(bots.map((b) => api.sendChat(b.botId, BEFORE_OUTAGE)));
    const restart = await stack.stopServer();
    const stoppedAt = Date.now();
    // While the server is away: someone joins each call, then each host ends it.
    await Promise.all(bots.map((b) => control.addParticipant(b.platform, b.id, "Dana Outage")));
    await Promise.all(
      bots.map((b) =>
        spooled(
          b.botId,
          "Dana's join",
          (e) => e.type === "participant.joined" && e.data.participantName === "Dana Outage",
        ),
      ),
    );
    // The chat message asked for before the stop is sent, and its result spooled, before the
    // host ends each call (a command still running when its bot ends fails BOT_ENDED).
    await Promise.all(
      bots.map((b, i) =>
        spooled(
          b.botId,
          "the chat command's result",
          (e) => e.type === "command.result" && e.data.commandId === beforeOutage[i]!.commandId,
        ),
      ),
    );
    const endedAt = Date.now();
    await Promise.all(bots.map((b) => control.end(b.platform, b.id)));
    await Promise.all(
      bots.map((b) =>
        spooled(b.botId, "the call's end", (e) => e.type === "status" && e.data.status === "CALL_ENDED"),
      ),
    );
    await restart();

    for (const { botId, platform } of bots) {
      const final = await api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 90_000 });
      expect(final.status, platform).toBe("DONE");
      expect(final.recording, platform).not.toBeNull();
      const events = await api.botEvents(botId);
      const names = events
        .filter((e) => e.eventType === "PARTICIPANT_JOINED")
        .map((e) => e.data?.participantName);
      expect(names, platform).toHaveLength(3);
      expect(names, platform).toContain("Dana Outage");
      const counts = new Map<string, number>();
      for (const e of events) counts.set(e.eventType, (counts.get(e.eventType) ?? 0) + 1);
      for (const once of ["BOT_JOINED", "RECORDING_STARTED", "RECORDING_STOPPED", "BOT_LEFT"]) {
        expect(counts.get(once), `${platform} ${once}`).toBe(1);
      }
      expect(events.find((e) => e.eventType === "BOT_LEFT")?.data?.subCode, platform).toBe("MEETING_ENDED");
      const aggregated = (await api.events({ bot_id: botId, page_size: 100 })).events;
      expect(
        [...aggregated].sort((a, b) => a.id - b.id).map((e) => e.eventType),
        platform,
      ).toEqual(["JOINING_CALL", "IN_CALL", "RECORDING", "CALL_ENDED", "DONE"]);
      // The command done, and its message in the meeting once.
      const index = bots.findIndex((b) => b.botId === botId);
      const command = await api.command(botId, beforeOutage[index]!.commandId);
      expect(command, `${platform} ${JSON.stringify(command.error)}`).toMatchObject({ status: "done" });
      const { chat } = (await control.state(platform, bots[index]!.id)) as {
        chat: Array<{ text: string; fromAttendee: boolean }>;
      };
      expect(
        chat.filter((m) => m.fromAttendee).map((m) => m.text),
        platform,
      ).toEqual([BEFORE_OUTAGE]);

      const media = await stack.downloadRecording(botId);
      expect(media.streams.map((s) => s.type).sort(), platform).toEqual(["audio", "video"]);
      // The recording covers the outage up to the call's end: the call went on while nobody was
      // listening.
      expect(media.durationSeconds, platform).toBeGreaterThan((endedAt - stoppedAt) / 1000);
    }
  });
});
