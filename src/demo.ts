import { mkdir } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { startMockHost } from "../fixtures/host/server.js";
import { ApiClient, type BotEventView } from "./client/api-client.js";
import { BOT_STATUSES } from "./core/index.js";
import { verifyWebhook } from "./client/webhooks.js";
import { inspectRecording } from "./runner/probe.js";
import { startServer } from "./server/main.js";

/**
 * What the mock meeting's two participants say, each in their own voice: the lines pocketsphinx
 * hears word for word (measured, test/integration/server-transcripts.test.ts), with a commitment
 * and a decision for the summary to find.
 */
const DEMO_SCRIPT = [
  { participant: "Alice Example", text: "Thanks everyone for joining the weekly planning meeting" },
  { participant: "Bob Example", text: "The budget review is finished and the numbers look good" },
  { participant: "Alice Example", text: "I will send the report tomorrow" },
  { participant: "Bob Example", text: "We decided to move the meeting to Monday" },
];
const MEETING_ID = "abc-defg-hij";

/**
 * `meetbot demo`: a mock Google Meet, a control plane and one bot, all on this machine. Prints
 * the bot's life as it happens, and the signed webhooks its callbackUrl receives, checks the
 * recording, then waits for the summary and prints the meeting as the meeting-notes interface
 * serves it: who was there, its transcript and its summary. Exits 0 only if the bot reached DONE
 * with a recording that has both video and audio, every webhook up to bot.ended arrived with a
 * valid signature, and the meeting has a transcript and a summary with an action item and a
 * decision.
 */
export async function runDemo(): Promise<number> {
  const started = Date.now();
  const say = (text: string) => {
    const t = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
    process.stdout.write(`[${t}s] ${text}\n`);
  };
  const dataDir = resolve(".data", `demo-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  await mkdir(dataDir, { recursive: true });
  const mock = await startMockHost({ port: 0 });
  const server = await startServer({
    port: 0,
    dataDir,
    allowedMeetingHosts: ["127.0.0.1"],
    logLevel: "warn",
    // The demo polls four times a second to show every step as it happens.
    rateLimit: { perMinute: 0, perHour: 0 },
    // Its webhook receiver is on this machine: a private target, refused in production mode.
    outbound: { allowPrivateTargets: true },
    notes: { port: 0 },
  });
  const notesUrl = server.notesUrl as string;
  say(`mock Google Meet on ${mock.url}, control plane on ${server.url}, meeting notes on ${notesUrl}`);
  say(`data in ${dataDir}`);
  let closeReceiver = async () => {};
  try {
    const api = new ApiClient(server.url);
    await api.register(`demo-${Date.now()}@example.com`, "demo-password-123", "Demo User");
    // The host reads the script once the bot is in, and ends the meeting after the last line.
    const scenario = await fetch(`${mock.url}/control/meetings/google/${MEETING_ID}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        participants: 2,
        admit: "auto",
        admitAfterMs: 2000,
        script: DEMO_SCRIPT,
        scriptStartAfterMs: 3000,
        endAfterScript: true,
      }),
    });
    if (!scenario.ok) throw new Error(`mock meeting: HTTP ${scenario.status} ${await scenario.text()}`);
    const meetingUrl = `${mock.url}/meet/${MEETING_ID}`;
    const { secret } = await api.signingSecret();
    const receiver = await startWebhookReceiver(secret, say);
    closeReceiver = receiver.close;
    const bot = await api.createBot({
      callbackUrl: receiver.url,
      meetingInfo: { platform: "google", meetingUrl },
      botDisplayName: "Meetbot Demo",
      meetingTitle: "Demo meeting",
      transcription: {},
      summary: {},
    });
    say(`created bot ${bot.id} (${bot.status}) for ${meetingUrl}`);
    const deployed = await api.deploy(bot.id);
    say(`status ${deployed.status}`);

    // Statuses come from the aggregated event list, so none is missed however quickly they
    // follow each other; participants and recording events from the bot's own list. The
    // aggregated list also has events that are not statuses (RECORDING): the bot's own list
    // shows those (RECORDING_STARTED).
    const shown = new Set<string>();
    const showNew = async () => {
      const statuses = (await api.events({ bot_id: bot.id, page_size: 100 })).events.filter((e) =>
        (BOT_STATUSES as readonly string[]).includes(e.eventType),
      );
      const events = await api.botEvents(bot.id);
      const fresh = [
        ...statuses.map((e) => ({
          key: `s${e.id}`,
          time: e.eventTime,
          text: `status ${e.eventType}${describe(e)}`,
        })),
        ...events.map((e) => ({
          key: `e${e.id}`,
          time: e.eventTime,
          text: `  event ${e.eventType}${describe(e)}`,
        })),
      ]
        .filter((line) => !shown.has(line.key))
        .sort((a, b) => a.time.localeCompare(b.time));
      for (const line of fresh) {
        shown.add(line.key);
        say(line.text);
      }
    };
    const final = await api.waitForStatus(bot.id, ["DONE", "FATAL"], {
      timeoutMs: 120_000,
      intervalMs: 250,
      onPoll: showNew,
    });
    await showNew();
    if (final.status !== "DONE") {
      say(`bot failed: ${JSON.stringify(final.deploymentError)}`);
      for (const line of await api.botLogs(bot.id)) say(`  log ${line.level}: ${line.message}`);
      return 1;
    }
    const download = await api.recordingDownload(bot.id);
    const path = join(dataDir, "recordings", `${bot.id}.mp4`);
    const inspection = await inspectRecording(path, { motion: true });
    say(`recording: ${path}`);
    say(`  download link (valid until ${download.expiresAt}): ${download.url}`);
    say(`  duration ${inspection.durationSeconds.toFixed(2)} s, ${final.recording?.sizeBytes ?? "?"} bytes`);
    for (const s of inspection.streams) {
      say(`  stream ${s.type}: ${s.codec}${s.width ? ` ${s.width}x${s.height}` : ""}`);
    }
    say(`  audio mean ${inspection.meanVolumeDb} dB, max ${inspection.maxVolumeDb} dB`);
    say(`  ${inspection.changedFrames} video frames differ from the previous one`);
    const types = inspection.streams.map((s) => s.type);
    if (!types.includes("video") || !types.includes("audio")) {
      say("FAILED: the recording lacks a video or an audio stream");
      return 1;
    }
    if (!(await receiver.ended(10_000))) {
      say("FAILED: the bot.ended webhook did not arrive");
      return 1;
    }
    if (receiver.rejected > 0) {
      say(`FAILED: ${receiver.rejected} webhook(s) failed signature verification`);
      return 1;
    }
    say(`webhooks: ${receiver.verified} deliveries to the callbackUrl, every signature verified`);
    if (!(await waitForSummary(api, bot.id, say))) return 1;
    if (!(await showMeetingNotes(api, notesUrl, bot.id, say))) return 1;
    say("demo OK: the bot joined, recorded and finished; its meeting has a transcript and a summary");
    return 0;
  } finally {
    await closeReceiver();
    await server.close();
    await mock.close();
  }
}

/** Polls the summary's status (it waits for the transcript) until it is done, showing each step. */
async function waitForSummary(api: ApiClient, botId: number, say: (text: string) => void): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  let shown = "";
  for (;;) {
    const res = await api.fetchRaw(`/v1/summaries/${botId}/status`);
    const body = (await res.json()) as { status?: string; progress?: number | null; detail?: unknown };
    const step =
      res.status === 200
        ? `${body.status}${typeof body.progress === "number" ? ` ${Math.round(body.progress * 100)}%` : ""}`
        : `HTTP ${res.status} ${JSON.stringify(body.detail)}`;
    if (step !== shown) say(`summary ${(shown = step)}`);
    if (body.status === "completed") return true;
    if (body.status === "failed" || Date.now() > deadline) {
      say(`FAILED: the summary is ${step}`);
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

interface NotesMeeting {
  id: string;
  botId: number;
  title: string;
  startedAt: string;
  durationMs: number | null;
  participants: { name: string; speakingMs: number }[];
}
interface NotesTranscript {
  utterances: { speaker: { name: string } | null; startMs: number; text: string }[];
}
interface NotesSummary {
  overview: string;
  actionItems: { text: string; owner: string | null; due: string | null }[];
  decisions: string[];
}

/**
 * The meeting as a client of the meeting-notes interface sees it, on that interface's own address
 * with the same access token: found in the list, then its transcript and its summary.
 */
async function showMeetingNotes(
  api: ApiClient,
  notesUrl: string,
  botId: number,
  say: (text: string) => void,
): Promise<boolean> {
  // fetchRaw resolves its path against the bot API's address: an absolute URL goes to the notes one.
  const get = async <T>(path: string): Promise<T | null> => {
    const res = await api.fetchRaw(`${notesUrl}${path}`);
    if (res.ok) return (await res.json()) as T;
    say(`FAILED: GET ${path} on the meeting-notes interface answered ${res.status}: ${await res.text()}`);
    return null;
  };
  const list = await get<{ data: NotesMeeting[] }>("/v1/meetings");
  const meeting = list?.data.find((m) => m.botId === botId);
  if (!meeting) {
    if (list) say(`FAILED: GET /v1/meetings does not list the bot's meeting`);
    return false;
  }
  const transcript = await get<NotesTranscript>(`/v1/meetings/${meeting.id}/transcript`);
  const summary = await get<NotesSummary>(`/v1/meetings/${meeting.id}/summary`);
  if (!transcript || !summary) return false;

  const duration = meeting.durationMs === null ? "" : `, ${(meeting.durationMs / 1000).toFixed(0)} s`;
  say(`meeting ${meeting.id} from ${notesUrl}/v1/meetings`);
  say(`  "${meeting.title}", ${meeting.startedAt}${duration}`);
  const people = meeting.participants.map((p) => `${p.name} (spoke ${(p.speakingMs / 1000).toFixed(1)} s)`);
  say(`  participants: ${people.join(", ") || "none"}`);
  say("  transcript:");
  for (const u of transcript.utterances)
    say(`    [${clock(u.startMs)}] ${u.speaker?.name ?? "Unknown"}: ${u.text}`);
  say("  summary:");
  say(`    overview: ${summary.overview}`);
  for (const item of summary.actionItems)
    say(`    action item: ${item.text} (owner: ${item.owner ?? "none"}, due: ${item.due ?? "none"})`);
  for (const decision of summary.decisions) say(`    decision: ${decision}`);

  const missing = [
    meeting.participants.length === 0 && "participants",
    transcript.utterances.length === 0 && "a transcript",
    !summary.overview && "an overview",
    summary.actionItems.length === 0 && "an action item",
    summary.decisions.length === 0 && "a decision",
  ].filter(Boolean);
  if (missing.length) say(`FAILED: the meeting has no ${missing.join(", no ")}`);
  return missing.length === 0;
}

/** Milliseconds into the recording as mm:ss. */
function clock(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
}

function describe(event: BotEventView): string {
  const data = event.data ?? {};
  const name = data.participantName;
  if (typeof name === "string") return `: ${name}`;
  if (typeof data.subCode === "string") return `: ${data.subCode}`;
  return "";
}

/**
 * The bot's callbackUrl: checks each delivery's signature with the helper the package ships for
 * receivers, and says what came.
 */
async function startWebhookReceiver(secret: string, say: (text: string) => void) {
  let verified = 0;
  let rejected = 0;
  let onEnded = () => {};
  const ended = new Promise<void>((resolve) => {
    onEnded = resolve;
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const result = verifyWebhook({ rawBody: Buffer.concat(chunks), headers: req.headers, secret });
      if (!result.ok) {
        rejected += 1;
        say(`  webhook REJECTED (${result.reason})`);
        res.writeHead(401).end();
        return;
      }
      verified += 1;
      say(`  webhook ${result.webhook.event} (signed ${result.webhook.id})`);
      res.writeHead(204).end();
      if (result.webhook.event === "bot.ended") onEnded();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/meetbot-webhooks`,
    get verified() {
      return verified;
    },
    get rejected() {
      return rejected;
    },
    /** Whether bot.ended arrives within `timeoutMs`. */
    ended: (timeoutMs: number) =>
      Promise.race([
        ended.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
      ]),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
