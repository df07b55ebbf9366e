import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import {
  type BotConfig,
  type BotStatus,
  type CallbackEventBody,
  callbackEventUrl,
} from "../../src/core/index.js";
import { type Db, openDatabase } from "../../src/server/db/database.js";
import type { Launcher } from "../../src/server/launcher/launcher.js";
import { type StartServerOptions, startServer } from "../../src/server/main.js";
import { completeBoxes, segmentEnd } from "../../src/runner/mp4-boxes.js";
import type { AnswerOf, BotApiResponses, ResponseMap } from "../../src/server/schemas/responses.js";
import { testDatabaseFor } from "./postgres.js";
import { pollUntil } from "./poll.js";

/**
 * The control plane for integration tests: real HTTP on 127.0.0.1 (port 0), a temp data dir, a
 * real SQLite file (or a PostgreSQL database: ./postgres.ts). The launcher only records what it
 * was asked to launch, so that a test can then play the runner with the very BotConfig a real
 * runner would get.
 */

/** The spec's error body, which any answer may be (4xx/5xx): readable beside the typed fields. */
export interface ErrorFields {
  detail?: string | ValidationIssue[];
}
export interface ValidationIssue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/**
 * The body type of an answer: the operation's schema (from the server's own response map) with
 * the error fields; `unknown` for a route the map does not list, so a test must state its shape
 * (`request<T>`) or not read fields at all.
 */
export type Body<T> = unknown extends T ? unknown : T & ErrorFields;
/** The body of a bot-API answer to `Method` on a path of the documented form `Path`. */
export type BotApiBody<Method extends string, Path extends string> = Body<
  AnswerOf<BotApiResponses, Method, Path>
>;

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  /** JSON-encoded, with Content-Type application/json. */
  body?: unknown;
  /** Sent as-is (no Content-Type added): for malformed JSON, raw uploads, ... */
  rawBody?: string | Uint8Array;
  /** `Authorization: Bearer <token>`. */
  token?: string;
  headers?: Record<string, string>;
}

/**
 * A client of one interface, whose answers are typed by that interface's response map (the bot
 * API's by default; the meeting-notes interface's is NotesApiResponses): a test reading a field
 * the schema does not have fails to compile.
 */
export class Api<Map extends ResponseMap = BotApiResponses> {
  constructor(readonly baseUrl: string) {}

  get<P extends string>(path: P, opts?: RequestOptions) {
    return this.request<Body<AnswerOf<Map, "GET", P>>>("GET", path, opts);
  }
  post<P extends string>(path: P, opts?: RequestOptions) {
    return this.request<Body<AnswerOf<Map, "POST", P>>>("POST", path, opts);
  }
  put<P extends string>(path: P, opts?: RequestOptions) {
    return this.request<Body<AnswerOf<Map, "PUT", P>>>("PUT", path, opts);
  }
  patch<P extends string>(path: P, opts?: RequestOptions) {
    return this.request<Body<AnswerOf<Map, "PATCH", P>>>("PATCH", path, opts);
  }
  delete<P extends string>(path: P, opts?: RequestOptions) {
    return this.request<Body<AnswerOf<Map, "DELETE", P>>>("DELETE", path, opts);
  }

  /**
   * `path` is relative to the server (e.g. "/v1/bots") or an absolute URL. The escape hatch for
   * routes the response map does not list (files, streams, 204s): the test states the shape.
   */
  async request<T = unknown>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {};
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Uint8Array | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const response = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: { ...headers, ...opts.headers },
      ...(body === undefined ? {} : { body: body as BodyInit }),
    });
    const text = await response.text();
    const isJson = response.headers.get("content-type")?.includes("application/json") ?? false;
    return {
      status: response.status,
      body: (isJson && text ? JSON.parse(text) : text) as T,
      headers: response.headers,
    };
  }
}

/** The status route of a transcript or a summary job. */
export type JobStatusPath = `/v1/transcripts/${number}/status` | `/v1/summaries/${number}/status`;

/** Polls a job's status route until the job has completed or failed; its last status answer. */
export async function settledJob<P extends JobStatusPath>(
  api: Api,
  token: string,
  statusPath: P,
  timeoutMs = 60_000,
): Promise<BotApiBody<"GET", P>> {
  return pollUntil(
    async () => {
      const res = await api.get(statusPath, { token });
      // The body's type depends on P; both jobs' answers have the same `status`.
      const { status } = res.body as { status?: string };
      if (res.status === 200 && (status === "completed" || status === "failed")) return res.body;
      throw new Error(`${statusPath} still ${JSON.stringify(res.body)}`);
    },
    { timeout: timeoutMs, interval: 100 },
  );
}

/** `value`, or a throw naming `what` when it is missing: narrows where `expect().toBeDefined()` does not. */
export function defined<T>(value: T | null | undefined, what: string): T {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}

/** The message of an error body whose detail is one string; throws when it is not. */
export function errorDetail(body: unknown): string {
  const detail = (body as ErrorFields | null)?.detail;
  if (typeof detail !== "string") throw new Error(`not an error with a message: ${JSON.stringify(body)}`);
  return detail;
}

/** The issues of a validation error (422) body; throws when its detail is not a list of them. */
export function validationIssues(body: unknown): ValidationIssue[] {
  const detail = (body as ErrorFields | null)?.detail;
  if (!Array.isArray(detail)) throw new Error(`not a validation error: ${JSON.stringify(body)}`);
  return detail;
}

/** A Launcher that keeps each BotConfig it is asked to launch; can be told to fail. */
export class RecordingLauncher implements Launcher {
  readonly launched: BotConfig[] = [];
  readonly stopped: number[] = [];
  private failure: Error | undefined;

  /** The next launch rejects with `error`. */
  failNextLaunch(error = new Error("no capacity left")): void {
    this.failure = error;
  }

  async launch(config: BotConfig): Promise<void> {
    const failure = this.failure;
    this.failure = undefined;
    if (failure) throw failure;
    this.launched.push(config);
  }

  async stop(botId: number): Promise<void> {
    this.stopped.push(botId);
  }

  configFor(botId: number): BotConfig {
    const config = this.launched.find((c) => c.botId === botId);
    if (!config) throw new Error(`bot ${botId} was never launched`);
    return config;
  }
}

export interface TestServer {
  url: string;
  /** The meeting-notes interface, when started with `notes.port`. */
  notesUrl?: string | undefined;
  dataDir: string;
  /** "" for SQLite (in dataDir), else the URL of the server's own PostgreSQL database. */
  databaseUrl: string;
  launcher: RecordingLauncher;
  api: Api;
  close(): Promise<void>;
}

export async function startTestServer(opts: Partial<StartServerOptions> = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(tmpdir(), "meetbot-server-")));
  const launcher = new RecordingLauncher();
  // SQLite in the data dir, or the data dir's own PostgreSQL database (MEETBOT_TEST_DATABASE_URL).
  const database = opts.databaseUrl === undefined ? await testDatabaseFor(dataDir) : undefined;
  const databaseUrl = opts.databaseUrl ?? database?.url ?? "";
  // A caller's data dir (and its database) may be started on again; the cluster is throwaway.
  const removeOwn = async () => {
    if (opts.dataDir) return;
    await rm(dataDir, { recursive: true, force: true });
    await database?.drop();
  };
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      port: 0,
      logLevel: "silent",
      allowedMeetingHosts: ["127.0.0.1"],
      launcher,
      ...opts,
      databaseUrl,
      dataDir,
    });
  } catch (error) {
    // A test of a server that refuses to start leaves nothing behind either.
    await removeOwn();
    throw error;
  }
  return {
    url: server.url,
    notesUrl: server.notesUrl,
    dataDir,
    databaseUrl,
    launcher: (opts.launcher as RecordingLauncher | undefined) ?? launcher,
    api: new Api(server.url),
    async close() {
      await server.close();
      await removeOwn();
    },
  };
}

export interface TestUser {
  token: string;
  refreshToken: string;
  userId: string;
  email: string;
  password: string;
}

export async function registerUser(api: Api, name = "Test User"): Promise<TestUser> {
  const email = `user-${randomUUID()}@example.com`;
  const password = "correct horse battery";
  const res = await api.post("/v1/auth/register", { body: { email, password, name } });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    token: res.body.access_token,
    refreshToken: res.body.refresh_token,
    userId: String(res.body.user_id), // "usr_<id>" from register
    email,
    password,
  };
}

/** A meeting URL the test server accepts (127.0.0.1 is in its allowed hosts). */
export const TEST_MEETING = {
  platform: "google",
  meetingUrl: "http://127.0.0.1:9/meet/abc-defg-hij",
} as const;

/**
 * Creates a Google bot account for `user` whose session's one cookie holds `marker` (to look for
 * where the session must not be), and asks for a check of it; the server's worker launches it.
 * Needs a server with MEETBOT_SECRET_KEY.
 */
export async function requestAccountCheck(
  server: TestServer,
  user: TestUser,
): Promise<{ accountId: number; checkId: number; marker: string }> {
  const marker = `session-${randomUUID()}`;
  const cookie = { name: "SID", value: marker, domain: ".google.com", path: "/", expires: -1 };
  const session = { cookies: [{ ...cookie, httpOnly: true, secure: true, sameSite: "Lax" }], origins: [] };
  const account = await server.api.post("/v1/bot-accounts", {
    token: user.token,
    body: { platform: "google", name: "Notetaker", session },
  });
  if (account.status !== 201)
    throw new Error(`create account failed: ${account.status} ${JSON.stringify(account.body)}`);
  const accountId = account.body.id;
  return { accountId, marker, checkId: await requestCheck(server, user, accountId) };
}

/** Asks for a check of the account (opening TEST_MEETING); the check's id. */
/** An Api that keeps every answer it got, as text: to look for a secret in all of them. */
export class RecordingApi extends Api {
  readonly answers: string[] = [];
  override async request<T>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const res = await super.request<T>(method, path, opts);
    this.answers.push(`${method} ${path} ${res.status} ${JSON.stringify(res.body)}`);
    return res;
  }
}

export async function requestCheck(server: TestServer, user: TestUser, accountId: number): Promise<number> {
  const check = await server.api.post(`/v1/bot-accounts/${accountId}/check`, {
    token: user.token,
    body: { meetingUrl: TEST_MEETING.meetingUrl },
  });
  if (check.status !== 202) throw new Error(`check failed: ${check.status} ${JSON.stringify(check.body)}`);
  return check.body.checkId;
}

/** Creates a bot for `user` and deploys it; returns its id and the BotConfig the runner got. */
export async function deployedBot(
  server: TestServer,
  user: TestUser,
  body: Record<string, unknown> = {},
): Promise<{ botId: number; config: BotConfig; runner: FakeRunner }> {
  const created = await server.api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, meetingTitle: "Weekly sync", botDisplayName: "Notetaker", ...body },
  });
  if (created.status !== 201)
    throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
  const botId = created.body.id;
  const deployed = await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
  if (deployed.status !== 200)
    throw new Error(`deploy failed: ${deployed.status} ${JSON.stringify(deployed.body)}`);
  const config = server.launcher.configFor(botId);
  return { botId, config, runner: new FakeRunner(config) };
}

/** Talks to the server exactly as a runner does, from its BotConfig: numbered events, the upload. */
export class FakeRunner {
  private seq = 0;
  private readonly api: Api;

  constructor(readonly config: BotConfig) {
    this.api = new Api(config.callback.baseUrl);
  }

  /** Numbers (seq from 1) and stamps the event, then posts it with the bot's callback token. */
  send(event: CallbackEventBody, opts: { seq?: number; token?: string } = {}) {
    const seq = opts.seq ?? ++this.seq;
    return this.sendRaw({ ...event, seq, eventTime: new Date().toISOString() }, opts.token);
  }

  sendRaw(event: unknown, token = this.config.callback.token) {
    // The URL is the config's (absolute): its answer is typed as the route it names.
    return this.api.request<BotApiBody<"POST", "/v1/bot-callbacks/0/event">>(
      "POST",
      callbackEventUrl(this.config),
      {
        body: event,
        token,
      },
    );
  }

  status(
    status: BotStatus,
    extra: { subCode?: string; message?: string; artifacts?: string[]; joinedAs?: string } = {},
  ) {
    return this.send({ type: "status", data: { status, ...extra } } as CallbackEventBody);
  }

  /** PUTs one segment of the recording, as the runner does during the call. */
  uploadSegment(
    seq: number | string,
    bytes: Uint8Array,
    opts: { token?: string; contentType?: string } = {},
  ) {
    return this.api.put(`/v1/bot-callbacks/${this.config.botId}/recording/segments/${seq}`, {
      rawBody: bytes,
      token: opts.token ?? this.config.callback.token,
      headers: { "content-type": opts.contentType ?? "video/mp4" },
    });
  }

  /** Tells the server segments 0..count-1 are all sent. */
  completeRecording(count: number, opts: { token?: string } = {}) {
    return this.api.post(`/v1/bot-callbacks/${this.config.botId}/recording/complete`, {
      body: { segments: count },
      token: opts.token ?? this.config.callback.token,
    });
  }

  upload(bytes: Uint8Array, durationMs: number, opts: { token?: string; contentType?: string } = {}) {
    return this.api.request<BotApiBody<"PUT", "/v1/bot-callbacks/0/recording">>(
      "PUT",
      this.config.upload.url,
      {
        rawBody: bytes,
        token: opts.token ?? this.config.callback.token,
        headers: {
          "content-type": opts.contentType ?? "video/mp4",
          "x-recording-duration-ms": String(durationMs),
        },
      },
    );
  }
}

const run = promisify(execFile);

/**
 * Bytes dressed as an MP4: the first 8 are a `ftyp` box header, which is all the upload routes
 * check of a recording before they store it (random bytes, `size` of them, or a copy of `content`).
 * For tests about storing and serving bytes; tests about media use makeTestMp4.
 */
export function mp4Bytes(content: number | Uint8Array): Uint8Array {
  const bytes = typeof content === "number" ? new Uint8Array(randomBytes(content)) : Uint8Array.from(content);
  if (bytes.length < 8) throw new Error("an MP4 box header takes 8 bytes");
  bytes.set([0, 0, 0, 8, ...Buffer.from("ftyp", "latin1")]);
  return bytes;
}

/** A real 2-second MP4 (H.264 + AAC), made with ffmpeg. */
export async function makeTestMp4(dir: string): Promise<Uint8Array> {
  const file = path.join(dir, "test.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25"],
    ...["-f", "lavfi", "-i", "sine=frequency=440"],
    ...["-t", "2", "-c:v", "libx264", "-c:a", "aac", "-shortest", file],
  ]);
  return new Uint8Array(await readFile(file));
}

/**
 * A real fragmented MP4 (H.264 + AAC, 1-second fragments) of `seconds`, as the runner's ffmpeg
 * writes it, cut into `count` segments at box boundaries the way the runner cuts it.
 */
export async function makeSegmentedMp4(
  dir: string,
  seconds: number,
  count: number,
): Promise<{ whole: Uint8Array; segments: Uint8Array[] }> {
  const file = path.join(dir, `fragmented-${seconds}.mp4`);
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25"],
    ...["-f", "lavfi", "-i", "sine=frequency=440"],
    ...["-t", String(seconds), "-c:v", "libx264", "-g", "25", "-c:a", "aac", "-shortest"],
    ...["-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-frag_duration", "1000000", file],
  ]);
  const whole = await readFile(file);
  const boxes = await completeBoxes(
    async (position, length) => whole.subarray(position, position + length),
    0,
    whole.length,
  );
  const segments: Uint8Array[] = [];
  let from = 0;
  for (let i = 1; i <= count; i++) {
    const target = i === count ? Number.POSITIVE_INFINITY : Math.round((whole.length * i) / count) - from;
    const end = segmentEnd(
      boxes.filter((box) => box.start >= from),
      from,
      target,
    );
    if (end === null || end === from) throw new Error(`cannot cut ${count} segments`);
    segments.push(new Uint8Array(whole.subarray(from, end)));
    from = end;
  }
  if (from !== whole.length) throw new Error("segments do not cover the file");
  return { whole: new Uint8Array(whole), segments };
}

/** ffprobe's duration (s) and stream types of a file. */
export async function probeMedia(file: string): Promise<{ durationSeconds: number; streams: string[] }> {
  const { stdout } = await run("ffprobe", [
    ...["-v", "error", "-show_entries", "format=duration:stream=codec_type", "-of", "json", file],
  ]);
  const probe = JSON.parse(stdout) as { format: { duration: string }; streams: { codec_type: string }[] };
  return {
    durationSeconds: Number(probe.format.duration),
    streams: probe.streams.map((stream) => stream.codec_type),
  };
}

/**
 * A second connection to a test server's own database (SQLite file or PostgreSQL), for asserting
 * on rows the API cannot show (e.g. that a deleted bot left none behind). Close it after use.
 */
export async function openServerDatabase(server: TestServer): Promise<Db> {
  return openDatabase(
    server.databaseUrl
      ? { kind: "postgres", url: server.databaseUrl, poolSize: 1 }
      : { kind: "sqlite", file: path.join(server.dataDir, "meetbot.sqlite") },
  );
}
