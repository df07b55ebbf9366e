// Own servers, not the fixture: each test configures its engines around its own provider stand-in.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Db } from "../../src/server/db/database.js";
import type { StartServerOptions } from "../../src/server/config.js";
import type { EnginesConfig } from "../../src/server/jobs/engines.js";
import { claimDueJobs, queueJob } from "../../src/server/jobs/queue.js";
import { type JobHandler, JobWorker } from "../../src/server/jobs/worker.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import { type StandIn, type StandInHandler, startStandIn } from "../helpers/provider-stand-ins.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import {
  makeTestMp4,
  openServerDatabase,
  registerUser,
  startTestServer,
  type TestServer,
  type TestUser,
  settledJob,
} from "../helpers/server-harness.js";

/**
 * The job machinery: provider failures retried with backoff, then failed with {code, message};
 * a restart resumes a job; a job whose process died is taken over once its lease runs out; two
 * workers on one database never run one job twice; AssemblyAI's webhook ends its wait. The
 * providers are local stand-ins answering in their documented formats (test/helpers/provider-stand-ins.ts).
 */
let scratch: string;
let mp4: Uint8Array;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-content-jobs-"));
  mp4 = await makeTestMp4(scratch);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const DEEPGRAM_ANSWER = {
  metadata: { request_id: "r1", duration: 2, channels: 1 },
  results: {
    channels: [
      {
        alternatives: [
          {
            transcript: "Hello there.",
            confidence: 0.98,
            words: [
              { word: "hello", punctuated_word: "Hello", start: 0.1, end: 0.48, confidence: 0.99 },
              { word: "there", punctuated_word: "there.", start: 0.48, end: 1.0, confidence: 0.97 },
            ],
          },
        ],
      },
    ],
  },
};

async function standIn(handler: StandInHandler): Promise<StandIn> {
  const server = await startStandIn(handler);
  cleanups.push(() => server.close());
  return server;
}

function engines(extra: Partial<EnginesConfig>): EnginesConfig {
  return {
    defaultTranscription: "pocketsphinx",
    defaultSummary: "extractive",
    pocketsphinxModelDir: "/usr/share/pocketsphinx/model/en-us",
    ...extra,
  };
}

async function server(opts: Partial<StartServerOptions>): Promise<TestServer> {
  const started = await startTestServer({ rateLimit: { perMinute: 0, perHour: 0 }, ...opts });
  cleanups.push(() => started.close());
  return started;
}

/** A DONE bot of `user` with a stored recording. */
function recordedBot(target: TestServer, user: TestUser, body: Record<string, unknown> = {}) {
  return recordMeeting(target, user, { body, recording: mp4 });
}

async function until(condition: () => boolean | Promise<boolean>, what: string) {
  await vi.waitFor(
    async () => {
      if (!(await condition())) throw new Error(`still waiting for ${what}`);
    },
    { timeout: 30_000, interval: 25 },
  );
}

const FAST_JOBS = { pollIntervalMs: 50, retryDelaysMs: [20, 20, 20, 20] };

describe("provider failures", () => {
  it("a 503 is tried again after the backoff, and the transcript completes", async () => {
    const deepgram = await standIn(() =>
      deepgram.requests.length === 1 ? { status: 503, json: { err_msg: "busy" } } : { json: DEEPGRAM_ANSWER },
    );
    const target = await server({
      jobs: { ...FAST_JOBS, engines: engines({ deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" } }) },
    });
    const user = await registerUser(target.api);
    const botId = await recordedBot(target, user);
    const started = await target.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram", language: "en" },
    });
    expect(started.status).toBe(202);
    const status = await settledJob(target.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({ status: "completed", engine: "deepgram", language: "en", error: null });
    expect(deepgram.requests).toHaveLength(2);
    const transcript = await target.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(transcript.body).toMatchObject({
      text: "Hello there.",
      utterances: [{ speaker: null, text: "Hello there." }],
    });
  });

  it("fails after the documented number of tries with the provider's code; a waiting summary fails with it", async () => {
    const deepgram = await standIn(() => ({ status: 500, json: { err_msg: "down" } }));
    const target = await server({
      jobs: {
        ...FAST_JOBS,
        engines: engines({
          defaultTranscription: "deepgram",
          deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" },
        }),
      },
    });
    const user = await registerUser(target.api);
    const botId = await recordedBot(target, user);
    expect((await target.api.post(`/v1/summaries/${botId}/summarize`, { token: user.token })).status).toBe(
      202,
    );
    const status = await settledJob(target.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({
      status: "failed",
      engine: "deepgram",
      error: { code: "provider_error", message: expect.stringMatching(/500/) },
    });
    expect(deepgram.requests).toHaveLength(5); // MAX_JOB_ATTEMPTS
    const summary = await target.api.get(`/v1/summaries/${botId}/status`, { token: user.token });
    expect(summary.body).toMatchObject({ status: "failed", error: { code: "transcript_failed" } });
    const read = await target.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(read.status).toBe(404);
    expect(read.body.detail).toMatch(/The transcript failed \(provider_error\)/);
    // A failed transcript may be asked for again.
    expect((await target.api.post(`/v1/transcripts/${botId}/transcribe`, { token: user.token })).status).toBe(
      202,
    );
  });

  it("bad credentials fail at once, without retries", async () => {
    const deepgram = await standIn(() => ({ status: 401, json: { err_code: "INVALID_AUTH" } }));
    const target = await server({
      jobs: { ...FAST_JOBS, engines: engines({ deepgram: { baseUrl: deepgram.baseUrl, apiKey: "wrong" } }) },
    });
    const user = await registerUser(target.api);
    const botId = await recordedBot(target, user);
    await target.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram" },
    });
    const status = await settledJob(target.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({ status: "failed", error: { code: "credentials_invalid" } });
    expect(deepgram.requests).toHaveLength(1);
  });
});

describe("durability", () => {
  it("a restart in the middle of a job resumes it", async () => {
    let hang = true;
    const deepgram = await standIn(() => (hang ? "hang" : { json: DEEPGRAM_ANSWER }));
    const dataDir = await mkdtemp(path.join(scratch, "restart-"));
    const database = await testDatabaseFor(dataDir);
    cleanups.push(async () => database?.drop());
    const options = {
      dataDir,
      databaseUrl: database?.url ?? "",
      jobs: { ...FAST_JOBS, engines: engines({ deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" } }) },
    };
    const first = await startTestServer(options);
    const user = await registerUser(first.api);
    const botId = await recordedBot(first, user);
    await first.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram" },
    });
    await until(() => deepgram.requests.length === 1, "the provider call");
    const processing = await first.api.get(`/v1/transcripts/${botId}/status`, { token: user.token });
    expect(processing.body.status).toBe("processing");
    await first.close();

    hang = false;
    const second = await startTestServer(options);
    cleanups.push(() => second.close());
    const status = await settledJob(second.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({ status: "completed", error: null });
    expect(deepgram.requests).toHaveLength(2);
    const db = await openServerDatabase(second);
    cleanups.push(() => db.close());
    const row = await db.kysely
      .selectFrom("content_jobs")
      .selectAll()
      .where("bot_id", "=", botId)
      .executeTakeFirstOrThrow();
    // The interrupted try was handed back and does not count.
    expect(row.attempts).toBe(1);
  });

  it("a job whose process died is taken over once its lease has run out", async () => {
    const deepgram = await standIn(() => ({ json: DEEPGRAM_ANSWER }));
    const target = await server({
      jobs: {
        ...FAST_JOBS,
        worker: false,
        engines: engines({ deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" } }),
      },
    });
    const user = await registerUser(target.api);
    const botId = await recordedBot(target, user);
    await target.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "deepgram" },
    });
    const db = await openServerDatabase(target);
    cleanups.push(() => db.close());
    // What a process killed mid-job leaves: processing, claimed, its lease about to run out.
    const worker = testWorker(db, countingHandlers(new Map()));
    const [claimed] = await claimDueJobs(db.kysely, db.dialect, {
      now: new Date(),
      limit: 1,
      leaseMs: 60_000,
    });
    expect(claimed?.bot_id).toBe(botId);
    expect(await worker.runDue()).toBe(0); // held by the dead claim
    const expired = new Date(Date.now() - 1000).toISOString();
    await db.kysely
      .updateTable("content_jobs")
      .set({ lease_until: expired })
      .where("id", "=", claimed!.id)
      .execute();

    const resumed = await server({
      dataDir: target.dataDir,
      databaseUrl: target.databaseUrl,
      jobs: { ...FAST_JOBS, engines: engines({ deepgram: { baseUrl: deepgram.baseUrl, apiKey: "dg" } }) },
    });
    const status = await settledJob(resumed.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({ status: "completed" });
    const row = await db.kysely
      .selectFrom("content_jobs")
      .selectAll()
      .where("id", "=", claimed!.id)
      .executeTakeFirstOrThrow();
    expect(row.attempts).toBe(2);
  });

  it("two workers on one database never run one job twice", async () => {
    const target = await server({ jobs: { ...FAST_JOBS, worker: false } });
    const user = await registerUser(target.api);
    const first = await openServerDatabase(target);
    const second = await openServerDatabase(target);
    cleanups.push(
      () => first.close(),
      () => second.close(),
    );
    const botIds: number[] = [];
    for (let i = 0; i < 3; i++) botIds.push(await recordedBot(target, user));
    // Twelve jobs: a transcript and a summary per recording, queued together, four rounds of them.
    const runs = new Map<number, number>();
    const workers = [testWorker(first, countingHandlers(runs)), testWorker(second, countingHandlers(runs))];
    for (let round = 0; round < 2; round++) {
      await first.kysely.transaction().execute(async (trx) => {
        for (const botId of botIds) {
          for (const kind of ["transcript", "summary"] as const) {
            await queueJob(trx, { botId, kind, engine: "test" }, new Date());
          }
        }
      });
      const ran = await Promise.all(workers.map((worker) => worker.runDue()));
      expect(ran[0]! + ran[1]!).toBe(6);
    }
    const jobs = await first.kysely.selectFrom("content_jobs").select(["id", "state", "attempts"]).execute();
    expect(jobs).toHaveLength(6);
    for (const job of jobs) expect(job).toMatchObject({ state: "completed", attempts: 1 });
    // Each job ran once per round: twice in all, never two at once.
    expect([...runs.values()]).toEqual(jobs.map(() => 2));
  });
});

/** Handlers that count their runs per job, take a moment, and store nothing. */
function countingHandlers(runs: Map<number, number>): Record<"transcript" | "summary", JobHandler> {
  const handler: JobHandler = {
    async run(job) {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return async () => 0;
    },
    failed: async () => 0,
  };
  return { transcript: handler, summary: handler };
}

function testWorker(db: Db, handlers: Record<"transcript" | "summary", JobHandler>): JobWorker {
  return new JobWorker({
    db: db.kysely,
    dialect: db.dialect,
    now: () => new Date(),
    log: { error: () => {}, warn: () => {}, info: () => {} },
    handlers,
    concurrency: 4,
    pollIntervalMs: 1000,
    leaseMs: 60_000,
  });
}

describe("AssemblyAI", () => {
  it("its webhook ends the wait for the transcript, verified by the job's secret header", async () => {
    let webhook: { url: string; header: string; value: string } | undefined;
    const webhookAnswers: number[] = [];
    let reads = 0;
    const assemblyai = await standIn(async (request) => {
      if (request.url.pathname === "/v2/upload")
        return { json: { upload_url: "https://cdn.assemblyai.test/u/1" } };
      if (request.method === "POST" && request.url.pathname === "/v2/transcript") {
        const body = JSON.parse(request.body.toString()) as Record<string, string>;
        webhook = {
          url: body.webhook_url!,
          header: body.webhook_auth_header_name!,
          value: body.webhook_auth_header_value!,
        };
        // Done at once; says so by its webhook, as AssemblyAI does (after a forged call that must be refused).
        setTimeout(() => {
          void (async () => {
            const send = (headers: Record<string, string>) =>
              fetch(webhook!.url, {
                method: "POST",
                headers: { "content-type": "application/json", ...headers },
                body: JSON.stringify({ transcript_id: "tr_1", status: "completed" }),
              }).then((res) => webhookAnswers.push(res.status));
            await send({ [webhook!.header]: "forged" });
            await send({ [webhook!.header]: webhook!.value });
          })();
        }, 50);
        return { json: { id: "tr_1", status: "queued" } };
      }
      if (request.url.pathname === "/v2/transcript/tr_1") {
        reads += 1;
        if (webhookAnswers.length < 2) return { json: { id: "tr_1", status: "processing" } };
        return {
          json: {
            id: "tr_1",
            status: "completed",
            text: "Hello there.",
            language_code: "en_us",
            audio_duration: 2,
            words: [
              { text: "Hello", start: 120, end: 480, confidence: 0.95 },
              { text: "there.", start: 480, end: 1010, confidence: 0.9 },
            ],
          },
        };
      }
      return { status: 404, json: { error: "not found" } };
    });
    const target = await server({
      jobs: {
        ...FAST_JOBS,
        // Polling alone would take a minute: only the webhook can finish this within the test's time.
        engines: engines({
          assemblyai: { baseUrl: assemblyai.baseUrl, apiKey: "aai", webhookPollIntervalMs: 60_000 },
        }),
      },
    });
    const user = await registerUser(target.api);
    const botId = await recordedBot(target, user);
    await target.api.post(`/v1/transcripts/${botId}/transcribe`, {
      token: user.token,
      body: { engine: "assemblyai" },
    });
    const status = await settledJob(target.api, user.token, `/v1/transcripts/${botId}/status`, 30_000);
    expect(status).toMatchObject({ status: "completed", engine: "assemblyai", language: null });
    expect(webhookAnswers).toEqual([401, 200]);
    expect(reads).toBe(1);
    expect(webhook!.url).toMatch(new RegExp(`^${target.url}/v1/webhook-receivers/assemblyai/\\d+$`));
    const transcript = await target.api.get(`/v1/transcripts/${botId}`, { token: user.token });
    expect(transcript.body).toMatchObject({ language: "en", text: "Hello there." });

    // Once the job is over its webhook is unknown here: the same answer as a wrong secret for a
    // job that waits, so nobody without the secret learns which jobs exist.
    const late = await fetch(webhook!.url, {
      method: "POST",
      headers: { [webhook!.header]: webhook!.value },
    });
    expect(late.status).toBe(401);
    const unknown = await fetch(webhook!.url.replace(/\d+$/, "999999"), { method: "POST" });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toEqual(await late.json());
  });
});
