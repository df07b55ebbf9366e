import type { NotesApiResponses } from "../../src/notes/responses.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { type StandIn, startStandIn } from "../helpers/provider-stand-ins.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import {
  Api,
  deployedBot,
  makeTestMp4,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
} from "../helpers/server-harness.js";
import { WebhookReceiver } from "../helpers/webhook-receiver.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The notes interface's webhooks: registered on its own address, delivered through
 * the bot API's outbox (same signature, retries and SSRF rules), verified by a real receiver.
 * Transcripts come from a Deepgram stand-in (a local server answering in Deepgram's format).
 */
let scratch: string;
let server: TestServer;
let notes: Api<NotesApiResponses>;
let receiver: WebhookReceiver;
let deepgram: StandIn;
let mp4: Uint8Array;

const WORDS = "I will send the report tomorrow".split(" ");

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-notes-webhooks-"));
  mp4 = await makeTestMp4(scratch);
  deepgram = await startStandIn(() => ({
    json: {
      metadata: { duration: 2 },
      results: {
        channels: [
          {
            alternatives: [
              {
                transcript: `${WORDS.join(" ")}.`,
                words: WORDS.map((word, i) => ({
                  word: word.toLowerCase(),
                  punctuated_word: word,
                  start: 0.2 + i * 0.2,
                  end: 0.35 + i * 0.2,
                  confidence: 0.9,
                })),
              },
            ],
          },
        ],
      },
    },
  }));
});
// The transcripts come from the stand-in started above.
test.override("serverOptions", { scope: "file" }, () => ({
  notes: { port: 0 },
  rateLimit: { perMinute: 0, perHour: 0 },
  outbound: { allowPrivateTargets: true }, // the receiver is on 127.0.0.1
  jobs: {
    pollIntervalMs: 100,
    engines: {
      defaultTranscription: "pocketsphinx",
      defaultSummary: "extractive",
      pocketsphinxModelDir: "/usr/share/pocketsphinx/model/en-us",
      deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" },
    },
  },
}));
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  notes = new Api<NotesApiResponses>(server.notesUrl as string);
  receiver = await new WebhookReceiver().start();
});
afterAll(async () => {
  await receiver?.close();
  await deepgram?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function register(user: TestUser, hookPath: string, events: string[]) {
  const res = await notes.post("/v1/webhooks", {
    token: user.token,
    body: { url: receiver.endpoint(hookPath), events },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.setSecret(hookPath, res.body.secret);
  return res.body;
}

/** A bot that joined a call, with Alice speaking, then uploaded its recording. */
function recordedMeeting(user: TestUser, body: Record<string, unknown> = {}) {
  return recordMeeting(server, user, {
    title: "Planning",
    body,
    startedAt: new Date(Date.now() - 10_000).toISOString(),
    participants: [
      { participantId: "p-alice", participantName: "Alice Martin", joinedMs: 50, spoke: [[100, 1600]] },
    ],
    recording: mp4,
  });
}

describe("notes webhooks", () => {
  test("are registered, listed, read and deleted on the notes address, apart from the bot API's", async ({
    user,
  }) => {
    const created = await register(user, "/crud", ["meeting.completed"]);
    expect(created).toEqual({
      id: expect.any(Number),
      url: receiver.endpoint("/crud"),
      events: ["meeting.completed"],
      secret: expect.stringMatching(/^whsec_[0-9a-f]{64}$/),
      createdAt: expect.any(String),
    });
    const { secret: _secret, ...shown } = created;
    expect((await notes.get("/v1/webhooks", { token: user.token })).body).toEqual({ data: [shown] });
    expect((await notes.get(`/v1/webhooks/${created.id}`, { token: user.token })).body).toEqual(shown);
    // The bot API neither lists nor touches it.
    expect((await server.api.get("/v1/webhooks", { token: user.token })).body.webhooks).toEqual([]);
    expect((await server.api.get(`/v1/webhooks/${created.id}`, { token: user.token })).status).toBe(404);
    expect((await server.api.delete(`/v1/webhooks/${created.id}`, { token: user.token })).status).toBe(404);
    const other = await registerUser(server.api);
    expect((await notes.get(`/v1/webhooks/${created.id}`, { token: other.token })).status).toBe(404);
    expect((await notes.delete(`/v1/webhooks/${created.id}`, { token: other.token })).status).toBe(404);
    expect((await notes.delete(`/v1/webhooks/${created.id}`, { token: user.token })).status).toBe(204);
    expect((await notes.get(`/v1/webhooks/${created.id}`, { token: user.token })).status).toBe(404);
  });

  test("refuse unknown events, empty lists and URLs the outbox may not reach", async ({ user }) => {
    const bad = async (body: unknown) => notes.post("/v1/webhooks", { token: user.token, body });
    const unknown = await bad({ url: receiver.endpoint("/x"), events: ["meeting.completed", "bot.joined"] });
    expect(unknown.status).toBe(422);
    expect(validationIssues(unknown.body)[0]?.loc).toEqual(["body", "events", 1]);
    expect((await bad({ url: receiver.endpoint("/x"), events: [] })).status).toBe(422);
    expect((await bad({ url: "ftp://example.com/x", events: ["transcript.ready"] })).status).toBe(422);
    expect((await notes.get("/v1/webhooks", { token: user.token })).body.data).toEqual([]);
  });

  test("deliver meeting.completed, transcript.ready and action_items.detected, signed", async ({ user }) => {
    await register(user, "/all", ["meeting.completed", "transcript.ready", "action_items.detected"]);
    await register(user, "/transcripts", ["transcript.ready"]);
    const botId = await recordedMeeting(user, { transcription: { engine: "deepgram" }, summary: {} });

    await receiver.waitFor(() => receiver.at("/all").length >= 3, 30_000);
    const all = receiver.at("/all");
    expect(all.map((d) => d.verification.ok)).toEqual([true, true, true]);
    expect(all.map((d) => d.event)).toEqual([
      "meeting.completed",
      "transcript.ready",
      "action_items.detected",
    ]);
    const meetingId = all[0]!.body?.data.id;
    expect(meetingId).toMatch(/^mtg_[0-9a-f]{24}$/);
    expect(all[0]!.body).toMatchObject({
      event: "meeting.completed",
      botId,
      data: {
        id: meetingId,
        title: "Planning",
        recording: { available: true, durationMs: 2000 },
        participants: [{ id: "p-alice", name: "Alice Martin" }],
        // Both were asked for at creation: queued with the recording, before this was built
        // (null would say none was asked for).
        status: "processing",
        transcript: { status: "queued" },
        summary: { status: "queued" },
      },
    });
    expect(all[1]!.body?.data).toEqual({ meetingId, utterances: 1 });
    expect(all[2]!.body?.data).toEqual({
      meetingId,
      actionItems: [expect.objectContaining({ owner: "Alice Martin", due: "tomorrow" })],
    });
    // Each webhook gets what it subscribed to, and nothing else.
    await receiver.waitFor(() => receiver.at("/transcripts").length >= 1);
    expect(receiver.at("/transcripts").map((d) => d.event)).toEqual(["transcript.ready"]);
    // The meeting the webhook named is there.
    const meeting = await notes.get(`/v1/meetings/${meetingId}`, { token: user.token });
    expect(meeting.body).toMatchObject({
      botId,
      transcript: { status: "completed" },
      summary: { status: "completed" },
    });
  });

  test("send nothing for a bot that never joined a call", async ({ user }) => {
    await register(user, "/never", ["meeting.completed", "transcript.ready"]);
    const { runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("FATAL", { subCode: "JOIN_FAILED", message: "no" });
    const other = await registerUser(server.api);
    await register(other, "/elsewhere", ["meeting.completed"]);
    await recordedMeeting(other);
    await receiver.waitFor(() => receiver.at("/elsewhere").length >= 1);
    expect(receiver.at("/never")).toEqual([]);
    // Nothing asked for: null, and the meeting is complete with its recording.
    expect(receiver.at("/elsewhere")[0]!.body?.data).toMatchObject({
      status: "completed",
      transcript: { status: null },
      summary: { status: null },
    });
  });
});
