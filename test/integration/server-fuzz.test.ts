import { randomBytes } from "node:crypto";
import { base64url, decodeJwt, SignJWT } from "jose";
import { afterAll, beforeAll, describe } from "vitest";
import { deriveKey, loadServerSecret } from "../../src/server/auth/tokens.js";
import type { Db } from "../../src/server/db/database.js";
import {
  brokenOutcomes,
  DEEP_ARRAY,
  DEEP_OBJECT,
  DEEP_PROTO,
  diffStoredData,
  errorBodyProblem,
  fuzzCaseLabel,
  fuzzSeed,
  HOSTILE_IDS,
  JSON_SPELLINGS,
  type JsonSchema,
  jsonRefused,
  MALFORMED_JSON,
  memberSweep,
  objectJson,
  PATH_EDITS,
  Prng,
  QUERY_KEYS,
  QUERY_VALUES,
  RawClient,
  recordStatuses,
  routeKey,
  type RawRequest,
  type RawResponse,
  sendCases,
  shapedJson,
  snapshotStoredData,
  type StoredData,
  violatingJson,
  WRONG_CONTENT_TYPES,
} from "../helpers/fuzz.js";
import { TestOidcProvider } from "../helpers/oidc-provider.js";
import { alicesReport, storeCompletedContent } from "../helpers/stored-content.js";
import {
  deployedBot,
  FakeRunner,
  registerUser,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * Malformed and hostile input at every route. The routes come from the server's own /openapi.json
 * (routes added later are fuzzed too), plus the pages outside it; path ids, query strings, bodies,
 * credentials and headers come from a seeded PRNG. Whatever comes in:
 *   - never a 5xx, and every error is one of spec §7's two bodies;
 *   - nothing stored changes (every row of every table, every file of the data dir): a route that
 *     writes only ever gets a request it must refuse (a body that breaks its schema, a credential
 *     that is refused, an id the caller does not own), and it must refuse it;
 *   - a refused credential never succeeds; another user's resource is a 404.
 * Every failure is printed with its request and the seed; env FUZZ_SEED=<seed> replays a run,
 * FUZZ_CASES=<n> (default 20) sets the cases per route and family.
 */

const SEED = fuzzSeed();
const CASES_PER_ROUTE = casesPerRoute(process.env.FUZZ_CASES);
const CONCURRENCY = 8;
/** The longest heartbeat interval: no running bot times out while the fuzzer runs. */
const QUIET = { heartbeatInterval: 3_600_000 };
const ARTIFACT = "screenshot.png";
const ARTIFACT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const MAX_ID = 2_147_483_647;
/** Well-formed ids that no table of this test's database reaches. */
const MISSING_IDS = ["999999", String(MAX_ID)];
/** POSTs that store nothing: they may get bodies the server accepts. */
const READ_ONLY_POSTS = new Set(["POST /v1/auth/login", "POST /v1/auth/refresh", "POST /v1/auth/logout"]);
/** Reads that cannot succeed here: the OAuth callback needs a code the provider gives a real sign-in. */
const NEVER_SUCCEED = new Set(["GET /v1/auth/oauth/{provider}/callback"]);
/**
 * Routes whose credential no fixture holds, so every request is a 401: an account check's result
 * takes the token of a running check's runner, and the fixture runs no check.
 */
const TOKEN_NEVER_HELD = new Set(["POST /v1/bot-account-checks/{id}/result"]);
/**
 * Answers that never end when they succeed (a live event stream): the fuzzer waits for whole
 * answers, so it leaves them out; test/integration/server-event-stream.test.ts and
 * server-live.test.ts cover their credentials, bad resume ids and limits.
 */
const ENDLESS = new Set(["GET /v1/events/stream", "GET /v1/bots/{id}/live"]);
/**
 * A runner's long poll: a request the fuzzer makes with the runner's token waits up to 30 s for a
 * command, past the fuzzer's wait for an answer. test/integration/server-bot-commands.test.ts
 * covers its credentials and its query.
 */
const LONG_POLL = new Set(["GET /v1/bot-callbacks/{id}/commands"]);
/**
 * Asks that a running bot's runner answers: the fixture's running bots have no runner, so each
 * would queue a command and wait out its 15 s deadline. test/integration/server-screenshots.test.ts
 * covers their credentials, answers and limits.
 */
const RUNNER_ANSWERS = new Set(["GET /v1/bots/{id}/screenshot"]);
/** Change on requests by design: the request log, and when an API key was last used. */
const VOLATILE = {
  tables: ["api_request_logs"],
  columns: { api_keys: ["last_used_at"] },
  files: /^meetbot\.sqlite/,
};

function casesPerRoute(value: string | undefined): number {
  const n = Number(value || 20);
  if (!Number.isInteger(n) || n < 1) throw new Error(`FUZZ_CASES must be a positive integer, got "${value}"`);
  return n;
}

// ---- Routes -----------------------------------------------------------------------------------

/** user: a user's bearer credential; runner: a bot's callback token; public: none; page: not the API. */
type Group = "user" | "runner" | "public" | "page";
type BodyKind = "json" | "video/mp4" | "application/octet-stream" | "audio/wav";
type ParamKind = "bot" | "key" | "webhook" | "account" | "artifact" | "provider" | "file" | "other";

interface Route {
  method: string;
  /** As in the document: /v1/bots/{id}. */
  template: string;
  params: string[];
  query: { name: string; schema: JsonSchema }[];
  body?: JsonSchema;
  group: Group;
  bodyKind: BodyKind;
  /** Stores nothing, whatever the input. */
  readOnly: boolean;
  /** Listed in /openapi.json. */
  documented: boolean;
}

/** Not part of the API document, but served: the OAuth landing page, the docs' assets, the dashboard. */
const PAGES = ["/auth/callback", "/docs/static/{file}", "/openapi.json", "/", "/assets/{name}"];
/** Routes the fuzzer reaches even if the document stopped listing them. */
const REQUIRED = [
  "POST /v1/bot-callbacks/{id}/event",
  "PUT /v1/bot-callbacks/{id}/recording",
  "PUT /v1/bot-callbacks/{id}/artifacts/{name}",
  "GET /v1/recordings/{bot_id}/file",
  "GET /v1/auth/oauth/{provider}",
  "GET /v1/auth/oauth/{provider}/callback",
];

interface OpenApiOperation {
  security?: unknown[];
  parameters?: { in: string; name: string; schema: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema: JsonSchema }> };
}

async function listRoutes(s: TestServer): Promise<Route[]> {
  const doc = (await s.api.get("/openapi.json")).body as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  const byKey = new Map<string, Route>();
  const add = (method: string, template: string, op: OpenApiOperation | undefined) => {
    const upper = method.toUpperCase();
    const runner = template.startsWith("/v1/bot-callbacks/");
    byKey.set(`${upper} ${template}`, {
      method: upper,
      template,
      params: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string),
      query: (op?.parameters ?? []).filter((p) => p.in === "query"),
      body: op?.requestBody?.content?.["application/json"]?.schema,
      group: runner
        ? "runner"
        : op?.security?.length
          ? "user"
          : template.startsWith("/v1/")
            ? "public"
            : "page",
      bodyKind:
        runner && template.endsWith("/recording")
          ? "video/mp4"
          : runner && template.includes("/artifacts/")
            ? "application/octet-stream"
            : upper === "POST" && template.endsWith("/output-audio")
              ? "audio/wav"
              : "json",
      readOnly: upper === "GET" || READ_ONLY_POSTS.has(`${upper} ${template}`),
      documented: op !== undefined,
    });
  };
  for (const [template, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const key = `${method.toUpperCase()} ${template}`;
      if (!ENDLESS.has(key) && !LONG_POLL.has(key) && !RUNNER_ANSWERS.has(key)) add(method, template, op);
    }
  }
  for (const key of REQUIRED) {
    const [method, template] = key.split(" ") as [string, string];
    if (!byKey.has(key)) add(method, template, undefined);
  }
  for (const page of PAGES) add("GET", page, undefined);
  return [...byKey.values()].sort((x, y) => routeKey(x).localeCompare(routeKey(y)));
}

function paramKind(route: Route, param: string): ParamKind {
  const t = route.template;
  if (param === "bot_id") return "bot";
  if (param === "id" && t.startsWith("/v1/api-keys/")) return "key";
  if (param === "id" && t.startsWith("/v1/webhooks/")) return "webhook";
  if (param === "id" && t.startsWith("/v1/bot-accounts/")) return "account";
  if (param === "id" && (t.startsWith("/v1/bots/") || t.startsWith("/v1/bot-callbacks/"))) return "bot";
  if (param === "name" && t.includes("/artifacts/")) return "artifact";
  if (param === "provider" || param === "file") return param;
  return "other";
}

// ---- The server and its data ------------------------------------------------------------------

type Owner = "a" | "b";

interface Credential {
  label: string;
  /** The Authorization header (two when an array); none when undefined. */
  header?: string | string[];
  /** Accepted by the user routes as this user. */
  user?: Owner;
  /** Accepted by the runner routes of this bot. */
  callbackBot?: number;
}

interface Fixture {
  a: TestUser;
  b: TestUser;
  bots: Record<Owner, number[]>;
  keys: Record<Owner, number[]>;
  webhooks: Record<Owner, number[]>;
  /** Bot accounts (their sessions stored encrypted). */
  accounts: Record<Owner, number[]>;
  /** A's DONE bot (with a recording) and FATAL bot (with an artifact). */
  done: number;
  fatal: number;
  /** Deployed bot → its callback token. */
  callbackTokens: Map<number, string>;
  userCredentials: Credential[];
  runnerCredentials: Credential[];
  /** The DONE bot's signed download link. */
  download: { expires: string; signature: string };
  /** A started OAuth sign-in: its state and flow cookie. */
  oauth: { state: string; cookie: string };
}

let idp: TestOidcProvider;
let server: TestServer;
let db: Db;
let client: RawClient;
let fixture: Fixture;
let routes: Route[];
let initial: StoredData;

let google: { issuer: string; clientId: string; clientSecret: string };
beforeAll(async () => {
  idp = await TestOidcProvider.listen();
  google = { issuer: idp.issuer, clientId: "fuzz", clientSecret: "fuzz-secret-0123456789" };
});
// Signs in with Google at the provider started above.
test.override("serverOptions", { scope: "file" }, () => ({
  // Bot accounts need a key to store their sessions with.
  env: { ...process.env, MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
  rateLimit: { perMinute: 0, perHour: 0 },
  // The watchdog ends silent bots: a change no request made.
  watchdog: { intervalMs: 3_600_000 },
  oauth: { providers: { google }, redirectUrl: undefined },
}));
test.beforeAll(async ({ server: fileServer, db: fileDb }) => {
  server = fileServer;
  db = fileDb;
  await idp.start([{ ...google, redirectUris: [`${server.url}/v1/auth/oauth/google/callback`] }]);
  client = new RawClient(server.url);
  fixture = await createFixture(server);
  await storeTranscriptAndSummary(fixture.done);
  routes = await listRoutes(server);
  await readOnceAsEachUser();
  initial = await snapshot();
});

afterAll(async () => {
  client?.close();
  await idp?.close();
});

/**
 * A finished transcript and summary of A's recording, for the read routes to find (stored as the
 * job worker stores them: the recording here is random bytes, which no engine could transcribe).
 */
function storeTranscriptAndSummary(botId: number): Promise<void> {
  const words = [{ text: "I", startMs: 100, endMs: 200, confidence: 0.9 }];
  return storeCompletedContent(db, botId, alicesReport({ participantId: "p-1", name: "Alice" }, words));
}

function snapshot(): Promise<StoredData> {
  return snapshotStoredData(db.kysely, server.dataDir, VOLATILE);
}

/**
 * Reads may create state once, on first use (a user's webhook signing secret): every read without
 * parameters, as each user, before the snapshot. A read that writes every time is still caught.
 */
async function readOnceAsEachUser(): Promise<void> {
  for (const route of routes) {
    if (route.method !== "GET" || route.group !== "user" || route.params.length) continue;
    for (const user of [fixture.a, fixture.b]) await server.api.get(route.template, { token: user.token });
  }
}

function ok<T extends { status: number; body: unknown }>(res: T, status = 200): T {
  if (res.status !== status) throw new Error(`fixture: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** Plays a runner's reports, each of which must be applied. */
async function report(runner: FakeRunner, events: Parameters<FakeRunner["send"]>[0][]): Promise<void> {
  for (const event of events) ok(await runner.send(event));
}

const ANN = { participantId: "p1", participantName: "Ann" };

/** A: bots in every kind of state, with events, logs, speakers, a recording, an artifact; keys. B: what A must not reach. */
async function createFixture(s: TestServer): Promise<Fixture> {
  const a = await registerUser(s.api, "Alice Fuzz");
  const b = await registerUser(s.api, "Bob Fuzz");
  const callbackTokens = new Map<number, string>();
  const createBot = async (user: TestUser, meetingInfo: object) =>
    ok(await s.api.post("/v1/bots", { token: user.token, body: { meetingInfo, ...QUIET } }), 201).body
      .id as number;
  const deploy = async (user: TestUser) => {
    const bot = await deployedBot(s, user, QUIET);
    callbackTokens.set(bot.botId, bot.config.callback.token);
    return bot;
  };

  const ready = await createBot(a, TEST_MEETING);
  const readyZoom = await createBot(a, { platform: "zoom", meetingId: "123456789", meetingPassword: "pw" });
  const deploying = await deploy(a);

  const inCall = await deploy(a);
  await report(inCall.runner, [
    { type: "status", data: { status: "JOINING_CALL" } },
    { type: "status", data: { status: "IN_CALL" } },
    { type: "participant.joined", data: ANN },
    { type: "speaker.started", data: ANN },
    { type: "log", data: { level: "warn", message: "slow network" } },
  ]);

  const done = await deploy(a);
  const recording = mp4Bytes(64 * 1024);
  await report(done.runner, [
    { type: "status", data: { status: "JOINING_CALL" } },
    { type: "status", data: { status: "IN_CALL" } },
    { type: "recording.started", data: { width: 1280, height: 720, frameRate: 25 } },
    { type: "participant.joined", data: ANN },
    { type: "speaker.started", data: ANN },
    { type: "speaker.stopped", data: ANN },
    { type: "recording.stopped", data: { durationMs: 2000, sizeBytes: recording.length } },
    { type: "status", data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" } },
  ]);
  ok(await done.runner.upload(recording, 2000), 201);
  ok(await done.runner.status("DONE"));

  const fatal = await deploy(a);
  const artifact = { rawBody: new Uint8Array(randomBytes(2048)), token: fatal.config.callback.token };
  const headers = { "content-type": "application/octet-stream" };
  ok(
    await s.api.put(`/v1/bot-callbacks/${fatal.botId}/artifacts/${ARTIFACT}`, { ...artifact, headers }),
    201,
  );
  await report(fatal.runner, [
    { type: "status", data: { status: "JOINING_CALL" } },
    {
      type: "status",
      data: { status: "FATAL", subCode: "JOIN_FAILED", message: "no", artifacts: [ARTIFACT] },
    },
  ]);

  const bReady = await createBot(b, TEST_MEETING);
  const bDeploying = await deploy(b);

  const createKey = async (user: TestUser, body: object) =>
    ok(await s.api.post("/v1/api-keys", { token: user.token, body }), 201).body;
  const aKey = await createKey(a, { name: "fuzz" });
  const aRevoked = await createKey(a, { name: "revoked" });
  ok(await s.api.delete(`/v1/api-keys/${aRevoked.id}`, { token: a.token }), 204);
  const aExpiring = await createKey(a, { name: "expiring", expiresAt: "2100-01-01T00:00:00Z" });
  const bKey = await createKey(b, { name: "bob" });

  const session = {
    cookies: [
      {
        name: "SID",
        value: "fuzz",
        domain: ".google.com",
        path: "/",
        expires: -1,
        httpOnly: true,
        secure: true,
        sameSite: "Lax",
      },
    ],
    origins: [],
  };
  const createAccount = async (user: TestUser, platform: string) =>
    ok(
      await s.api.post("/v1/bot-accounts", { token: user.token, body: { platform, name: "fuzz", session } }),
      201,
    ).body.id;
  const accounts = {
    a: [await createAccount(a, "google"), await createAccount(a, "zoom")],
    b: [await createAccount(b, "google")],
  };

  // Webhooks last: the fixture's own events must queue no deliveries. Their URLs would never be
  // reached (production mode, no DNS here); the fuzz requests only read or are refused.
  const createWebhook = async (user: TestUser) =>
    ok(
      await s.api.post("/v1/webhooks", {
        token: user.token,
        body: { name: "fuzz", url: "https://hooks.example.com/fuzz", events: ["*"] },
      }),
      201,
    ).body.id;
  const webhooks = { a: [await createWebhook(a)], b: [await createWebhook(b)] };

  const link = ok(await s.api.get(`/v1/recordings/${done.botId}/download`, { token: a.token })).body;
  const linkQuery = new URL(link.url as string).searchParams;
  // A live share link, so that reading it can succeed.
  ok(await s.api.post(`/v1/recordings/${done.botId}/share`, { token: a.token, body: {} }), 201);

  const start = await fetch(`${s.url}/v1/auth/oauth/google`, { redirect: "manual" });
  if (start.status !== 302) throw new Error(`fixture: OAuth start answered ${start.status}`);
  const state = new URL(start.headers.get("location") ?? "").searchParams.get("state") ?? "";
  const cookie = /meetbot_oauth=([^;]*)/.exec(start.headers.get("set-cookie") ?? "")?.[1] ?? "";

  return {
    a,
    b,
    bots: {
      a: [ready, readyZoom, deploying.botId, inCall.botId, done.botId, fatal.botId],
      b: [bReady, bDeploying.botId],
    },
    keys: { a: [aKey.id, aRevoked.id, aExpiring.id], b: [bKey.id] },
    webhooks,
    accounts,
    done: done.botId,
    fatal: fatal.botId,
    callbackTokens,
    userCredentials: await userCredentials(s, {
      a,
      b,
      aKey: aKey.key,
      aRevoked: aRevoked.key,
      bKey: bKey.key,
    }),
    runnerCredentials: runnerCredentials(a, aKey.key, callbackTokens),
    download: { expires: linkQuery.get("expires") ?? "", signature: linkQuery.get("signature") ?? "" },
    oauth: { state, cookie },
  };
}

/** Good credentials of both users first (A's two, then the rest), then every way of getting one wrong. */
async function userCredentials(
  s: TestServer,
  { a, b, aKey, aRevoked, bKey }: { a: TestUser; b: TestUser; aKey: string; aRevoked: string; bKey: string },
): Promise<Credential[]> {
  const sub = decodeJwt(a.token).sub as string;
  const exp = Math.floor(Date.now() / 1000) + 600;
  // Made with the server's own key: valid signatures around claims that are not.
  const key = deriveKey(await loadServerSecret(s.dataDir), "jwt");
  const signed = (claims: Record<string, unknown>, alg = "HS256", signingKey: Uint8Array = key) =>
    new SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).sign(signingKey);
  const [header, payload, signature] = a.token.split(".") as [string, string, string];
  const encode = (value: object) => base64url.encode(JSON.stringify(value));
  const altered = signature.slice(0, -2) + (signature.at(-2) === "A" ? "B" : "A") + signature.slice(-1);
  const bearer = (label: string, token: string, user?: Owner): Credential => ({
    label,
    header: `Bearer ${token}`,
    ...(user ? { user } : {}),
  });
  return [
    bearer("A's access token", a.token, "a"),
    bearer("A's API key", aKey, "a"),
    { label: "A's access token, scheme in lower case, spaces", header: `bearer   ${a.token}`, user: "a" },
    bearer("B's access token", b.token, "b"),
    bearer("B's API key", bKey, "b"),
    // Which of two headers counts is not ours to assume: both count as A's.
    { label: "two Authorization headers", header: [`Bearer ${a.token}`, "Bearer x"], user: "a" },
    {
      label: "two Authorization headers, the bad one first",
      header: ["Bearer x", `Bearer ${aKey}`],
      user: "a",
    },
    // Accepted today: jose does not require exp, and a numeric sub passes the text check. Only
    // the server's key makes them, so they count as A's (see the fuzz note).
    bearer("no exp", await signed({ sub, typ: "access" }), "a"),
    bearer("sub a number", await signed({ sub: Number(sub), typ: "access", exp }), "a"),
    { label: "no Authorization header" },
    { label: "empty", header: "" },
    { label: "scheme only", header: "Bearer" },
    { label: "scheme and a space", header: "Bearer " },
    { label: "two spaces then x", header: "Bearer  x" },
    { label: "two tokens", header: `Bearer ${a.token} ${a.token}` },
    { label: "tab after the scheme", header: `Bearer\t${a.token}` },
    { label: "no scheme", header: a.token },
    { label: "Basic scheme", header: `Basic ${Buffer.from(`${a.email}:${a.password}`).toString("base64")}` },
    { label: "Token scheme", header: `Token ${aKey}` },
    bearer("A's refresh token", a.refreshToken),
    bearer("alg none", `${encode({ alg: "none", typ: "JWT" })}.${payload}.`),
    bearer("alg none, two parts", `${encode({ alg: "none" })}.${payload}`),
    bearer(
      "payload swapped for B's",
      `${header}.${encode({ ...decodeJwt(a.token), sub: decodeJwt(b.token).sub })}.${signature}`,
    ),
    bearer("signature altered", `${header}.${payload}.${altered}`),
    bearer("signature removed", `${header}.${payload}.`),
    bearer("HS512 with the server's key", await signed({ sub, typ: "access", exp }, "HS512")),
    bearer("signed with another key", await signed({ sub, typ: "access", exp }, "HS256", randomBytes(32))),
    bearer("expired", await signed({ sub, typ: "access", iat: exp - 7200, exp: exp - 3600 })),
    bearer("no typ", await signed({ sub, exp })),
    bearer("sub 0", await signed({ sub: "0", typ: "access", exp })),
    bearer("sub past int4", await signed({ sub: "99999999999", typ: "access", exp })),
    bearer("sub 1e3", await signed({ sub: "1e3", typ: "access", exp })),
    bearer("sub of no user", await signed({ sub: "999999", typ: "access", exp })),
    ...["a.b.c", "..", "a.b.c.d.e"].map((token) => bearer("not a JWT", token)),
    bearer("key: not hex", `mbk_${"g".repeat(64)}`),
    bearer("key: one digit changed", aKey.slice(0, -1) + (aKey.endsWith("0") ? "1" : "0")),
    bearer("key: upper case", `mbk_${aKey.slice(4).toUpperCase()}`),
    bearer("key: one digit short", aKey.slice(0, -1)),
    bearer("key: one digit long", `${aKey}0`),
    bearer("key: prefix only", "mbk_"),
    bearer("key: revoked", aRevoked),
    bearer("key: zeros", `mbk_${"0".repeat(64)}`),
    bearer("latin-1 bytes", "\u00e9\u00ff\u00e9"),
    bearer("8,000 characters", "a".repeat(8000)),
    bearer("a key of 8,000 characters", `mbk_${"f".repeat(8000)}`),
    bearer("a JWT of 12,000 characters", `eyJ${"A".repeat(12_000)}.e30.x`),
    bearer("past the header size limit", "a".repeat(20_000)),
  ];
}

/** For the runner routes: each bot's own token, and what is not one. */
function runnerCredentials(a: TestUser, aKey: string, tokens: Map<number, string>): Credential[] {
  const [botId, token] = [...tokens][0] as [number, string];
  return [
    ...[...tokens].map(([id, t]) => ({
      label: `bot ${id}'s callback token`,
      header: `Bearer ${t}`,
      callbackBot: id,
    })),
    { label: "a callback token, scheme in lower case", header: `bearer ${token}`, callbackBot: botId },
    { label: "no Authorization header" },
    { label: "A's access token", header: `Bearer ${a.token}` },
    { label: "A's API key", header: `Bearer ${aKey}` },
    { label: "a callback token plus one character", header: `Bearer ${token}x` },
    { label: "a callback token cut short", header: `Bearer ${token.slice(0, -1)}` },
    { label: "scheme only", header: "Bearer" },
    { label: "8,000 characters", header: `Bearer ${"a".repeat(8000)}` },
  ];
}

// ---- Cases ------------------------------------------------------------------------------------

type Family = "path ids" | "query strings" | "bodies" | "every body member" | "credentials and headers";
const FAMILIES: readonly Family[] = [
  "path ids",
  "query strings",
  "bodies",
  "every body member",
  "credentials and headers",
];

interface Body {
  bytes?: Uint8Array;
  contentType?: string;
  /** Headers that go with the body (the upload's duration). */
  headers?: Record<string, string>;
  /** The server must refuse it, whatever else the request holds: not JSON, wrong type, breaks the schema. */
  refused: boolean;
  what: string;
}

interface Case {
  family: Family;
  route: Route;
  index: number;
  /** Under the sandbox prefix /api/v1 instead of /v1. */
  sandbox: boolean;
  params: Record<string, string>;
  /** A change to the whole path (trailing slash, dot segments, ...). */
  pathEdit?: [string, (path: string) => string];
  query: string;
  credential: Credential;
  headers: Record<string, string>;
  body?: Body;
  head: boolean;
}

const HOSTILE_NAMES = [
  ...[
    "Screenshot.png",
    ".hidden",
    "-x",
    "page.html",
    "..%2fjwt-secret",
    "..%2f..%2fmeetbot.sqlite",
    "%2e%2e",
  ],
  ...["x%00.png", "x%2Fy", "%E2%80%AE", "a%20b", "a".repeat(65)],
];
const HOSTILE_PROVIDERS = [
  ...["GOOGLE", "microsoft", "github", "__proto__", "constructor", "toString", "hasOwnProperty", ".."],
  ...["%2e%2e%2fgoogle", "google%00", "google%2F", "%F0%9F%92%A9", "g".repeat(3000)],
];
const HOSTILE_FILES = [
  "..%2f..%2fpackage.json",
  "%2e%2e/%2e%2e/package.json",
  "index.html",
  "%00",
  "x".repeat(300),
];
const OTHER_HEADERS: Record<string, string[]> = {
  accept: ["text/html", "application/xml", "*/*;q=0", "application/json;q=0", "x".repeat(4000)],
  cookie: [
    "meetbot_oauth=garbage",
    `meetbot_oauth=${"A".repeat(6000)}`,
    "meetbot_oauth=x; meetbot_oauth=y",
    "=;;=",
  ],
  range: [
    ...[
      "bytes=0-0",
      "bytes=-1",
      "bytes=0-",
      "bytes=999999999999-",
      "bytes=5-1",
      "bytes=0-1,2-3",
      "bytes=abc",
    ],
    ...[
      "items=0-1",
      "bytes=-0",
      "bytes=9007199254740993-",
      "bytes=0-9007199254740993",
      "bytes=--1",
      "bytes=1-2-3",
    ],
  ],
  "x-forwarded-for": ["1.1.1.1, evil", "::1", "x".repeat(2000)],
  "x-http-method-override": ["DELETE", "PUT"],
  origin: ["null", "http://evil.example"],
  "if-none-match": ["*", "garbage"],
  "if-modified-since": ["garbage", "Thu, 01 Jan 1970 00:00:00 GMT"],
  "x-recording-duration-ms": ["-1", "1e3", "99999999999"],
  host: ["evil.example", "a".repeat(300), "127.0.0.1:1"],
  "x-long": ["a".repeat(20_000)],
};

function generateCases(family: Family, route: Route, rng: Prng): Case[] {
  if (family === "every body member") return memberCases(route, rng);
  return Array.from({ length: CASES_PER_ROUTE }, (_, index) => {
    const c = goodCase(family, route, index, rng);
    if (family === "path ids") hostilePath(c, rng);
    if (family === "query strings") c.query = hostileQuery(c, rng);
    if (family === "bodies") c.body = hostileBody(route, rng);
    if (family === "credentials and headers") hostileHeaders(c, rng);
    makeHarmless(c, rng);
    return c;
  });
}

/** Each member of the body schema, nested ones too, set to each value it refuses; a good credential. */
function memberCases(route: Route, rng: Prng): Case[] {
  if (route.bodyKind !== "json" || !route.body) return [];
  return memberSweep(route.body, rng).map(({ json, how }, index) => {
    const c = goodCase("every body member", route, index, rng);
    c.body = jsonBody(json, "application/json", jsonRefused(route.body, json), how);
    makeHarmless(c, rng);
    return c;
  });
}

/** A request that reaches the handler: A's credential, A's resources, a body shaped like the schema. */
function goodCase(family: Family, route: Route, index: number, rng: Prng): Case {
  const c: Case = {
    family,
    route,
    index,
    sandbox: route.group !== "page" && rng.chance(0.15),
    params: {},
    query: "",
    credential: { label: "none" },
    headers: {},
    head: route.method === "GET" && rng.chance(0.1),
  };
  for (const param of route.params) c.params[param] = goodParam(route, paramKind(route, param), rng);
  if (route.group === "user") c.credential = rng.pick(fixture.userCredentials.slice(0, 2));
  if (route.group === "runner") {
    const botId = Number(c.params.id);
    const token = fixture.callbackTokens.get(botId) as string;
    c.credential = { label: `bot ${botId}'s callback token`, header: `Bearer ${token}`, callbackBot: botId };
  }
  if (route.template.endsWith("/file")) {
    c.query = `expires=${fixture.download.expires}&signature=${fixture.download.signature}`;
  }
  if (route.template.endsWith("/oauth/{provider}/callback")) {
    const { state, cookie } = fixture.oauth;
    c.query = `state=${encodeURIComponent(state)}&code=fuzz&iss=${encodeURIComponent(idp.issuer)}`;
    c.headers.cookie = `meetbot_oauth=${cookie}`;
  }
  if (route.method !== "GET") c.body = goodBody(route, rng);
  return c;
}

function goodParam(route: Route, kind: ParamKind, rng: Prng): string {
  switch (kind) {
    case "bot":
      if (route.template.includes("/artifacts/")) return String(fixture.fatal);
      if (route.template.includes("/recordings/") && rng.chance(0.7)) return String(fixture.done);
      if (route.group === "runner") return String(rng.pick([...fixture.callbackTokens.keys()]));
      return String(rng.pick(fixture.bots.a));
    case "key":
      return String(rng.pick(fixture.keys.a));
    case "webhook":
      return String(rng.pick(fixture.webhooks.a));
    case "account":
      return String(rng.pick(fixture.accounts.a));
    case "artifact":
      return rng.chance(0.8) ? ARTIFACT : "page.html";
    case "provider":
      return rng.chance(0.8) ? "google" : "microsoft";
    case "file":
      return "index.html";
    case "other":
      return String(rng.pick([...fixture.bots.a, ...fixture.keys.a, ...fixture.webhooks.a]));
  }
}

function goodBody(route: Route, rng: Prng): Body {
  if (route.bodyKind !== "json")
    return streamBody(route, route.bodyKind, "2000", false, "the route's media type");
  if (!route.body) return { refused: false, what: "no body" };
  const text = shapedJson(route.body, rng);
  return jsonBody(text, "application/json", jsonRefused(route.body, text), "shaped like the schema");
}

function jsonBody(json: string, contentType: string | undefined, refused: boolean, what: string): Body {
  return { bytes: Buffer.from(json, "utf8"), contentType, refused, what };
}

function streamBody(
  route: Route,
  contentType: string | undefined,
  duration: string | undefined,
  refused: boolean,
  what: string,
): Body {
  const headers: Record<string, string> = {};
  if (route.bodyKind === "video/mp4" && duration !== undefined) headers["x-recording-duration-ms"] = duration;
  return { bytes: new Uint8Array(randomBytes(512)), contentType, headers, refused, what };
}

function hostilePath(c: Case, rng: Prng): void {
  for (const param of c.route.params) {
    if (!rng.chance(0.7)) continue;
    const kind = paramKind(c.route, param);
    if (kind === "artifact") c.params[param] = rng.pick(HOSTILE_NAMES);
    else if (kind === "provider") c.params[param] = rng.pick(HOSTILE_PROVIDERS);
    else if (kind === "file") c.params[param] = rng.pick(HOSTILE_FILES);
    else c.params[param] = rng.pick([...HOSTILE_IDS, ...MISSING_IDS, ...foreignIds(kind)]);
  }
  if (c.route.params.length === 0 || rng.chance(0.25)) c.pathEdit = rng.pick(PATH_EDITS);
}

/** The other user's ids of a kind: A's credential must get a 404 for them. */
function foreignIds(kind: ParamKind): string[] {
  if (kind === "bot") return fixture.bots.b.map(String);
  if (kind === "key") return fixture.keys.b.map(String);
  if (kind === "webhook") return fixture.webhooks.b.map(String);
  if (kind === "account") return fixture.accounts.b.map(String);
  return [];
}

function hostileQuery(c: Case, rng: Prng): string {
  // Half the time on top of the route's good query (the signed link, the OAuth state).
  const parts = c.query && rng.chance(0.5) ? [c.query] : [];
  for (let i = 1 + rng.int(4); i > 0; i--) {
    const param = c.route.query.length && rng.chance(0.6) ? rng.pick(c.route.query) : undefined;
    const key = param?.name ?? rng.pick([...QUERY_KEYS, "expires", "signature", "state", "code", "iss"]);
    const value = rng.pick([...QUERY_VALUES, ...(param?.schema.enum ?? []).map(String)]);
    const forms = [
      `${key}=${value}`,
      `${key}[]=${value}`,
      `${key}=${value}&${key}=${rng.pick(QUERY_VALUES)}`,
      key,
      `${key}=`,
    ];
    parts.push(rng.pick(forms));
  }
  let query = parts.join("&");
  if (rng.chance(0.1)) query = `&&${query}&`;
  if (rng.chance(0.05)) query = `${query}&x=${"9".repeat(12_000)}`;
  return query;
}

function hostileBody(route: Route, rng: Prng): Body {
  if (route.bodyKind !== "json") return hostileStream(route, rng);
  const schema = route.body;
  const shaped = () => shapedJson(schema, rng);
  /** JSON text, sent as JSON: refused when it does not parse or breaks the schema. */
  const json = (text: string, what: string) =>
    jsonBody(text, "application/json", jsonRefused(schema, text), what);
  switch (rng.int(11)) {
    case 0: {
      const violating = schema && violatingJson(schema, rng);
      return violating
        ? json(violating.json, violating.how)
        : json(rng.pick(MALFORMED_JSON), "malformed JSON");
    }
    case 1:
      return json(rng.pick(MALFORMED_JSON), "malformed JSON");
    case 2: {
      const whole = objectJson([
        ["a", shaped()],
        ["b", shaped()],
      ]);
      return json(whole.slice(0, 1 + rng.int(whole.length - 1)), "truncated JSON");
    }
    case 3:
      // An empty JSON body is no body: refused where the route needs one (not where its body is
      // optional, nullable in the document).
      return {
        bytes: new Uint8Array(0),
        contentType: "application/json",
        refused: jsonRefused(schema, ""),
        what: "empty body",
      };
    case 4: {
      const contentType = rng.chance(0.15) ? undefined : rng.pick(WRONG_CONTENT_TYPES);
      const text = rng.chance(0.5) ? shaped() : "meetingInfo=google&name=x";
      return jsonBody(text, contentType, true, `content type ${contentType ?? "missing"}`);
    }
    case 5: {
      // Charset and spelling tricks: whether the parser takes them or not, the text decides.
      const text = (schema && violatingJson(schema, rng)?.json) || shaped();
      const contentType = rng.pick([...JSON_SPELLINGS, "application/json; charset=utf-16"]);
      const encoded = contentType.endsWith("utf-16") ? Buffer.from(text, "utf16le") : Buffer.from(text);
      const bom = !contentType.endsWith("utf-16") && rng.chance(0.3);
      const bytes = bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), encoded]) : encoded;
      return {
        bytes,
        contentType,
        refused: jsonRefused(schema, text),
        what: `content type "${contentType}"`,
      };
    }
    case 6: {
      // A string just under the 1 MiB body limit, in a shaped body.
      const base = shaped();
      const big = JSON.stringify("x".repeat(1_000_000));
      const rest = base.startsWith("{") && base !== "{}" ? `,${base.slice(1)}` : "}";
      return json(`{"padding":${big}${rest}`, "a 1 MB string");
    }
    case 7: {
      const text = objectJson([["a", JSON.stringify("x".repeat(1_100_000))]]);
      return jsonBody(text, "application/json", true, "over the 1 MiB limit");
    }
    case 8: {
      const deep = rng.pick([DEEP_ARRAY, DEEP_OBJECT, DEEP_PROTO]);
      // The JSON parser refuses a prototype key at any depth.
      if (deep === DEEP_PROTO)
        return jsonBody(deep, "application/json", true, "10,000 levels, __proto__ last");
      return json(deep, "10,000 levels of nesting");
    }
    case 9: {
      // Last, so that no duplicate key in the shaped part overrides it.
      const poison = rng.pick([
        '"__proto__":{"isAdmin":true}',
        '"constructor":{"prototype":{"isAdmin":true}}',
      ]);
      const base = shaped();
      const text = base.startsWith("{") && base !== "{}" ? `${base.slice(0, -1)},${poison}}` : `{${poison}}`;
      return jsonBody(text, "application/json", true, "prototype poisoning");
    }
    default:
      return json(shaped(), "shaped like the schema, hostile values");
  }
}

function hostileStream(route: Route, rng: Prng): Body {
  const media = route.bodyKind;
  const other = media === "video/mp4" ? "application/octet-stream" : "video/mp4";
  const wrong = [
    "application/json",
    "text/plain",
    `${media}x`,
    "video/webm",
    other,
    "multipart/form-data; boundary=x",
  ];
  const accepted = [media, media.toUpperCase(), `${media}; x=y`, `${media} ;x`];
  switch (rng.int(4)) {
    case 0:
      return streamBody(
        route,
        rng.chance(0.2) ? undefined : rng.pick(wrong),
        "2000",
        true,
        "wrong content type",
      );
    case 1: {
      if (media !== "video/mp4")
        return streamBody(route, rng.pick(wrong), undefined, true, "wrong content type");
      const duration = rng.pick([
        undefined,
        "",
        "-1",
        "1e3",
        "0x10",
        "2147483648",
        "99999999999",
        "12abc",
        "1.5",
      ]);
      return streamBody(route, media, duration, true, `duration ${JSON.stringify(duration ?? null)}`);
    }
    case 2:
      return {
        ...streamBody(route, rng.pick(accepted), "0", false, "empty upload"),
        bytes: new Uint8Array(0),
      };
    default:
      return streamBody(
        route,
        rng.pick(accepted),
        rng.pick(["0", "2147483647", "2000"]),
        false,
        "media type",
      );
  }
}

function hostileHeaders(c: Case, rng: Prng): void {
  c.credential = rng.pick(c.route.group === "runner" ? fixture.runnerCredentials : fixture.userCredentials);
  for (let i = rng.int(3); i > 0; i--) {
    const name = rng.pick(Object.keys(OTHER_HEADERS));
    c.headers[name] = rng.pick(OTHER_HEADERS[name] as string[]);
  }
}

// ---- Harmless by construction -------------------------------------------------------------------

/** The id a path segment ends up as on the server, or null when it is not a valid id. */
function parseId(segment: string): number | null {
  // The router ends the path at "?" or "#" and percent-decodes parameters.
  let value = segment.split(/[?#]/)[0] as string;
  try {
    value = decodeURIComponent(value);
  } catch {
    return null;
  }
  if (!/^[1-9][0-9]{0,9}$/.test(value)) return null;
  return Number(value) <= MAX_ID ? Number(value) : null;
}

function credentialAccepted(c: Case): boolean {
  if (c.route.group === "user") return c.credential.user !== undefined;
  if (c.route.group === "runner") return c.credential.callbackBot === parseId(c.params.id ?? "");
  return true;
}

/** False when a path parameter certainly names nothing the credential's owner has. */
function mayNameOwnResource(c: Case): boolean {
  return c.route.params.every((param) => {
    const value = c.params[param] ?? "";
    const kind = paramKind(c.route, param);
    if (kind === "artifact") {
      try {
        return ARTIFACT_NAME.test(decodeURIComponent(value));
      } catch {
        return false;
      }
    }
    if (kind === "provider" || kind === "file") return true;
    // An id of a kind this test does not know (a group added later): only a missing one is not the caller's.
    if (kind === "other") return !MISSING_IDS.includes(value);
    const id = parseId(value);
    if (id === null) return false;
    if (c.route.group !== "user") return true;
    const owned = {
      bot: fixture.bots,
      key: fixture.keys,
      webhook: fixture.webhooks,
      account: fixture.accounts,
    };
    return owned[kind][c.credential.user as Owner].includes(id);
  });
}

function mayTakeEffect(c: Case): boolean {
  return !c.route.readOnly && credentialAccepted(c) && mayNameOwnResource(c) && !c.body?.refused;
}

/**
 * A request to a route that writes, which could succeed, is changed until it cannot: a refused
 * credential, an id the caller does not own, or a refused body.
 */
function makeHarmless(c: Case, rng: Prng): void {
  const idParams = c.route.params.filter((p) =>
    ["bot", "key", "webhook", "account", "other"].includes(paramKind(c.route, p)),
  );
  const ways = [
    "body",
    ...(c.route.group === "public" ? [] : ["credential"]),
    ...(idParams.length ? ["id"] : []),
  ];
  for (let attempt = 0; mayTakeEffect(c); attempt++) {
    if (attempt > 50) throw new Error(`cannot make ${fuzzCaseLabel(SEED, c)} harmless`);
    const way = rng.pick(ways);
    if (way === "credential") {
      c.credential = rng.pick(
        c.route.group === "runner" ? fixture.runnerCredentials : fixture.userCredentials,
      );
    } else if (way === "id") {
      const param = rng.pick(idParams);
      c.params[param] = rng.pick([...MISSING_IDS, ...HOSTILE_IDS, ...foreignIds(paramKind(c.route, param))]);
    } else {
      c.body = hostileBody(c.route, rng);
    }
  }
}

// ---- Sending and judging ------------------------------------------------------------------------

function toRequest(c: Case): RawRequest {
  let path = c.sandbox ? `/api${c.route.template}` : c.route.template;
  for (const [name, value] of Object.entries(c.params)) path = path.replace(`{${name}}`, value);
  if (c.pathEdit) path = c.pathEdit[1](path);
  if (c.query) path += `?${c.query}`;
  const headers: Record<string, string | string[]> = { ...c.headers, ...c.body?.headers };
  if (c.credential.header !== undefined) headers.authorization = c.credential.header;
  if (c.body?.contentType !== undefined) headers["content-type"] = c.body.contentType;
  const method = c.head ? "HEAD" : c.route.method;
  return { method, path, headers, ...(c.body?.bytes ? { body: c.body.bytes } : {}) };
}

/** The rules a response breaks (none: empty). */
function judge(c: Case, res: RawResponse): string[] {
  const broken: string[] = [];
  if (res.status >= 500) broken.push("no 5xx");
  if (c.route.group === "page") return broken;
  if (res.status >= 400 && !c.head) {
    const problem = errorBodyProblem(res);
    if (problem) broken.push(`a spec error body (${problem})`);
  }
  if (res.status < 400) {
    if (!c.route.readOnly) broken.push("a route that writes refuses this request");
    if (c.route.method !== "GET" && c.body?.refused) broken.push("a body that breaks the schema is refused");
    if (c.route.group !== "public" && !credentialAccepted(c))
      broken.push("a refused credential never succeeds");
  }
  if (namesOtherUsersResource(c) && (res.status < 400 || res.status === 403)) {
    broken.push("another user's resource is a 404");
  }
  return broken;
}

function namesOtherUsersResource(c: Case): boolean {
  if (c.route.group !== "user" || !c.credential.user) return false;
  const other: Owner = c.credential.user === "a" ? "b" : "a";
  return c.route.params.some((param) => {
    const kind = paramKind(c.route, param);
    const id = parseId(c.params[param] ?? "");
    if (id === null) return false;
    return (
      (kind === "bot" && fixture.bots[other].includes(id)) ||
      (kind === "key" && fixture.keys[other].includes(id)) ||
      (kind === "webhook" && fixture.webhooks[other].includes(id)) ||
      (kind === "account" && fixture.accounts[other].includes(id))
    );
  });
}

// ---- The tests --------------------------------------------------------------------------------

describe(`fuzzing every route (FUZZ_SEED=${SEED})`, () => {
  const statuses = new Map<string, Set<number>>();

  test("finds the runners' and the OAuth routes in the document", () => {
    const documented = routes.filter((r) => r.documented).map(routeKey);
    for (const key of REQUIRED) expect(documented).toContain(key);
    expect(routes.filter((r) => r.group === "user").length).toBeGreaterThan(15);
  });

  for (const family of FAMILIES) {
    test(`${family}: no 5xx, spec error bodies, nothing stored changes`, { timeout: 60_000 }, async () => {
      const root = new Prng(SEED).fork(family);
      const cases = routes.flatMap((route) => generateCases(family, route, root.fork(routeKey(route))));
      const outcomes = await sendCases({ client, toRequest, judge }, cases, CONCURRENCY);
      recordStatuses(statuses, outcomes);

      const broken = brokenOutcomes(SEED, outcomes);
      expect.soft(broken.count, broken.message).toBe(0);
      const changes = diffStoredData(initial, await snapshot());
      expect(changes, `stored data changed (FUZZ_SEED=${SEED}, "${family}")`).toEqual([]);
    });
  }

  // The fuzzer found these: an answer with a body to a HEAD the HTTP parser refused broke clients.
  test("answers a HEAD the HTTP parser refuses without a body", async () => {
    const refused: RawRequest[] = [
      { method: "HEAD", path: "/v1/bots", headers: { "x-long": "a".repeat(20_000) } },
      { method: "HEAD", path: "/v1/bots/\u00ff", headers: {} },
    ];
    for (const request of refused) {
      const res = await client.send(request);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body.length).toBe(0);
    }
    const get = await client.send({ method: "GET", path: "/v1/bots/\u00ff", headers: {} });
    expect(errorBodyProblem(get)).toBeNull();
  });

  test("got past authentication on every route, and a success from every read of a known resource", ({
    skip,
  }) => {
    if (statuses.size === 0) skip(); // the families above did not run (a -t filter)
    const missed: string[] = [];
    for (const route of routes) {
      const seen = [...(statuses.get(routeKey(route)) ?? [])];
      const authenticated = route.group === "user" || route.group === "runner";
      if (authenticated && !TOKEN_NEVER_HELD.has(routeKey(route)) && !seen.some((s) => s !== 401)) {
        missed.push(`${routeKey(route)}: only 401`);
      }
      const known = route.params.every((p) => paramKind(route, p) !== "other");
      const reads = route.method === "GET" && route.group !== "page" && !NEVER_SUCCEED.has(routeKey(route));
      if (reads && known && !seen.some((s) => s < 400))
        missed.push(`${routeKey(route)}: never succeeded (${seen})`);
    }
    expect(missed).toEqual([]);
  });
});
