import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import { wordAccuracy } from "../../src/intelligence/word-error-rate.js";
import type { Db } from "../../src/server/db/database.js";
import { makeSpokenMeeting, type SpokenLine, SCRIPTED_MEETING } from "../helpers/spoken-meeting.js";
import {
  deployedBot,
  openServerDatabase,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
  settledJob,
} from "../helpers/server-harness.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";

const SCRIPT = SCRIPTED_MEETING;

let scratch: string;
let server: TestServer;
let db: Db;
let user: TestUser;
let mp4: Uint8Array;
let lines: SpokenLine[];
let script: string;
let receiver: WebhookReceiver;

test.override("serverOptions", {
  rateLimit: { perMinute: 0, perHour: 0 },
  outbound: { allowPrivateTargets: true }, // the webhook receiver is on 127.0.0.1
});
test.beforeAll(async ({ server: fileServer }) => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-transcripts-"));
  const spoken = await makeSpokenMeeting(scratch, SCRIPT);
  ({ lines, script } = spoken);
  mp4 = new Uint8Array(await readFile(spoken.mp4Path));
  // Polling the status routes takes many requests.
  server = fileServer;
  db = await openServerDatabase(server);
  user = await registerUser(server.api);
  receiver = await new WebhookReceiver().start();
  const webhook = await server.api.post("/v1/webhooks", {
    token: user.token,
    body: {
      name: "notes",
      url: receiver.endpoint("/content"),
      events: ["transcript.ready", "summary.ready"],
    },
  });
  expect(webhook.status).toBe(201);
  receiver.setSecret("/content", webhook.body.secret);
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await db?.close();
  await rm(scratch, { recursive: true, force: true });
});

/**
 * A bot whose runner went through the call: the recording of the script, and the speaking
 * indicator on while each line was read (200 ms late, 300 ms long after, like a platform's).
 */
function recordedBot(owner: TestUser, body: Record<string, unknown> = {}) {
  const last = lines.at(-1)!.endMs;
  return recordMeeting(server, owner, {
    body,
    participants: lines.map((line) => ({
      participantId: line.participantId,
      participantName: line.name,
      spoke: [[line.startMs + 200, line.endMs + 300]],
    })),
    recording: mp4,
    recordingMs: last + 1500,
    endsAtMs: last + 1000,
  });
}

describe("transcripts", () => {
  test("transcribes a recording with the embedded engine and says who said what", async () => {
    const botId = await recordedBot(user);
    const started = await server.api.post(`/v1/transcripts/${botId}/transcribe`, { token: user.token });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ botId, engine: "pocketsphinx", language: null, error: null });
    expect(["queued", "processing"]).toContain(started.body.status);

    const again = await server.api.post(`/v1/transcripts/${botId}/transcribe`, { token: user.token });
    const status = await settledJob(server.api, user.token, `/v1/transcripts/${botId}/status`, 90_000);
    // Asked while the first was on its way (or, on a fast machine, just after it finished).
    if (again.status !== 202) expect(again.status).toBe(409);
    expect(status).toMatchObject({ status: "completed", progress: 1, error: null });

    const res = await server.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(res.status).toBe(200);
    const transcript = res.body;
    expect(transcript).toMatchObject({ botId, status: "completed", engine: "pocketsphinx", language: "en" });
    expect(wordAccuracy(script, transcript.text)).toBeGreaterThanOrEqual(0.85);
    expect(transcript.utterances.map((u) => u.speaker?.name)).toEqual(lines.map((line) => line.name));
    for (const [i, utterance] of transcript.utterances.entries()) {
      expect(utterance.speaker?.participantId).toBe(lines[i]!.participantId);
      expect(utterance.startMs).toBeGreaterThanOrEqual(lines[i]!.startMs - 300);
      expect(utterance.endMs).toBeLessThanOrEqual(lines[i]!.endMs + 300);
      expect(utterance.words.length).toBeGreaterThan(3);
    }

    // The same transcript under the recording, and as text.
    const underRecording = await server.api.get(`/v1/recordings/${botId}/transcription`, {
      token: user.token,
    });
    expect(underRecording.body).toEqual(transcript);
    const txt = await fetch(`${server.url}/v1/transcripts/${botId}?format=txt`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(txt.headers.get("content-type")).toMatch(/^text\/plain/);
    const txtLines = (await txt.text()).trim().split("\n");
    expect(txtLines).toHaveLength(4);
    expect(txtLines[2]).toMatch(/^\[00:\d\d\] Alice Martin: i will send the report tomorrow$/);
    const vtt = await fetch(`${server.url}/v1/transcripts/${botId}?format=vtt`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(vtt.headers.get("content-type")).toMatch(/^text\/vtt/);
    expect(await vtt.text()).toMatch(/^WEBVTT\n[\s\S]*<v Bob Chen>we decided/);
    const srt = await fetch(`${server.url}/v1/transcripts/${botId}?format=srt`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(await srt.text()).toMatch(/^1\n00:00:0\d,\d{3} --> 00:00:0\d,\d{3}\nAlice Martin: /);

    const list = await server.api.get("/v1/recordings", { token: user.token });
    const listed = list.body.recordings.find((r: { botId: number }) => r.botId === botId);
    expect(listed).toMatchObject({ transcriptStatus: "completed", summaryStatus: null });
    const one = await server.api.get(`/v1/recordings/${botId}`, { token: user.token });
    expect(one.body).toMatchObject({ transcriptStatus: "completed", summaryStatus: null });
  }, 120_000);

  test("answers 404 without a recording or for another user's bot, 422 for an engine not configured", async () => {
    const { botId } = await deployedBot(server, user);
    const noRecording = await server.api.post(`/v1/transcripts/${botId}/transcribe`, { token: user.token });
    expect(noRecording.status).toBe(404);
    expect(noRecording.body.detail).toMatch(/Recording not found/);
    expect((await server.api.get(`/v1/transcripts/${botId}/status`, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`/v1/transcripts/${botId}`, { token: user.token })).status).toBe(404);

    const recorded = await recordedBot(user);
    const other = await registerUser(server.api);
    for (const [method, url] of [
      ["post", `/v1/transcripts/${recorded}/transcribe`],
      ["get", `/v1/transcripts/${recorded}/status`],
      ["get", `/v1/transcripts/${recorded}`],
      ["delete", `/v1/transcripts/${recorded}`],
    ] as const) {
      const res = await server.api[method](url, { token: other.token });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body).toEqual({ detail: "Bot not found" });
    }
    const unconfigured = await server.api.post(`/v1/transcripts/${recorded}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram" },
    });
    expect(unconfigured.status).toBe(422);
    expect(validationIssues(unconfigured.body)[0]).toMatchObject({ loc: ["body", "engine"] });
    expect(validationIssues(unconfigured.body)[0]?.msg).toMatch(/MEETBOT_DEEPGRAM_API_KEY/);
    const unknown = await server.api.post(`/v1/transcripts/${recorded}/transcribe`, {
      token: user.token,
      body: { engine: "whisper.cpp", language: "english!" },
    });
    expect(unknown.status).toBe(422);
    // Nothing was queued by the refused requests.
    expect((await server.api.get(`/v1/transcripts/${recorded}/status`, { token: user.token })).status).toBe(
      404,
    );
    const noBot = await server.api.post(`/v1/bots`, {
      token: user.token,
      body: {
        meetingInfo: { platform: "google", meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij" },
        transcription: { engine: "assemblyai" },
      },
    });
    expect(noBot.status).toBe(422);
    expect(validationIssues(noBot.body)[0]?.loc).toEqual(["body", "transcription", "engine"]);
  }, 60_000);

  test("a bot created with transcription and summary options gets both once its recording is stored", async () => {
    const botId = await recordedBot(user, { transcription: { language: "en" }, summary: {} });
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
    expect(bot.body).toMatchObject({ transcription: { language: "en" }, summary: {} });
    const transcript = await settledJob(server.api, user.token, `/v1/transcripts/${botId}/status`, 90_000);
    expect(transcript).toMatchObject({ status: "completed", engine: "pocketsphinx", language: "en" });
    const summaryStatus = await settledJob(server.api, user.token, `/v1/summaries/${botId}/status`, 90_000);
    expect(summaryStatus).toMatchObject({ status: "completed", engine: "extractive", error: null });

    const summary = await server.api.get(`/v1/summaries/${botId}`, { token: user.token });
    expect(summary.status).toBe(200);
    expect(summary.body.actionItems).toEqual([
      expect.objectContaining({
        owner: "Alice Martin",
        due: "tomorrow",
        text: expect.stringMatching(/send the report/i),
      }),
    ]);
    expect(summary.body.actionItems[0]?.startMs).toBeGreaterThanOrEqual(lines[2]!.startMs - 300);
    expect(summary.body.decisions).toEqual([expect.stringMatching(/move the meeting to monday/i)]);

    // Both announced to the owner's webhook, signed like every delivery.
    await receiver.waitFor(
      () => receiver.at("/content").filter((d) => d.body?.botId === botId).length >= 2,
      30_000,
    );
    const delivered = receiver.at("/content").filter((d) => d.body?.botId === botId);
    expect(delivered.map((d) => d.verification.ok)).toEqual([true, true]);
    expect(delivered.map((d) => d.event)).toEqual(["transcript.ready", "summary.ready"]);
    expect(delivered[0]!.body?.data).toEqual({
      engine: "pocketsphinx",
      language: "en",
      durationMs: expect.any(Number),
      utterances: 4,
    });
    expect(delivered[1]!.body?.data).toMatchObject({
      engine: "extractive",
      actionItems: [expect.objectContaining({ owner: "Alice Martin", due: "tomorrow" })],
    });
  }, 120_000);

  test("summarize without a transcript queues the transcript first; deleting the recording takes everything", async () => {
    const botId = await recordedBot(user);
    const asked = await server.api.post(`/v1/summaries/${botId}/summarize`, { token: user.token, body: {} });
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ status: "queued", engine: "extractive" });
    const early = await server.api.get(`/v1/summaries/${botId}`, { token: user.token });
    expect(early.status).toBe(404);
    const transcriptStatus = await server.api.get(`/v1/transcripts/${botId}/status`, { token: user.token });
    expect(transcriptStatus.body.engine).toBe("pocketsphinx");
    await settledJob(server.api, user.token, `/v1/summaries/${botId}/status`, 90_000);
    expect((await server.api.get(`/v1/summaries/${botId}`, { token: user.token })).status).toBe(200);

    const deleted = await server.api.delete(`/v1/recordings/${botId}`, { token: user.token });
    expect(deleted.status).toBe(204);
    for (const url of [
      `/v1/transcripts/${botId}`,
      `/v1/summaries/${botId}`,
      `/v1/transcripts/${botId}/status`,
    ]) {
      expect((await server.api.get(url, { token: user.token })).status, url).toBe(404);
    }
    for (const table of ["transcripts", "summaries", "content_jobs"] as const) {
      const rows = await db.kysely.selectFrom(table).select("bot_id").where("bot_id", "=", botId).execute();
      expect(rows, table).toEqual([]);
    }
  }, 120_000);

  test("DELETE removes a transcript (204, then 404) and leaves the summary", async () => {
    const botId = await recordedBot(user, { summary: {} });
    await settledJob(server.api, user.token, `/v1/summaries/${botId}/status`, 90_000);
    expect((await server.api.delete(`/v1/transcripts/${botId}`, { token: user.token })).status).toBe(204);
    expect((await server.api.get(`/v1/transcripts/${botId}`, { token: user.token })).status).toBe(404);
    expect((await server.api.delete(`/v1/transcripts/${botId}`, { token: user.token })).status).toBe(404);
    expect((await server.api.get(`/v1/summaries/${botId}`, { token: user.token })).status).toBe(200);
    expect((await server.api.delete(`/v1/summaries/${botId}`, { token: user.token })).status).toBe(204);
    expect((await server.api.get(`/v1/summaries/${botId}/status`, { token: user.token })).status).toBe(404);
  }, 120_000);
});
