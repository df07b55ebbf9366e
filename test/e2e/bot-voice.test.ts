import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { embeddedTranscriber } from "../../src/intelligence/index.js";
import { wordAccuracy } from "../../src/intelligence/word-error-rate.js";
import { eventually, startStack } from "../helpers/stack.js";
import { type MockMeeting, mockMeeting, type PlatformName } from "../helpers/mock-meetings.js";

/**
 * A bot that speaks with real bots in real Chromium against the mock pages of all
 * three platforms, which hear the bot's microphone as a real meeting does: `speak` is heard by the
 * meeting (its capture, transcribed, matches the text), the bot unmutes for it and mutes again
 * after, and the bot's words are in its recording and its transcript once, as the bot's; sound
 * files (WAV, MP3) are heard too; a host who mutes the bot while it speaks fails the sound
 * MUTED_BY_HOST. On Meet, a bot that keeps its microphone on sends silence while the meeting
 * talks: the meeting's own sound never goes back into it.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
let dir: string;
beforeAll(async () => {
  stack = await startStack();
  dir = await mkdtemp(join(tmpdir(), "meetbot-voice-"));
  for (const [name, format] of [
    ["tone.wav", []],
    ["tone.mp3", ["-c:a", "libmp3lame"]],
  ] as const) {
    execFileSync("ffmpeg", [
      ...["-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=f=1000:d=1.5"],
      ...format,
      join(dir, name),
    ]);
  }
});
afterAll(async () => {
  await stack?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A sentence flite's rms voice says so that pocketsphinx gets every word of its clip (measured). */
const SAID = "I will send the report to the team tomorrow and we will meet again next week";
const LONG = "This is a long announcement that the host will cut short before it ends, ".repeat(4);

function meeting(platform: PlatformName, n: number): MockMeeting {
  return mockMeeting(stack.mock.url, platform, "voi", n);
}

interface Attendee {
  id: string;
  mic: { muted: boolean; changes: Array<{ at: string; muted: boolean; by: "self" | "host" }> };
  heard: { levels: Array<{ atMs: number; dbfs: number }>; seconds: number };
}

const attendeeOf = async (platform: PlatformName, id: string) =>
  ((await stack.control.state(platform, id)) as { attendees: Attendee[] }).attendees[0] as Attendee;

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

/** A bot in the call of a fresh meeting with one remote participant (`media`: what it sends). */
async function botInCall(
  platform: PlatformName,
  n: number,
  media: "speech" | "silent",
  extra: Record<string, unknown> = {},
) {
  const { id, meetingInfo } = meeting(platform, n);
  await stack.control.configure(platform, id, { admit: "open", participants: 1, media });
  const bot = await stack.api.createBot({
    meetingInfo,
    botDisplayName: "Voice Bot",
    recording: { video: false },
    ...extra,
  });
  await stack.api.deploy(bot.id);
  // Settled in: recording, and its incoming video turned off (an audio-only bot's last menu
  // step). The seconds after admission are the bot's busiest; a voice played then on a loaded
  // machine reached the meeting with holes.
  await stack.runnerLogged(bot.id, /"msg":"incoming video (turned off|stays on)"/);
  return { id, botId: bot.id };
}

// One platform at a time: the meeting hears the bot through the bot's own Chromium (the mock page
// is the bot's tab), and three bots on two cores starve its audio capture into audible holes (even
// audio-only ones: their first words went missing, measured). The bots record audio only: the
// picture is not under test here.
describe.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 300_000 }, (platform) => {
  it("speaks and plays files into the meeting, mutes after, and is cut by a host's mute", async ({
    expect,
  }) => {
    // The participant is silent: the recording's words are the bot's alone.
    const { id, botId } = await botInCall(platform, 1, "silent", { transcription: {} });
    const attendee = await attendeeOf(platform, id);
    expect(attendee.mic.muted).toBe(true);

    // ---- speak: heard by the meeting, then muted again ----
    const asked = await stack.api.speak(botId, SAID);
    const spoken = await outcomeOf(botId, asked.commandId);
    expect(spoken, JSON.stringify(spoken.error)).toMatchObject({ status: "done" });
    const after = await attendeeOf(platform, id);
    expect(after.mic.muted).toBe(true);
    expect(after.mic.changes.slice(-2).map(({ muted, by }) => ({ muted, by }))).toEqual([
      { muted: false, by: "self" },
      { muted: true, by: "self" },
    ]);
    const heardPath = join(dir, `${platform}-heard.wav`);
    await writeFile(heardPath, await stack.control.heardWav(platform, id, attendee.id));
    const heard = await embeddedTranscriber({ tmpDir: dir }).transcribe({
      mediaPath: heardPath,
      language: "en-US",
    });
    expect(wordAccuracy(SAID, heard.text), `heard "${heard.text}"`).toBeGreaterThanOrEqual(0.8);

    // ---- files: a WAV and an MP3, each heard ----
    for (const [name, type] of [
      ["tone.wav", "audio/wav"],
      ["tone.mp3", "audio/mpeg"],
    ] as const) {
      const before = (await attendeeOf(platform, id)).heard.levels.length;
      const played = await stack.api.playAudio(botId, await readFile(join(dir, name)), type);
      expect(await outcomeOf(botId, played.commandId), name).toMatchObject({ status: "done" });
      const loud = (await attendeeOf(platform, id)).heard.levels.slice(before).filter((l) => l.dbfs > -40);
      // 1.5 s of tone: about 15 windows of 100 ms heard loud.
      expect(loud.length, name).toBeGreaterThanOrEqual(10);
    }

    // ---- the host mutes the bot while it speaks ----
    const long = await stack.api.speak(botId, LONG);
    await eventually(
      async () =>
        (await stack.api.botEvents(botId)).some(
          (e) => e.eventType === "BOT_OUTPUT_STARTED" && e.data?.commandId === long.commandId,
        )
          ? true
          : undefined,
      "the long sound to start",
    );
    await stack.control.muteAttendee(platform, id);
    const cut = await outcomeOf(botId, long.commandId);
    expect(cut).toMatchObject({ status: "failed", error: { code: "MUTED_BY_HOST" } });
    const ended = (await stack.api.botEvents(botId)).filter((e) => e.eventType === "BOT_OUTPUT_ENDED");
    expect(ended.map((e) => e.data?.reason)).toEqual(["finished", "finished", "finished", "muted_by_host"]);

    // ---- the record: the bot's words once, as the bot's ----
    await stack.control.end(platform, id);
    expect((await stack.api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 90_000 })).status).toBe(
      "DONE",
    );
    const transcript = await eventually(
      async () => {
        const response = await stack.api.fetchRaw(`/v1/transcripts/${botId}`);
        return response.status === 200
          ? ((await response.json()) as {
              utterances: Array<{ speaker: { participantId: string; name: string } | null; text: string }>;
            })
          : undefined;
      },
      "the transcript",
      180_000,
    );
    const bots = transcript.utterances.filter((u) => u.speaker?.name === "Voice Bot");
    const botText = bots.map((u) => u.text).join(" ");
    expect(
      wordAccuracy(SAID, botText.split(/\s+/).slice(0, SAID.split(" ").length).join(" ")),
      botText,
    ).toBeGreaterThanOrEqual(0.6);
    // "Report" is the bot's word: heard once (the meeting does not play it back), and the bot's.
    const everyone = transcript.utterances.map((u) => u.text.toLowerCase()).join(" ");
    expect(everyone.match(/\breport\b/g)?.length, everyone).toBe(1);
    expect(botText.toLowerCase()).toMatch(/\breport\b/);
  });
});

describe("a bot that keeps its microphone on (Meet)", { timeout: 300_000 }, () => {
  it("sends silence while the meeting talks, after it spoke", async ({ expect }) => {
    const { id, botId } = await botInCall("google", 2, "speech", { output: { keepMicOn: true } });
    const asked = await stack.api.speak(botId, "Hello everyone");
    expect(await outcomeOf(botId, asked.commandId)).toMatchObject({ status: "done" });
    const attendee = await attendeeOf("google", id);
    expect(attendee.mic.muted).toBe(false);
    // Alice's tone bursts go on while the bot is silent with its microphone on: the host hears
    // 3 s more of the bot (the meeting hears it on the wall clock), all of it silent.
    const from = attendee.heard.seconds * 1000;
    const later = await eventually(async () => {
      const now = await attendeeOf("google", id);
      return now.heard.seconds * 1000 - from > 3_000 ? now : undefined;
    }, "3 s more of the bot heard by the host");
    const loud = later.heard.levels.filter((l) => l.atMs > from + 500 && l.dbfs > -60);
    expect(loud).toEqual([]);
    await stack.control.end("google", id);
    await stack.api.waitForStatus(botId, ["DONE", "FATAL"], { timeoutMs: 90_000 });
  });
});
