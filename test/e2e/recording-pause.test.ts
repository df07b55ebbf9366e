import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SpokenLine } from "../../fixtures/host/script.js";
import type { CallbackEvent } from "../../src/core/index.js";
import { inspectRecording } from "../../src/runner/probe.js";
import {
  NOTES_SCRIPT,
  notesUser,
  type NotesUser,
  type TranscriptUtterance,
} from "../helpers/meeting-notes.js";
import { commandOutcome, eventually, startStack } from "../helpers/stack.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";

/**
 * Pausing a real bot's recording in a scripted mock Meet: Alice reads a line, the recording is
 * paused while Bob reads his, and resumed before Alice's last. The file leaves the paused time
 * out (its duration is the time recorded), and neither the live transcript (the runner's
 * pocketsphinx) nor the stored one (the server's, from the file) has a word of Bob's line; the
 * bot's events and webhooks say when it paused and resumed; the recording was still delivered in
 * segments during the call.
 */
let stack: Awaited<ReturnType<typeof startStack>>;
let user: NotesUser;
let receiver: WebhookReceiver;
let tries = 0;

/** The time a test has to pause (or resume) between two lines: a command takes well under a second. */
const ACT_MS = 5_000;
const [FIRST, PAUSED, LAST] = [NOTES_SCRIPT[0], NOTES_SCRIPT[1], NOTES_SCRIPT[2]] as const;
const SCRIPT = [FIRST, { ...PAUSED, silenceBeforeMs: ACT_MS }, { ...LAST, silenceBeforeMs: ACT_MS }];
/** Words only the paused line has (its reader's voice says them clearly: measured in meeting-notes). */
const PAUSED_WORDS = /\b(budget|review|numbers|finished)\b/i;

beforeAll(async () => {
  stack = await startStack({
    // The webhook receiver listens on 127.0.0.1.
    env: { MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1" },
    // The server does not yet hand liveTranscript to its runners: the test plays that part.
    editConfig: (config) => ({ ...config, liveTranscript: { source: "pocketsphinx", fallback: false } }),
  });
  user = await notesUser(stack.api.baseUrl);
  receiver = await new WebhookReceiver().start();
  const webhook = await user.request("POST", "/v1/webhooks", {
    name: "pauses",
    url: receiver.endpoint("/pauses"),
    events: ["recording.paused", "recording.resumed"],
  });
  if (webhook.status !== 201)
    throw new Error(`webhook: HTTP ${webhook.status} ${JSON.stringify(webhook.body)}`);
  receiver.setSecret("/pauses", webhook.body.secret);
});
afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

describe("pausing a recording", () => {
  it("leaves the paused time out of the file and of both transcripts", { timeout: 240_000 }, async () => {
    // A meeting of its own per try: a retry must not find the first try's.
    tries += 1;
    const meetingId = `rec-paus-aa${String.fromCharCode(96 + tries)}`;
    await stack.control.configure("google", meetingId, {
      admit: "open",
      participants: 2,
      script: SCRIPT,
      // Past the bot's busiest seconds after admission (see meeting-notes.ts).
      scriptStartAfterMs: 6000,
      endAfterScript: true,
    });
    const created = await user.api.createBot({
      meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${meetingId}` },
      botDisplayName: "Pause Bot",
      transcription: {},
    });
    await user.api.deploy(created.id);
    const spoken = async () =>
      ((await stack.control.state("google", meetingId)) as { spoken: SpokenLine[] }).spoken;
    /** Waits until line `n` has been read to its end; answers the lines so far. */
    const afterLine = (n: number) =>
      eventually(
        async () => {
          const lines = await spoken();
          return lines[n]?.endedAt ? lines : undefined;
        },
        `line ${n} read`,
        90_000,
      );
    const act = async (what: "pause" | "resume", before: number) => {
      const queued =
        what === "pause"
          ? await user.api.pauseRecording(created.id)
          : await user.api.resumeRecording(created.id);
      const outcome = await commandOutcome(user.api, created.id, queued.commandId);
      expect(outcome.status).toBe("done");
      // Done before the next line began: else this machine was too slow for the script's gaps.
      expect(
        (await spoken())[before],
        `the ${what} was done only after line ${before} began`,
      ).toBeUndefined();
    };

    await afterLine(0);
    await act("pause", 1);
    await afterLine(1);
    await act("resume", 2);
    const bot = await user.api.waitForStatus(created.id, ["DONE", "FATAL"], { timeoutMs: 120_000 });
    expect(bot.status).toBe("DONE");

    // What the runner reported, in order, from its spool.
    const events = (
      await readFile(join(stack.dataDir, "bots", String(bot.id), "work", "events.jsonl"), "utf8")
    )
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as CallbackEvent);
    const one = <T extends CallbackEvent["type"]>(type: T) => {
      const found = events.filter((e) => e.type === type);
      expect(found, type).toHaveLength(1);
      return found[0] as Extract<CallbackEvent, { type: T }>;
    };
    const started = Date.parse(String(one("recording.started").data.startedAt));
    const paused = one("recording.paused").data;
    const resumed = one("recording.resumed").data;
    const pausedMs = Date.parse(resumed.resumedAt) - Date.parse(paused.pausedAt);
    expect(resumed.pausedMs).toBe(pausedMs);
    // Bob's line and the two gaps around it, at least.
    expect(pausedMs).toBeGreaterThan(ACT_MS);

    // The bot's events and the webhooks.
    const botEvents = (await user.api.botEvents(bot.id)).map((e) => e.eventType);
    expect(botEvents.filter((type) => type.startsWith("RECORDING_"))).toEqual([
      "RECORDING_STARTED",
      "RECORDING_PAUSED",
      "RECORDING_RESUMED",
      "RECORDING_STOPPED",
    ]);
    // This bot's: a retry's receiver still holds the first try's.
    const pauses = () => receiver.at("/pauses").filter((d) => d.body?.botId === bot.id);
    await receiver.waitFor(() => pauses().length >= 2, 30_000);
    expect(pauses().map((d) => [d.event, d.body?.data])).toEqual([
      ["recording.paused", paused],
      ["recording.resumed", resumed],
    ]);

    // The file holds the time recorded: from its start to when ffmpeg stopped (after CALL_ENDED,
    // before recording.stopped was reported), less the pause. The tolerance: the file begins at
    // its first frame (up to ~0.5 s after startedAt on a loaded machine) and ffmpeg takes up to
    // ~0.3 s to stop on 'q'; a second covers both. A file that kept the pause would be pausedMs
    // (over 5 s) longer.
    const callEnded = events.find((e) => e.type === "status" && e.data.status === "CALL_ENDED");
    const stopped = one("recording.stopped");
    const earliest = Date.parse(callEnded?.eventTime ?? "") - started - pausedMs;
    const latest = Date.parse(stopped.eventTime) - started - pausedMs;
    const download = await fetch((await user.api.recordingDownload(bot.id)).url);
    const path = join(stack.dataDir, `downloaded-${bot.id}.mp4`);
    await writeFile(path, Buffer.from(await download.arrayBuffer()));
    const fileMs = (await inspectRecording(path)).durationSeconds * 1000;
    const figures = JSON.stringify({ fileMs, earliest, latest, pausedMs });
    expect(fileMs, figures).toBeGreaterThan(earliest - 1_000);
    expect(fileMs, figures).toBeLessThan(latest + 1_000);

    // The pause did not stop the upload in segments during the call: the resumed recording went
    // on in the same file, and the server put the file together from its segments.
    const runnerLog = await readFile(join(stack.dataDir, "bots", String(bot.id), "runner.log"), "utf8");
    expect(runnerLog).toContain("recording completed from its segments");

    // The live transcript: the first and last lines, nothing of the paused one.
    const live = events
      .filter((e) => e.type === "transcript.final")
      .map((e) => (e as Extract<CallbackEvent, { type: "transcript.final" }>).data);
    const liveText = live.map((u) => u.text).join(" | ");
    expect(liveText).not.toMatch(PAUSED_WORDS);
    expect(liveText).toMatch(/\breport\b/i);

    // The stored transcript, from the file: the same, and the last line where the file has it:
    // read at its wall time less the pause (within the page's playout and the word edges).
    const status = await user.settled(`/v1/transcripts/${bot.id}/status`, 120_000);
    expect(status).toMatchObject({ status: "completed" });
    const transcript = await user.request("GET", `/v1/transcripts/${bot.id}`);
    const utterances = transcript.body.utterances as TranscriptUtterance[];
    const said = JSON.stringify(utterances.map((u) => [u.startMs, u.text]));
    expect(transcript.body.text, said).not.toMatch(PAUSED_WORDS);
    const report = utterances.find((u) => /\breport\b/i.test(u.text));
    const lastLine = (await spoken())[2] as SpokenLine;
    const expectedMs = Date.parse(lastLine.startedAt) - started - pausedMs;
    expect(report, said).toBeDefined();
    expect(Math.abs((report?.startMs ?? 0) - expectedMs), said).toBeLessThan(1_500);
  });
});
