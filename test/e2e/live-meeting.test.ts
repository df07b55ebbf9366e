import { afterAll, beforeAll, describe, it } from "vitest";
import type { PlayedLine } from "../../fixtures/host/meetings.js";
import type { SpokenLine } from "../../fixtures/host/script.js";
import type { Utterance } from "../../src/core/index.js";
import { wordAccuracy } from "../../src/intelligence/word-error-rate.js";
import { eventually, startStack } from "../helpers/stack.js";
import { type SseEvent, StreamClient } from "../helpers/sse-client.js";
import { type MockMeeting, mockMeeting, type PlatformName } from "../helpers/mock-meetings.js";

/**
 * The live meeting with real bots in real Chromium against the
 * mock pages of all three platforms: a bot with `liveTranscript: {source: "captions"}` turns its
 * captions on the platform's way and streams partials and finals of what the scripted participants
 * say, with the right speakers; it reads the chat once per message with its senders, sends its
 * onJoin message and a message asked through the API. A meeting whose host switched captions and
 * guest chat off gets a `transcript.source` unavailable event and CHAT_UNAVAILABLE.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const SCRIPT = [
  { participant: "Alice Example", text: "I will send the report to the team tomorrow" },
  { participant: "Bob Example", text: "We decided to ship the new version on Friday" },
];
/** Shown for one word's time in the middle of the last line, then taken back. */
const MISHEARD = "and then the other thing";
const CHAT = [
  // Pinned: Meet also shows it in its pinned overlay, with the same id.
  { participant: "Bob Example", text: "Hello from Bob", atMs: 2000, pinned: true },
  { participant: "Bob Example", text: "Bob again, same run", atMs: 2300 },
  { participant: "Alice Example", text: "Alice here: can you see this?", atMs: 2600 },
];
const ON_JOIN = "Hello, I am taking notes";
const FROM_API = "A message sent through the API";

/**
 * The test's two meetings, fresh for each attempt: a retried test's first attempt leaves timers
 * that end its meeting, and its bots may still be in their calls.
 */
function meetings(platform: PlatformName, attempt: number): { rich: MockMeeting; off: MockMeeting } {
  return {
    rich: mockMeeting(stack.mock.url, platform, "liv", 2 * attempt + 1),
    off: mockMeeting(stack.mock.url, platform, "liv", 2 * attempt + 2),
  };
}

/** A bot's live stream from before its deploy, read until the bot ended. */
async function deployWatched(body: Record<string, unknown>) {
  // Audio-only: captions and chat are what is under test, and three of these bots run at once.
  const bot = await stack.api.createBot({ recording: { video: false }, ...body });
  const stream = await StreamClient.open(
    stack.api.baseUrl,
    stack.api.bearerToken,
    {},
    `/v1/bots/${bot.id}/live`,
  );
  await stack.api.deploy(bot.id);
  return { bot, stream };
}

const statusOf = (event: SseEvent): string | undefined =>
  event.event === "status" ? (event.data.data.status as string) : undefined;
const isEnd = (event: SseEvent) => ["DONE", "FATAL"].includes(statusOf(event) ?? "");

/** Waits until the command is done or failed. */
const outcomeOf = (botId: number, commandId: number) =>
  eventually(
    async () => {
      const command = await stack.api.command(botId, commandId);
      return ["done", "failed"].includes(command.status) ? command : undefined;
    },
    `command ${commandId}`,
    60_000,
  );

/** For a command that did not end as expected: its error and the runner's last words on the bot. */
const whyNot = async (command: { status: string; error?: unknown }, expected: string, botId: number) =>
  command.status === expected
    ? ""
    : `${JSON.stringify(command.error)}; ${await stack.describeBot(botId, 15)}`;

describe.concurrent.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 300_000 }, (platform) => {
  // One test per platform, its two meetings one after the other: three bots at a time at most.
  it("streams captions and reads and sends chat; says when the host switched them off", async ({
    expect,
    task,
  }) => {
    const { rich, off } = meetings(platform, task.result?.retryCount ?? 0);
    // ---- a scripted meeting with captions and chat ----
    await stack.control.configure(platform, rich.id, {
      admit: "open",
      participants: 2,
      script: SCRIPT,
      // The last line: no line after it cuts it short (see below).
      captionRewrites: [1],
      // The test starts the script once captions are on and the chat open, and ends the call
      // once the last line's caption settled; these are fallbacks.
      scriptStartAfterMs: 60_000,
      endAfterMs: 120_000,
      chat: CHAT,
    });
    const { bot, stream } = await deployWatched({
      meetingInfo: rich.meetingInfo,
      botDisplayName: "Caption Bot",
      liveTranscript: { source: "captions" },
      chat: { onJoin: ON_JOIN },
    });
    try {
      // The readers start once the bot has its captions on and its chat open (its greeting is in
      // the meeting), and the host ends the call once the last reader's caption settled: not after
      // guessed delays, which a loaded machine outlasted (the first line then went uncaptioned).
      await stream.until((events) => events.some((e) => e.event === "transcript.source"));
      await eventually(async () => {
        const { chat } = (await stack.control.state(platform, rich.id)) as { chat: Array<{ text: string }> };
        return chat.some((m) => m.text === ON_JOIN) ? true : undefined;
      }, "the bot's greeting in the chat");
      await stack.control.startScript(platform, rich.id);
      const lastReader = SCRIPT.at(-1)?.participant;
      void stream
        .until((all) =>
          all.some(
            (e) => e.event === "transcript.final" && (e.data.data as Utterance).speaker?.name === lastReader,
          ),
        )
        .then(() => stack.control.end(platform, rich.id))
        .catch(() => {});
      // Should the last reader's final never come (the assertions below then say why), the call
      // ends 20 s after the script's last line was over, not at the scenario's 120 s fallback:
      // a run spent 100 s waiting on it once (Zoom, every caption's speaker unmatched).
      void eventually(
        async () => {
          const { spoken } = (await stack.control.state(platform, rich.id)) as {
            spoken: Array<{ endedAt: string | null }>;
          };
          return spoken.length === SCRIPT.length && spoken.at(-1)?.endedAt ? true : undefined;
        },
        "the script spoken",
        120_000,
      )
        .then(() => new Promise((resolve) => setTimeout(resolve, 20_000)))
        .then(() => stack.control.end(platform, rich.id))
        .catch(() => {});
      const asked = await stack.api.sendChat(bot.id, FROM_API);
      const sent = await outcomeOf(bot.id, asked.commandId);
      expect(sent, await whyNot(sent, "done", bot.id)).toMatchObject({
        status: "done",
        result: { messageId: expect.any(String) },
      });
      const events = await stream.until((all) => all.some(isEnd));
      expect(events.find(isEnd)?.data.data.status).toBe("DONE");

      const state = (await stack.control.state(platform, rich.id)) as {
        spoken: SpokenLine[];
        chat: Array<{ text: string; fromAttendee: boolean }>;
        attendees: Array<{ captionsOnAt: string | null; played: PlayedLine[] }>;
      };
      expect(state.attendees[0]?.captionsOnAt).not.toBeNull();
      expect(state.spoken.map((line) => line.text)).toEqual(SCRIPT.map((line) => line.text));
      const ids = new Map(
        events
          .filter((e) => e.event === "participant.joined")
          .map((e) => [e.data.data.participantName, e.data.data.participantId]),
      );

      // Captions: active; one final per utterance; each reader's finals (a pause over a second
      // splits a turn) are the words of their line with the reader named, the rewrite taken
      // back; partials while the bot is in the call, the first one before the bot's page had
      // played the line to its end (its playout, not the host's schedule: a loaded page plays a
      // line late, and its captions follow what it plays).
      // The mock cuts a line short when its page plays it late and the next line starts (under
      // load): every line but the last must be shown from its start, the last one whole.
      expect(events.filter((e) => e.event === "transcript.source").map((e) => e.data.data)).toEqual([
        { source: "captions", state: "active" },
      ]);
      const at = (status: string) => events.findIndex((e) => statusOf(e) === status);
      const [inCall, callEnded] = [at("IN_CALL"), at("CALL_ENDED")];
      const finals = events
        .filter((e) => e.event === "transcript.final")
        .map((e) => e.data.data as Utterance);
      const finalIds = finals.map((u) => u.utteranceId);
      expect(new Set(finalIds).size).toBe(finalIds.length);
      const wordsOf = (text: string) => text.toLowerCase().split(/\s+/).filter(Boolean);
      for (const [n, line] of state.spoken.entries()) {
        const own = finals.filter((u) => u.speaker?.name === line.participant);
        // Unmatched speakers once left every caption of a Zoom call without one: the runner's
        // last log lines go with the failure (which hooks it matched, e.g. the participants panel).
        const unmatched = own.length === 0 ? `${await stack.describeBot(bot.id, 20)} ` : "";
        expect(own.length, `${unmatched}${JSON.stringify(finals)}`).toBeGreaterThan(0);
        for (const utterance of own) {
          expect(utterance.speaker).toEqual({
            participantId: ids.get(line.participant),
            name: line.participant,
          });
        }
        const said = own.map((u) => u.text).join(" ");
        expect(said).not.toContain(MISHEARD);
        if (n === state.spoken.length - 1) {
          expect(wordAccuracy(line.text, said), `"${line.text}" as "${said}"`).toBeGreaterThanOrEqual(0.9);
        } else {
          expect(wordsOf(line.text).slice(0, wordsOf(said).length), said).toEqual(wordsOf(said));
        }
        const partials = events
          .map((e, index) => ({ e, index }))
          .filter(
            ({ e }) => e.event === "transcript.partial" && e.data.data.utteranceId === own[0]?.utteranceId,
          );
        expect(partials.length).toBeGreaterThan(0);
        for (const { index } of partials) expect(index > inCall && index < callEnded).toBe(true);
        const playout = state.attendees[0]?.played.findLast((each) => each.line === line.line);
        expect(playout, "the bot's page played the line").toBeDefined();
        // A playout without an end was cut short by the call's end, and every partial came
        // before that (above).
        if (playout?.endedAt) {
          expect(Date.parse(partials[0]?.e.data.eventTime ?? "")).toBeLessThan(Date.parse(playout.endedAt));
        }
      }

      // Chat: the others' messages once each with their senders (a run's sender carried down),
      // the bot's own two marked as its own, and the meeting got each of them once.
      const { messages } = await stack.api.chatMessages(bot.id);
      expect(
        messages.filter((m) => !m.fromBot).map((m) => [m.sender?.name, m.sender?.participantId, m.text]),
        JSON.stringify({ messages, ids: [...ids] }),
      ).toEqual(CHAT.map((m) => [m.participant, ids.get(m.participant), m.text]));
      const own = messages.filter((m) => m.fromBot);
      expect(own.map((m) => m.text).sort()).toEqual([FROM_API, ON_JOIN].sort());
      expect(own.find((m) => m.text === FROM_API)?.messageId).toBe(sent.result?.messageId);
      expect(state.chat.filter((m) => m.fromAttendee).map((m) => m.text)).toEqual([ON_JOIN, FROM_API]);
    } finally {
      stream.close();
    }

    // ---- the host switched captions and guests' chat off ----
    await stack.control.configure(platform, off.id, {
      admit: "open",
      participants: 1,
      captions: "off",
      anonymousChat: "off",
    });
    const offBot = await deployWatched({
      meetingInfo: off.meetingInfo,
      botDisplayName: "Caption Bot",
      liveTranscript: { source: "captions" },
    });
    try {
      const sources = (
        await offBot.stream.until((all) => all.some((e) => e.event === "transcript.source"))
      ).filter((e) => e.event === "transcript.source");
      expect(sources.map((e) => e.data.data)).toEqual([
        { source: "captions", state: "unavailable", reason: expect.any(String) },
      ]);
      const asked = await stack.api.sendChat(offBot.bot.id, FROM_API);
      const refused = await outcomeOf(offBot.bot.id, asked.commandId);
      expect(refused, await whyNot(refused, "failed", offBot.bot.id)).toMatchObject({
        status: "failed",
        error: { code: "CHAT_UNAVAILABLE" },
      });
      // Both answers are in: the host ends the call (no transcript line can come after them).
      await stack.control.end(platform, off.id);
      const events = await offBot.stream.until((all) => all.some(isEnd));
      expect(events.find(isEnd)?.data.data.status).toBe("DONE");
      expect(events.filter((e) => ["transcript.partial", "transcript.final"].includes(e.event))).toEqual([]);
    } finally {
      offBot.stream.close();
    }
  });
});
