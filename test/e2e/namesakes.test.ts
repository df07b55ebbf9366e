import { afterAll, beforeAll, describe, it } from "vitest";
import { boundParticipantId, PARTICIPANT_NAME_MAX, truncateName } from "../../src/core/index.js";
import { attributeSpeakers } from "../../src/intelligence/attribution.js";
import { startStack } from "../helpers/stack.js";

/**
 * Nobody hides from the record by taking the bot's name (security probe, item 6): on each platform
 * a real bot records a call in which one person joined under exactly the bot's display name and
 * another under it with the page's own self tag after it ("(You)", Zoom's "(Me)"). Both are
 * reported as participants, heard as speakers and given their words; the bot itself, which the
 * page marks as the user's own (Meet's self mark, Teams' "(You)" tag and self view, Zoom's "(Me)"),
 * is never listed. Nor by a name past the limits: a third person's is longer than any the bot
 * keeps, and is kept cut (Zoom's id, made of it, shortened), not dropped with its events.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

type PlatformName = "google" | "zoom" | "teams";

const BOT_NAME = "Notes Bot";
const LONG_NAME = `${"Marjoribanks-Featherstonehaugh ".repeat(12)}Jr.`;

const MEETINGS: Record<
  PlatformName,
  { id: string; meetingInfo: (mockUrl: string) => Record<string, unknown>; selfTag: string }
> = {
  google: {
    id: "nam-esak-eee",
    meetingInfo: (mockUrl) => ({ platform: "google", meetingUrl: `${mockUrl}/meet/nam-esak-eee` }),
    selfTag: "(You)",
  },
  zoom: {
    id: "83200000001",
    meetingInfo: () => ({ platform: "zoom", meetingId: "83200000001" }),
    selfTag: "(Me)",
  },
  teams: {
    id: "namesakemeeting0001",
    meetingInfo: () => ({
      platform: "teams",
      meetingId: "namesakemeeting0001",
      tenantId: "namesake-tenant",
      organizerId: "namesake-org",
    }),
    selfTag: "(You)",
  },
};

interface Person {
  participantId: string;
  participantName: string;
}

describe.concurrent.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 180_000 }, (platform) => {
  it("a namesake of the bot is a participant, a speaker and attributed; the bot is not listed", async ({
    expect,
  }) => {
    const { id, meetingInfo, selfTag } = MEETINGS[platform];
    // Everyone sounds (tones in bursts, staggered), so each has turns on the speaking indicator.
    type Remote = { id: string; name: string };
    const configured = (await stack.control.configure(platform, id, {
      admit: "open",
      // Nobody else: the mock staggers bursts by a third of a period, so a fourth person would
      // sound in step with the first and the two could not be told apart by the indicator.
      participants: 0,
      // The test ends the call (below); this only ends one whose speakers the bot never sees.
      endAfterMs: 60_000,
    })) as { participants: Remote[] };
    const add = async (name: string) => (await stack.control.addParticipant(platform, id, name)) as Remote;
    const namesake = await add(BOT_NAME);
    const tagged = await add(`${BOT_NAME} ${selfTag}`);
    const longNamed = await add(LONG_NAME);
    expect(LONG_NAME.length).toBeGreaterThan(PARTICIPANT_NAME_MAX);
    const bot = await stack.api.createBot({
      meetingInfo: meetingInfo(stack.mock.url),
      botDisplayName: BOT_NAME,
      recording: { video: false },
    });
    await stack.api.deploy(bot.id);
    // Two turns each: one CI bot first looked when all three were speaking, and their first turns
    // all started at that moment, the shortest inside another's.
    await stack.endOnceEachSpoke(platform, id, bot.id, 3, 2);
    const final = await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
    expect(final.deploymentError ?? null).toBeNull();
    expect(final.status).toBe("DONE");

    // The host saw the bot join under the same name as the first namesake.
    const { attendees } = (await stack.control.state(platform, id)) as { attendees: Remote[] };
    expect(attendees.map((a) => a.name)).toEqual([BOT_NAME]);

    // Zoom gives nobody an id: its adapter makes one of the name, the same for panel and tiles.
    // Both are kept to the limits the control plane keeps them to.
    const idOf = (person: Remote) =>
      boundParticipantId(platform === "zoom" ? `name:${person.name}` : person.id);
    const everyone = [...configured.participants, namesake, tagged, longNamed];
    const expected = everyone.map((p) => ({ participantId: idOf(p), participantName: truncateName(p.name) }));
    expect(expected.map((p) => p.participantName)).toEqual([
      BOT_NAME,
      `${BOT_NAME} ${selfTag}`,
      `${LONG_NAME.slice(0, PARTICIPANT_NAME_MAX - 1)}…`,
    ]);
    const events = await stack.api.botEvents(bot.id);
    const joined = events
      .filter((e) => e.eventType === "PARTICIPANT_JOINED")
      .map((e) => e.data as unknown as Person);
    const byId = (list: Person[]) => [...list].sort((a, b) => a.participantId.localeCompare(b.participantId));
    // Each one once, and nobody else: not the bot (the host's attendee), not anyone twice.
    expect(byId(joined)).toEqual(byId(expected));
    expect(joined.map((p) => p.participantId)).not.toContain(attendees[0]!.id);
    // They stay until the host ends the call.
    expect(events.filter((e) => e.eventType === "PARTICIPANT_LEFT")).toEqual([]);

    // Heard: the speaker timeline has turns for each of them, under their own ids and names.
    const { speakerTimeline } = await stack.api.recording(bot.id);
    for (const { participantId, participantName } of expected) {
      const turns = speakerTimeline.filter((turn) => turn.participantId === participantId);
      expect({ participantName, heard: turns.length > 0 }).toEqual({ participantName, heard: true });
      expect(new Set(turns.map((turn) => turn.name))).toEqual(new Set([participantName]));
    }
    const speakerIds = new Set(speakerTimeline.map((turn) => turn.participantId));
    expect([...speakerIds].every((sid) => expected.some((p) => p.participantId === sid))).toBe(true);

    // Attributed: a word as long as a turn is that person's in the transcript. Everyone else's
    // indicator overlaps it by half at most (bursts are staggered by a third of a period), so a
    // few tens of milliseconds of indicator lag cannot hand it to anyone else.
    const words = speakerTimeline.map((turn, i) => ({
      text: `w${i}`,
      startMs: turn.startMs,
      endMs: turn.endMs,
      confidence: 1,
    }));
    const utterances = attributeSpeakers(words, speakerTimeline, { leadMs: 0, tailMs: 0 });
    for (const { participantId, participantName } of expected) {
      const theirs = utterances.filter((u) => u.speaker?.participantId === participantId);
      expect({ participantName, attributed: theirs.length > 0 }).toEqual({
        participantName,
        attributed: true,
      });
      expect(theirs.every((u) => u.speaker?.name === participantName)).toBe(true);
    }
  });
});
