import type { NotesApiResponses } from "../../src/notes/responses.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import type { Db } from "../../src/server/db/database.js";
import {
  Api,
  deployedBot,
  makeTestMp4,
  openServerDatabase,
  registerUser,
  type TestServer,
  type TestUser,
  validationIssues,
  defined,
} from "../helpers/server-harness.js";
import { recordMeeting, type TimedEvent } from "../helpers/recorded-meeting.js";
import { storeCompletedContent } from "../helpers/stored-content.js";

/**
 * The meeting-notes interface on its own port: the bot API's credentials, meetings
 * made of the bots that reached IN_CALL, cursor pagination, filters and full-text search.
 */
let scratch: string;
let server: TestServer;
let notes: Api<NotesApiResponses>;
let db: Db;
let mp4: Uint8Array;

test.override("serverOptions", {
  notes: { port: 0 },
  rateLimit: { perMinute: 0, perHour: 0 },
  jobs: { worker: false }, // transcripts here are stored by the test
});
test.beforeAll(async ({ server: fileServer }) => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-notes-"));
  mp4 = await makeTestMp4(scratch);
  server = fileServer;
  notes = new Api<NotesApiResponses>(server.notesUrl as string);
  db = await openServerDatabase(server);
});
afterAll(async () => {
  await db?.close();
  await rm(scratch, { recursive: true, force: true });
});

interface MeetingOptions {
  title?: string;
  startedAt?: string;
  platform?: "google" | "zoom";
  people?: string[];
  end?: "done" | "in_call" | "fatal_without_recording";
  events?: TimedEvent[];
}

/** A bot of `user` that joined a call at `startedAt` (runner time) and, by default, ended with a recording. */
function meeting(user: TestUser, opts: MeetingOptions = {}) {
  const meetingInfo = opts.platform === "zoom" ? { platform: "zoom", meetingId: "81234567890" } : undefined;
  return recordMeeting(server, user, {
    title: opts.title ?? "Weekly sync",
    body: meetingInfo ? { meetingInfo } : {},
    ...(opts.startedAt ? { startedAt: opts.startedAt } : {}),
    participants: (opts.people ?? ["Alice Example"]).map((name, i) => ({
      participantId: `p-${i}`,
      participantName: name,
      joinedMs: 100,
      spoke: [[200 + i * 500, 600 + i * 500]],
    })),
    recording: mp4,
    ...(opts.end ? { end: opts.end } : {}),
    ...(opts.events ? { events: opts.events } : {}),
  });
}

async function meetingIdOf(botId: number): Promise<string> {
  const row = await db.kysely
    .selectFrom("bots")
    .select("meeting_id")
    .where("id", "=", botId)
    .executeTakeFirstOrThrow();
  return row.meeting_id as string;
}

/** A completed transcript of the bot's recording: one utterance, no speaker. */
function storeTranscript(botId: number, text: string) {
  return storeCompletedContent(db, botId, {
    utterances: [{ speaker: null, startMs: 0, endMs: 1000, text, confidence: null, words: [] }],
  });
}

const get = <P extends string>(user: TestUser, url: P) => notes.get(url, { token: user.token });

describe("the notes interface's own address", () => {
  test("serves /v1 routes with the bot API's credentials, and its own document and docs", async () => {
    const user = await registerUser(server.api);
    const key = await server.api.post("/v1/api-keys", { token: user.token, body: { name: "notes" } });
    const byToken = await notes.get("/v1/meetings", { token: user.token });
    expect(byToken.status).toBe(200);
    // The free plan's hour, counted per user whichever credential: this is its second request.
    const byKey = await notes.get("/v1/meetings", { token: key.body.key });
    expect(byKey.status).toBe(200);
    expect(byKey.headers.get("x-ratelimit-limit")).toBe("100");
    expect(Number(byToken.headers.get("x-ratelimit-remaining")) - 1).toBe(
      Number(byKey.headers.get("x-ratelimit-remaining")),
    );
    // An altered key: its last character changed (to "0", or "1" when it already was "0").
    const altered = `${key.body.key.slice(0, -1)}${key.body.key.endsWith("0") ? "1" : "0"}`;
    for (const token of [undefined, "nope", altered]) {
      const res = await notes.get("/v1/meetings", token === undefined ? {} : { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: expect.any(String) });
      expect(res.headers.get("x-ratelimit-reset")).toMatch(/^\d{10}$/);
    }
    expect((await server.api.delete(`/v1/api-keys/${key.body.id}`, { token: user.token })).status).toBe(204);
    expect((await notes.get("/v1/meetings", { token: key.body.key })).status).toBe(401);

    const doc = (
      await notes.request<{ info: { title: string }; paths: Record<string, unknown>; servers: unknown }>(
        "GET",
        "/openapi.json",
      )
    ).body;
    expect(doc.info.title).toBe("meetbot meeting notes API");
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/v1/meetings",
      "/v1/meetings/{id}",
      "/v1/meetings/{id}/summary",
      "/v1/meetings/{id}/transcript",
      "/v1/webhooks",
      "/v1/webhooks/{id}",
    ]);
    expect(doc.servers).toEqual([{ url: server.notesUrl, description: "This server" }]);
    expect((await notes.get("/docs/")).status).toBe(200);
    expect((await notes.get("/redoc")).status).toBe(200);
    // The bot API is not on this address, nor the notes on the bot API's.
    expect((await notes.get("/v1/bots", { token: user.token })).status).toBe(404);
    expect((await server.api.get("/v1/meetings", { token: user.token })).status).toBe(404);
  });
});

describe("meetings", () => {
  test("are the bots that reached IN_CALL, with participants, recording, transcript and summary status", async () => {
    const user = await registerUser(server.api);
    await deployedBot(server, user); // never joined: not a meeting
    const startedAt = "2026-11-20T09:00:00.000Z";
    const botId = await meeting(user, {
      title: "Planning",
      startedAt,
      people: ["Alice Example", "Bob Example"],
      events: [
        {
          type: "chat.message",
          data: {
            messageId: "m-1",
            sender: { participantId: "p-1", name: "Bob Example" },
            text: "Notes are in the doc",
            sentAt: "2026-11-20T09:00:01.000Z",
            fromBot: false,
          },
          ms: 1000,
        },
      ],
    });
    const list = await get(user, "/v1/meetings");
    expect(list.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(list.body.data).toHaveLength(1);
    const listed = defined(list.body.data[0], "the listed meeting");
    expect(listed.id).toMatch(/^mtg_[0-9a-f]{24}$/);
    expect(listed).toEqual({
      id: listed.id,
      botId,
      title: "Planning",
      platform: "google",
      meetingUrl: expect.stringContaining("/meet/"),
      status: "completed",
      startedAt,
      endedAt: "2026-11-20T09:00:01.800Z",
      durationMs: 1800,
      participants: [
        {
          id: "p-0",
          name: "Alice Example",
          joinedAt: "2026-11-20T09:00:00.100Z",
          leftAt: null,
          speakingMs: 400,
        },
        {
          id: "p-1",
          name: "Bob Example",
          joinedAt: "2026-11-20T09:00:00.100Z",
          leftAt: null,
          speakingMs: 400,
        },
      ],
      recording: { available: true, durationMs: 2000, sizeBytes: mp4.byteLength },
      transcript: { status: null },
      summary: { status: null },
      chat: [
        {
          messageId: "m-1",
          sender: { participantId: "p-1", name: "Bob Example" },
          text: "Notes are in the doc",
          sentAt: "2026-11-20T09:00:01.000Z",
          fromBot: false,
        },
      ],
      createdAt: expect.any(String),
    });
    expect((await get(user, `/v1/meetings/${listed.id}`)).body).toEqual(listed);
  });

  test("say while a transcript or summary is being made, and serve them once made", async () => {
    const user = await registerUser(server.api);
    const botId = await meeting(user);
    const id = await meetingIdOf(botId);
    const none = await get(user, `/v1/meetings/${id}/transcript`);
    expect(none).toMatchObject({ status: 404, body: { detail: "No transcript was asked for this meeting" } });
    expect((await server.api.post(`/v1/summaries/${botId}/summarize`, { token: user.token })).status).toBe(
      202,
    );
    const waiting = await get(user, `/v1/meetings/${id}`);
    expect(waiting.body).toMatchObject({
      status: "processing",
      transcript: { status: "queued" },
      summary: { status: "queued" },
    });
    expect(await get(user, `/v1/meetings/${id}/transcript`)).toMatchObject({
      status: 404,
      body: { detail: "The transcript is queued: it is not ready yet" },
    });
    expect((await get(user, `/v1/meetings/${id}/summary`)).status).toBe(404);

    await db.kysely.deleteFrom("content_jobs").where("bot_id", "=", botId).execute();
    await storeTranscript(botId, "we decided to move the meeting to monday");
    const transcript = await get(user, `/v1/meetings/${id}/transcript`);
    expect(transcript.status).toBe(200);
    expect(transcript.body).toMatchObject({
      botId,
      status: "completed",
      text: "we decided to move the meeting to monday",
    });
    expect((await get(user, `/v1/meetings/${id}`)).body).toMatchObject({
      status: "completed",
      transcript: { status: "completed" },
    });
  });

  test("are private: another user's meeting is the same 404 as a missing one", async () => {
    const owner = await registerUser(server.api);
    const other = await registerUser(server.api);
    const id = await meetingIdOf(await meeting(owner));
    for (const suffix of ["", "/transcript", "/summary"]) {
      const theirs = await get(other, `/v1/meetings/${id}${suffix}`);
      const missing = await get(other, `/v1/meetings/mtg_000000000000000000000000${suffix}`);
      expect(theirs).toMatchObject({ status: 404, body: { detail: "Meeting not found" } });
      expect(missing.body).toEqual(theirs.body);
    }
    expect((await get(other, "/v1/meetings")).body.data).toEqual([]);
  });

  test("have statuses in the call, failed without a recording, and filter by them", async () => {
    const user = await registerUser(server.api);
    const live = await meetingIdOf(await meeting(user, { end: "in_call" }));
    const failed = await meetingIdOf(await meeting(user, { end: "fatal_without_recording" }));
    const done = await meetingIdOf(await meeting(user));
    const byStatus = async (status: string) =>
      (await get(user, `/v1/meetings?status=${status}`)).body.data.map((m: { id: string }) => m.id);
    expect(await byStatus("in_progress")).toEqual([live]);
    expect(await byStatus("failed")).toEqual([failed]);
    expect(await byStatus("completed")).toEqual([done]);
    const liveMeeting = (await get(user, `/v1/meetings/${live}`)).body;
    expect(liveMeeting).toMatchObject({ endedAt: null, durationMs: null, recording: { available: false } });
  });
});

describe("the meetings list", () => {
  test("pages newest first with a cursor that holds while new meetings arrive", async () => {
    const user = await registerUser(server.api);
    const ids: string[] = [];
    for (let day = 1; day <= 5; day++) {
      ids.unshift(await meetingIdOf(await meeting(user, { startedAt: `2026-10-0${day}T10:00:00.000Z` })));
    }
    const first = await get(user, "/v1/meetings?limit=2");
    expect(first.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(0, 2));
    expect(first.body.has_more).toBe(true);
    // A meeting newer than all of them arrives between two pages.
    await meeting(user, { startedAt: "2026-10-09T10:00:00.000Z" });
    const second = await get(user, `/v1/meetings?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(2, 4));
    const third = await get(user, `/v1/meetings?limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(third.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(4));

    for (const bad of [
      "limit=0",
      "limit=101",
      "cursor=garbage",
      "from=yesterday",
      "platform=skype",
      "status=done",
    ]) {
      const res = await get(user, `/v1/meetings?${bad}`);
      expect(res.status, bad).toBe(422);
      expect(validationIssues(res.body)[0]?.loc[0]).toBe("query");
    }
  });

  test("filters by start time, platform and participant", async () => {
    const user = await registerUser(server.api);
    const early = await meetingIdOf(
      await meeting(user, { startedAt: "2026-09-01T08:00:00.000Z", people: ["Ada Lovelace"] }),
    );
    const zoom = await meetingIdOf(
      await meeting(user, {
        startedAt: "2026-09-02T08:00:00.000Z",
        platform: "zoom",
        people: ["Grace Hopper", "Ada Byron"],
      }),
    );
    const late = await meetingIdOf(
      await meeting(user, { startedAt: "2026-09-03T08:00:00.000Z", people: ["Linus 100%_x"] }),
    );
    const ids = async (query: string) =>
      (await get(user, `/v1/meetings?${query}`)).body.data.map((m: { id: string }) => m.id);
    expect(await ids("from=2026-09-02")).toEqual([late, zoom]);
    expect(await ids("to=2026-09-02")).toEqual([early]);
    expect(await ids("from=2026-09-02T00:00:00%2B02:00&to=2026-09-03T08:00:00Z")).toEqual([zoom]);
    expect(await ids("platform=zoom")).toEqual([zoom]);
    expect(await ids("participant=ada")).toEqual([zoom, early]);
    expect(await ids("participant=GRACE")).toEqual([zoom]);
    expect(await ids(`participant=${encodeURIComponent("100%_")}`)).toEqual([late]);
    expect(await ids("participant=%25")).toEqual([late]); // a literal %, not a wildcard
    expect(await ids("participant=participantName")).toEqual([]); // names only, not the stored JSON
  });

  test("searches titles and transcripts (stemmed), and forgets a deleted recording's transcript", async () => {
    const user = await registerUser(server.api);
    const budget = await meeting(user, { title: "Quarterly budget review" });
    const standup = await meeting(user, { title: "Standup" });
    await storeTranscript(standup, "We decided to move the deployment to Monday");
    const ids = async (q: string) =>
      (await get(user, `/v1/meetings?q=${encodeURIComponent(q)}`)).body.data.map(
        (m: { botId: number }) => m.botId,
      );
    expect(await ids("budget")).toEqual([budget]);
    expect(await ids("deciding deployments")).toEqual([standup]); // stems: decided, deployment
    expect(await ids("monday budget")).toEqual([]); // every word, in one of them
    expect(await ids("(standup* -")).toEqual([standup]); // words only: no query syntax
    expect((await get(user, "/v1/meetings?q=%22%2A%22")).status).toBe(422);
    // The other user's meetings never match.
    const other = await registerUser(server.api);
    expect((await get(other, "/v1/meetings?q=budget")).body.data).toEqual([]);

    expect((await server.api.delete(`/v1/recordings/${standup}`, { token: user.token })).status).toBe(204);
    expect(await ids("monday")).toEqual([]);
    // The index follows a title that changes (a bot's title is fixed once deployed: changed here in the table).
    await db.kysely.updateTable("bots").set({ meeting_title: "Offsite" }).where("id", "=", budget).execute();
    expect(await ids("budget")).toEqual([]);
    expect(await ids("offsite")).toEqual([budget]);
  });
});
