/**
 * Meeting notes through the whole pipeline: a real bot records the scripted mock
 * meeting (Alice and Bob read four lines, a commitment and a decision among them), the server
 * transcribes it with the embedded engine and summarizes it, all through the API. Reports the time
 * from the recording being stored (recording.ready) to the transcript and the summary completed,
 * on the server's clock; the word accuracy against the script; and the share of lines whose every
 * word went to the person who read it (the mock's record of who read what when is the truth).
 * And, to read the accuracy by: the dropouts in the recorded speech, silent gaps (under -45 dB,
 * 40-400 ms) inside a recorded line where the clean clip of that line has sound. On a busy
 * machine the bot's audio path drops blocks of speech, and pocketsphinx mishears around them.
 *
 * Runs on its own (`node --import tsx bench/meeting-notes.ts`); needs the compiled runner (`make
 * build`). BENCH_NOTES_PLATFORM picks the mock (google, zoom or teams; default google), BENCH_RUNS
 * how many meetings, one after another (default 1). Prints figures only; asserts nothing.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { wordAccuracy } from "../src/intelligence/word-error-rate.js";
import {
  attributedRight,
  COMMITMENT,
  DECISION,
  linesHeard,
  NOTES_SCRIPT,
  notesUser,
  type PlatformName,
  recordScriptedMeeting,
  type TranscriptUtterance,
} from "../test/helpers/meeting-notes.js";
import { startStack } from "../test/helpers/stack.js";
import { cleanScriptLines, recordedDropouts, type SpokenLine } from "./speech-gaps.js";

const PLATFORM = (process.env.BENCH_NOTES_PLATFORM ?? "google") as PlatformName;
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const SCRIPT_TEXT = NOTES_SCRIPT.map((line) => line.text).join(" ");

interface NotesFigures {
  audioSeconds: number;
  toTranscriptMs: number;
  toSummaryMs: number;
  wordAccuracy: number;
  linesRight: number;
  lines: number;
  actionItem: boolean;
  decision: boolean;
  dropouts: number;
}

async function measureOnce(
  stack: Awaited<ReturnType<typeof startStack>>,
  user: Awaited<ReturnType<typeof notesUser>>,
  dir: string,
  cleanLines: readonly SpokenLine[],
): Promise<NotesFigures> {
  const { bot, lines } = await recordScriptedMeeting(stack, user, PLATFORM);
  if (bot.status !== "DONE") throw new Error(`bot ${bot.id} ended ${bot.status}`);
  const transcriptJob = await user.settled(`/v1/transcripts/${bot.id}/status`, 300_000);
  const summaryJob = await user.settled(`/v1/summaries/${bot.id}/status`, 300_000);
  if (transcriptJob.status !== "completed" || summaryJob.status !== "completed") {
    throw new Error(`notes of bot ${bot.id}: ${JSON.stringify({ transcriptJob, summaryJob })}`);
  }
  const transcript = (await user.request("GET", `/v1/transcripts/${bot.id}`)).body;
  const summary = (await user.request("GET", `/v1/summaries/${bot.id}`)).body;
  // The recording's createdAt is when the server stored the upload: the moment of recording.ready.
  const listed = (await user.request("GET", "/v1/recordings?page_size=100")).body.recordings as Array<{
    botId: number;
    createdAt: string;
  }>;
  const stored = Date.parse(listed.find((each) => each.botId === bot.id)!.createdAt);

  const download = (await user.request("GET", `/v1/recordings/${bot.id}/download`)).body as { url: string };
  const recording = path.join(dir, `recording-${bot.id}.mp4`);
  await writeFile(recording, Buffer.from(await (await fetch(download.url)).arrayBuffer()));

  const heard = linesHeard(lines, transcript.utterances as TranscriptUtterance[]);
  const actionItems = summary.actionItems as Array<{
    text: string;
    owner: string | null;
    due: string | null;
  }>;
  return {
    audioSeconds: transcript.durationMs / 1000,
    toTranscriptMs: Date.parse(transcript.completedAt) - stored,
    toSummaryMs: Date.parse(summary.completedAt) - stored,
    wordAccuracy: wordAccuracy(SCRIPT_TEXT, transcript.text),
    linesRight: heard.filter(attributedRight).length,
    lines: heard.length,
    actionItem: actionItems.some(
      (item) => COMMITMENT.test(item.text) && item.owner === "Alice Example" && item.due === "tomorrow",
    ),
    decision: (summary.decisions as string[]).some((text) => DECISION.test(text)),
    dropouts: await recordedDropouts(recording, cleanLines),
  };
}

async function measureMeetingNotes(): Promise<NotesFigures[]> {
  const dir = await mkdtemp(path.join(tmpdir(), "meetbot-bench-notes-"));
  const stack = await startStack();
  try {
    const cleanLines = await cleanScriptLines(dir, NOTES_SCRIPT);
    const user = await notesUser(stack.api.baseUrl);
    const figures: NotesFigures[] = [];
    for (let i = 0; i < RUNS; i++) figures.push(await measureOnce(stack, user, dir, cleanLines));
    return figures;
  } finally {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const runs = await measureMeetingNotes();
console.log(`meeting notes through the API (a real bot on the ${PLATFORM} mock, the 4-line script):`);
for (const f of runs) {
  console.log(
    [
      `  ${f.audioSeconds.toFixed(1)} s recorded; recording.ready -> transcript completed ${(f.toTranscriptMs / 1000).toFixed(1)} s,`,
      `-> summary completed ${(f.toSummaryMs / 1000).toFixed(1)} s; word accuracy ${f.wordAccuracy.toFixed(3)};`,
      `lines attributed right ${f.linesRight}/${f.lines}; dropouts in the recorded speech ${f.dropouts};`,
      `action item (owner, due) ${f.actionItem ? "found" : "missing"}; decision ${f.decision ? "found" : "missing"}`,
    ].join(" "),
  );
}
