import { randomUUID } from "node:crypto";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { ApiClient } from "../../src/client/api-client.js";
import { Api, type BotApiBody, type JobStatusPath, settledJob } from "./server-harness.js";
import { SCRIPTED_MEETING } from "./spoken-meeting.js";
import type { startStack } from "./stack.js";

/**
 * Meeting notes from a real bot in a scripted mock meeting: the script, a user
 * who can read the content routes, the meeting itself, and the ground truth each transcript is
 * scored against. Shared by test/e2e/meeting-notes.test.ts and bench/meeting-notes.ts.
 */

/**
 * Alice (voice rms, the mock's participant 0) and Bob (awb, participant 1) take turns. The two
 * opening lines are not decoration: without them pocketsphinx heard "send" as "share" (measured,
 * test/integration/server-transcripts.test.ts).
 */
export const NOTES_SCRIPT = SCRIPTED_MEETING.map((line) => ({
  participant: line.name === "Alice Martin" ? "Alice Example" : "Bob Example",
  text: line.text,
}));

/**
 * How the summary's items are known: by key words, not verbatim. Word accuracy is measured on its
 * own, and a slip its bar allows ("send a report", "commit the meeting": measured on the mocks)
 * is no fault of the summary.
 */
export const COMMITMENT = /\bsend\b.*\breport\b/i;
export const DECISION = /^we decided\b.*\bmeeting to monday\b/i;

export type PlatformName = "google" | "zoom" | "teams";
const BOT_NAME = "Notes Bot";
type Stack = Awaited<ReturnType<typeof startStack>>;

/** A line as the bot's page played it, on the recording's clock (ms from RECORDING_STARTED's startedAt). */
export interface ReadLine {
  participant: string;
  text: string;
  startMs: number;
  endMs: number;
  /** How long after the host put it on air the bot's page played it; null: the page never said. */
  playoutLagMs: number | null;
}

export interface TranscriptWord {
  text: string;
  startMs: number;
  endMs: number;
}

export interface TranscriptUtterance {
  speaker: { participantId: string; name: string } | null;
  startMs: number;
  endMs: number;
  text: string;
  words: TranscriptWord[];
}

export type NotesUser = Awaited<ReturnType<typeof notesUser>>;

/**
 * A new user on the stack's server: the typed client for bots, and raw authenticated requests for
 * the content routes (transcripts, summaries, recordings) the client does not cover.
 */
export async function notesUser(
  baseUrl: string,
  who: { email: string; name: string } = { email: `notes-${randomUUID()}@example.com`, name: "Notes" },
) {
  const { email, name } = who;
  const password = "notes-password-123";
  const api = new ApiClient(baseUrl);
  await api.register(email, password, name);
  const login = await fetch(new URL("/v1/auth/login", baseUrl), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  if (login.status !== 200) throw new Error(`login: HTTP ${login.status}`);
  const tokens = (await login.json()) as { access_token: string; refresh_token: string };
  const token = tokens.access_token;

  /** The answer is typed by the bot API's response map, as the test harness's are. */
  async function request<M extends string, P extends string>(method: M, path: P, body?: unknown) {
    const response = await fetch(new URL(path, baseUrl), {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    const json: unknown = text ? JSON.parse(text) : null;
    return { status: response.status, body: json as BotApiBody<M, P> };
  }

  /** Polls a job's status route until it is completed or failed (404 until the job is queued). */
  const settled = <P extends JobStatusPath>(statusPath: P, timeoutMs: number) =>
    settledJob(new Api(baseUrl), token, statusPath, timeoutMs);

  return { api, request, settled, token, refreshToken: tokens.refresh_token };
}

/** A fresh meeting on `platform`'s mock, and the meetingInfo a bot joins it with. */
export function newMeeting(
  stack: Stack,
  platform: PlatformName,
): { id: string; meetingInfo: Record<string, unknown> } {
  switch (platform) {
    case "google": {
      const id = "mtg-note-aaa";
      return { id, meetingInfo: { platform, meetingUrl: `${stack.mock.url}/meet/${id}` } };
    }
    case "zoom": {
      const id = "83200000001";
      return { id, meetingInfo: { platform, meetingId: id } };
    }
    case "teams": {
      const id = "meetingnotes0001";
      return {
        id,
        meetingInfo: { platform, meetingId: id, tenantId: "notes-tenant", organizerId: "notes-org" },
      };
    }
  }
}

/**
 * Runs the script in a meeting on `platform` with a real bot of `user` that asks for a transcript
 * and a summary, until the bot is done. Answers the bot's final state and the lines as the host
 * read them, on the recording's clock.
 */
export async function recordScriptedMeeting(
  stack: Stack,
  user: NotesUser,
  platform: PlatformName,
  botFields: Record<string, unknown> = {},
) {
  const { id: meetingId, meetingInfo } = newMeeting(stack, platform);
  await stack.control.configure(platform, meetingId, {
    admit: "open",
    participants: 2,
    script: NOTES_SCRIPT,
    // The bot opens the roster, starts recording and watching the indicators just after
    // admission, its busiest seconds: on a loaded machine a first line read then was misheard
    // twice in CI-like runs (dropouts in the bot's audio, a known cost of load). The script starts
    // once that is over, as a meeting's talk does not wait for a bot either way.
    scriptStartAfterMs: 6000,
    endAfterScript: true,
  });
  const created = await user.api.createBot({
    meetingInfo,
    botDisplayName: BOT_NAME,
    transcription: {},
    summary: {},
    ...botFields,
  });
  await user.api.deploy(created.id);
  const bot = await user.api.waitForStatus(created.id, ["DONE", "FATAL"], { timeoutMs: 150_000 });

  const meeting = (await stack.control.state(platform, meetingId)) as unknown as MeetingState;
  const started = (await user.api.botEvents(bot.id)).find((e) => e.eventType === "RECORDING_STARTED");
  if (!started) throw new Error(`bot ${bot.id} (${bot.status}) never started recording`);
  const origin = Date.parse(String(started.data?.startedAt));
  // The bot's page played each line some time after the host put it on air (on a busy machine up
  // to a second): what the bot recorded lies on the page's times, so they are the ground truth.
  const played = meeting.attendees.find((a) => a.name === BOT_NAME)?.played ?? [];
  const lines: ReadLine[] = meeting.spoken.map((line) => {
    const atPage = played.find((each) => each.line === line.line && each.endedAt !== null);
    return {
      participant: line.participant,
      text: line.text,
      startMs: Date.parse(atPage?.startedAt ?? line.startedAt) - origin,
      endMs: Date.parse(atPage?.endedAt ?? line.endedAt ?? "") - origin,
      playoutLagMs: atPage ? Date.parse(atPage.startedAt) - Date.parse(line.startedAt) : null,
    };
  });
  return { bot, lines };
}

/** How a transcript's words fall on the lines read: what each line was heard as, and by whom. */
export interface LineHeard {
  line: ReadLine;
  /** The words recognized while this line was the nearest one, in order. */
  words: string[];
  /** The speaker names of the utterances those words are in (null: no speaker). */
  speakers: Array<string | null>;
}

/**
 * Gives every recognized word to the read line nearest its middle (inside a line counts as 0).
 * The lines lie where the bot's page played them; the recognizer's word edges move the words by
 * a few hundred ms, inside the 800 ms pause between two lines.
 */
export function linesHeard(
  lines: readonly ReadLine[],
  utterances: readonly TranscriptUtterance[],
): LineHeard[] {
  const heard: LineHeard[] = lines.map((line) => ({ line, words: [], speakers: [] }));
  const distance = (line: ReadLine, at: number) => Math.max(0, line.startMs - at, at - line.endMs);
  for (const utterance of utterances) {
    for (const word of utterance.words) {
      const middle = (word.startMs + word.endMs) / 2;
      let nearest: LineHeard | undefined;
      for (const each of heard) {
        if (!nearest || distance(each.line, middle) < distance(nearest.line, middle)) nearest = each;
      }
      nearest?.words.push(word.text);
      nearest?.speakers.push(utterance.speaker?.name ?? null);
    }
  }
  return heard;
}

/** Whether a line was heard at all and every word of it went to its reader. */
export function attributedRight(heard: LineHeard): boolean {
  return heard.words.length > 0 && heard.speakers.every((name) => name === heard.line.participant);
}
