import type { NotesApiResponses } from "../../src/notes/responses.js";
import { afterAll, describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import type { Db } from "../../src/server/db/database.js";
import {
  brokenOutcomes,
  diffStoredData,
  errorBodyProblem,
  fuzzCaseLabel,
  fuzzSeed,
  HOSTILE_IDS,
  type JsonSchema,
  jsonRefused,
  MALFORMED_JSON,
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
import {
  Api,
  openServerDatabase,
  registerUser,
  type TestServer,
  type TestUser,
  mp4Bytes,
} from "../helpers/server-harness.js";
import { recordMeeting } from "../helpers/recorded-meeting.js";
import { alicesReport, storeCompletedContent } from "../helpers/stored-content.js";

/**
 * The fuzz test over the meeting-notes interface, its routes read from its own
 * /openapi.json (so routes added later, the notes webhooks among them, are fuzzed too). Hostile
 * path ids, paths, query strings, credentials, headers and bodies, from a seeded PRNG; whatever
 * comes in: no 5xx, every error is one of the spec's two bodies, every answer has the
 * X-RateLimit-* headers, nothing stored changes, another user's resource is a 404, and each read
 * of a known resource succeeded at least once. FUZZ_SEED=<seed> replays a run.
 */

const SEED = fuzzSeed();
const CASES_PER_ROUTE = 25;
const CONCURRENCY = 8;
const MISSING_MEETING = `mtg_${"0".repeat(24)}`;
const MISSING_IDS = ["999999", "2147483647"];
/** Change on requests by design: the request log, when an API key was last used. */
const VOLATILE = {
  tables: ["api_request_logs"],
  columns: { api_keys: ["last_used_at"] },
  files: /^meetbot\.sqlite/,
};
const RATE_LIMIT_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"];

// ---- Routes -----------------------------------------------------------------------------------

interface Route {
  method: string;
  template: string;
  params: string[];
  query: { name: string; schema: JsonSchema }[];
  body?: JsonSchema;
  readOnly: boolean;
}

interface OpenApiOperation {
  parameters?: { in: string; name: string; schema: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema: JsonSchema }> };
}

/** The kind of resource a path's `{id}` names: a meeting, a webhook, or one this test does not know. */
const idKind = (route: Route) =>
  route.template.startsWith("/v1/meetings/")
    ? "meeting"
    : route.template.startsWith("/v1/webhooks/")
      ? "webhook"
      : "other";

async function listRoutes(notes: Api<NotesApiResponses>): Promise<Route[]> {
  const doc = (await notes.get("/openapi.json")).body as {
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  return Object.entries(doc.paths).flatMap(([template, operations]) =>
    Object.entries(operations).map(([method, op]) => ({
      method: method.toUpperCase(),
      template,
      params: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string),
      query: (op.parameters ?? []).filter((p) => p.in === "query"),
      body: op.requestBody?.content?.["application/json"]?.schema,
      readOnly: method === "get" || method === "head",
    })),
  );
}

// ---- The server and its data ------------------------------------------------------------------

type Owner = "a" | "b";

interface Credential {
  label: string;
  header?: string | string[];
  /** The user the notes routes accept it as. */
  user?: Owner;
}

interface Fixture {
  users: Record<Owner, TestUser>;
  meetings: Record<Owner, string>;
  webhooks: Record<Owner, string>;
  credentials: Credential[];
}

let server: TestServer;
let notes: Api<NotesApiResponses>;
let db: Db;
let client: RawClient;
let fixture: Fixture;
let routes: Route[];
let initial: StoredData;

test.override("serverOptions", {
  // Enterprise is not throttled, so the fuzz is not; its answers still carry the headers.
  notes: { port: 0, defaultPlan: "enterprise" },
  rateLimit: { perMinute: 0, perHour: 0 },
  jobs: { worker: false },
  watchdog: { intervalMs: 3_600_000 },
});
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  notes = new Api<NotesApiResponses>(server.notesUrl as string);
  db = await openServerDatabase(server);
  client = new RawClient(server.notesUrl as string);
  fixture = await createFixture();
  routes = await listRoutes(notes);
  // Reads that create state once, on first use, do so before the snapshot.
  for (const route of routes.filter((r) => r.readOnly && r.params.length === 0))
    for (const user of Object.values(fixture.users)) await notes.get(route.template, { token: user.token });
  initial = await snapshotStoredData(db.kysely, server.dataDir, VOLATILE);
}, 60_000);

afterAll(async () => {
  client?.close();
  await db?.close();
});

function ok<T extends { status: number; body: unknown }>(res: T, status = 200): T {
  if (res.status !== status) throw new Error(`fixture: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** A bot of `user` that joined, heard one speaker, ended and uploaded: a completed meeting. */
async function completedMeeting(user: TestUser, title: string): Promise<{ botId: number; id: string }> {
  const botId = await recordMeeting(server, user, {
    title,
    body: { heartbeatInterval: 3_600_000 },
    participants: [
      { participantId: "p-1", participantName: "Alice Example", joinedMs: 100, spoke: [[200, 900]] },
    ],
    recording: mp4Bytes(16 * 1024),
  });
  const listed = ok(await notes.get("/v1/meetings", { token: user.token })).body.data as { id: string }[];
  const id = listed[0]?.id;
  if (!id) throw new Error("fixture: the meeting is not listed");
  return { botId, id };
}

async function createFixture(): Promise<Fixture> {
  const users = {
    a: await registerUser(server.api, "Alice Fuzz"),
    b: await registerUser(server.api, "Bob Fuzz"),
  };
  const a = await completedMeeting(users.a, "Planning");
  const b = await completedMeeting(users.b, "Retro");
  await storeCompletedContent(db, a.botId, alicesReport({ participantId: "p-1", name: "Alice Example" }, []));
  // Webhooks after the meetings: the fixture's own events queue no deliveries.
  const webhook = async (user: TestUser) =>
    String(
      ok(
        await notes.post("/v1/webhooks", {
          token: user.token,
          body: { url: "https://hooks.example.com/notes", events: ["meeting.completed"] },
        }),
        201,
      ).body.id,
    );
  const key = async (name: string) =>
    ok(await server.api.post("/v1/api-keys", { token: users.a.token, body: { name } }), 201).body;
  const aKey = await key("fuzz");
  const revoked = await key("revoked");
  ok(await server.api.delete(`/v1/api-keys/${revoked.id}`, { token: users.a.token }), 204);
  const bearer = (token: string) => `Bearer ${token}`;
  return {
    users,
    meetings: { a: a.id, b: b.id },
    webhooks: { a: await webhook(users.a), b: await webhook(users.b) },
    credentials: [
      { label: "A's access token", header: bearer(users.a.token), user: "a" },
      { label: "A's access token, lower-case scheme", header: `bearer ${users.a.token}`, user: "a" },
      { label: "A's API key", header: bearer(aKey.key), user: "a" },
      { label: "B's access token", header: bearer(users.b.token), user: "b" },
      { label: "none" },
      { label: "A's revoked API key", header: bearer(revoked.key) },
      { label: "A's API key, last digit changed", header: bearer(`${aKey.key.slice(0, -1)}x`) },
      { label: "A's token, signature cut", header: bearer(users.a.token.slice(0, -4)) },
      { label: "A's token as Basic", header: `Basic ${users.a.token}` },
      { label: "empty bearer", header: "Bearer " },
      { label: "garbage", header: bearer("'; DROP TABLE users; --") },
      // Node keeps the first of two Authorization headers.
      { label: "two Authorization headers", header: [bearer(users.a.token), "Bearer x"], user: "a" },
      { label: "two Authorization headers, the bad one first", header: ["Bearer x", bearer(aKey.key)] },
    ],
  };
}

// ---- Cases ------------------------------------------------------------------------------------

interface Body {
  bytes: Uint8Array;
  contentType?: string;
  /** Certainly refused by the route's schema (or not JSON at all). */
  refused: boolean;
}

interface Case {
  family: string;
  route: Route;
  index: number;
  credential: Credential;
  params: Record<string, string>;
  pathEdit?: [string, (path: string) => string];
  query?: string;
  headers: Record<string, string>;
  body?: Body;
  head?: boolean;
}

const FAMILIES = ["path ids", "paths", "query strings", "credentials and headers", "bodies"] as const;
type Family = (typeof FAMILIES)[number];

const OTHER_HEADERS: Record<string, string[]> = {
  accept: ["application/xml", "*/*", "text/html", ""],
  "accept-encoding": ["gzip, deflate, br", "identity;q=0", "x".repeat(5000)],
  "x-forwarded-for": ["127.0.0.1", "::1, 10.0.0.1", "not-an-ip"],
  "x-http-method-override": ["DELETE", "POST"],
  "content-type": WRONG_CONTENT_TYPES,
  "if-none-match": ['"x"', "*"],
};

/** The caller's own resource for an id parameter: what a request that means well names. */
function ownId(route: Route, user: Owner | undefined): string {
  const owner = user ?? "a";
  const kind = idKind(route);
  return kind === "meeting" ? fixture.meetings[owner] : kind === "webhook" ? fixture.webhooks[owner] : "1";
}

function hostileId(route: Route, rng: Prng): string {
  const meeting = fixture.meetings.a;
  const kind = idKind(route);
  const likeIds =
    kind === "meeting"
      ? [
          MISSING_MEETING,
          meeting.toUpperCase(),
          meeting.slice(0, -1),
          `${meeting}0`,
          meeting.replace("mtg_", "MTG_"),
          meeting.replace("mtg_", "bot_"),
          `${meeting}%00`,
          encodeURIComponent(`${meeting} `),
          fixture.meetings.b,
        ]
      : [
          ...MISSING_IDS,
          fixture.webhooks.a,
          fixture.webhooks.b,
          `${fixture.webhooks.a}.0`,
          `0${fixture.webhooks.a}`,
        ];
  return rng.pick([...HOSTILE_IDS, ...likeIds]);
}

function hostileQuery(route: Route, rng: Prng): string {
  const parts: string[] = [];
  for (let i = 1 + rng.int(3); i > 0; i--) {
    const documented = route.query.length > 0 && rng.chance(0.7);
    const key = documented ? rng.pick(route.query).name : rng.pick(QUERY_KEYS);
    parts.push(`${key}=${rng.pick(QUERY_VALUES)}`);
  }
  return parts.join("&");
}

function hostileBody(route: Route, rng: Prng): Body {
  const schema = route.body;
  const json = (text: string, contentType = "application/json"): Body => ({
    bytes: Buffer.from(text),
    contentType,
    refused: contentType !== "application/json" || jsonRefused(schema, text),
  });
  switch (rng.int(5)) {
    case 0:
      return json(rng.pick(MALFORMED_JSON));
    case 1: {
      const violating = schema && violatingJson(schema, rng);
      return json(violating ? violating.json : rng.pick(MALFORMED_JSON));
    }
    case 2:
      return json(shapedJson(schema, rng), rng.pick(WRONG_CONTENT_TYPES));
    case 3:
      return { bytes: new Uint8Array(0), contentType: "application/json", refused: !!schema };
    default:
      return json(shapedJson(schema, rng));
  }
}

function generateCase(family: Family, route: Route, index: number, rng: Prng): Case {
  const credential = fixture.credentials[0] as Credential;
  const c: Case = { family, route, index, credential, params: {}, headers: {} };
  for (const param of route.params) c.params[param] = ownId(route, credential.user);
  if (!route.readOnly && route.method !== "DELETE") c.body = hostileBody(route, rng);
  switch (family) {
    case "path ids":
      for (const param of route.params) if (rng.chance(0.8)) c.params[param] = hostileId(route, rng);
      break;
    case "paths":
      c.pathEdit = rng.pick(PATH_EDITS);
      break;
    case "query strings":
      c.query = hostileQuery(route, rng);
      break;
    case "credentials and headers":
      c.credential = rng.pick(fixture.credentials);
      for (const param of route.params) c.params[param] = ownId(route, c.credential.user);
      for (let i = rng.int(3); i > 0; i--) {
        const name = rng.pick(Object.keys(OTHER_HEADERS));
        c.headers[name] = rng.pick(OTHER_HEADERS[name] as string[]);
      }
      c.head = route.method === "GET" && rng.chance(0.2);
      break;
    case "bodies":
      c.body = hostileBody(route, rng);
      break;
  }
  makeHarmless(c, rng);
  return c;
}

/** False when the credential is refused or an id is not the caller's (a path edit may still match). */
function mayNameOwnResource(c: Case): boolean {
  const user = c.credential.user;
  return !!user && c.route.params.every((param) => names(c, param, ownId(c.route, user)));
}

/** Whether the path parameter, as the router decodes it, is `id`. */
function names(c: Case, param: string, id: string): boolean {
  try {
    return decodeURIComponent((c.params[param] ?? "").split(/[?#]/)[0] as string) === id;
  } catch {
    return false;
  }
}

/** A request to a route that writes is changed until it cannot succeed: nothing stored may change. */
function makeHarmless(c: Case, rng: Prng): void {
  for (let attempt = 0; !c.route.readOnly && mayNameOwnResource(c) && !c.body?.refused; attempt++) {
    if (attempt > 50) throw new Error(`cannot make ${fuzzCaseLabel(SEED, c)} harmless`);
    if (c.route.params.length && rng.chance(0.5)) {
      c.params[rng.pick(c.route.params)] = rng.pick([...MISSING_IDS, ...HOSTILE_IDS, fixture.webhooks.b]);
    } else if (c.route.body && rng.chance(0.5)) {
      c.body = hostileBody(c.route, rng);
    } else {
      c.credential = rng.pick(fixture.credentials);
    }
  }
}

// ---- Sending and judging ------------------------------------------------------------------------

function toRequest(c: Case): RawRequest {
  let path = c.route.template;
  for (const [name, value] of Object.entries(c.params)) path = path.replace(`{${name}}`, value);
  if (c.pathEdit) path = c.pathEdit[1](path);
  if (c.query) path += `?${c.query}`;
  const headers: Record<string, string | string[]> = { ...c.headers };
  if (c.credential.header !== undefined) headers.authorization = c.credential.header;
  if (c.body?.contentType !== undefined) headers["content-type"] = c.body.contentType;
  return {
    method: c.head ? "HEAD" : c.route.method,
    path,
    headers,
    ...(c.body ? { body: c.body.bytes } : {}),
  };
}

/** The other user's resource, named by this case with an accepted credential. */
function namesOtherUsersResource(c: Case): boolean {
  const user = c.credential.user;
  if (!user || c.pathEdit) return false;
  const other: Owner = user === "a" ? "b" : "a";
  return c.route.params.some((param) => names(c, param, ownId(c.route, other)));
}

function judge(c: Case, res: RawResponse): string[] {
  const broken: string[] = [];
  if (res.status >= 500) broken.push("no 5xx");
  if (res.status >= 400 && !c.head) {
    const problem = errorBodyProblem(res);
    if (problem) broken.push(`a spec error body (${problem})`);
  }
  const missing = RATE_LIMIT_HEADERS.filter((name) => res.headers[name] === undefined);
  if (missing.length) broken.push(`the X-RateLimit-* headers (missing ${missing.join(", ")})`);
  if (res.status < 400) {
    if (!c.route.readOnly) broken.push("a route that writes refuses this request");
    if (!c.credential.user) broken.push("a refused credential never succeeds");
  }
  // Never a success, never a 403 that says it exists; a request refused before routing (400) is fine.
  if (namesOtherUsersResource(c) && (res.status < 400 || res.status === 403)) {
    broken.push("another user's resource is a 404");
  }
  return broken;
}

// ---- The tests --------------------------------------------------------------------------------

describe(`fuzzing the notes interface (FUZZ_SEED=${SEED})`, () => {
  const statuses = new Map<string, Set<number>>();

  test("reads the meeting routes from the notes document", () => {
    const keys = routes.map(routeKey);
    for (const key of ["GET /v1/meetings", "GET /v1/meetings/{id}", "GET /v1/meetings/{id}/transcript"])
      expect(keys).toContain(key);
    expect(keys).toContain("GET /v1/meetings/{id}/summary");
  });

  for (const family of FAMILIES) {
    test(
      `${family}: no 5xx, spec error bodies, rate-limit headers, nothing stored changes`,
      { timeout: 60_000 },
      async () => {
        const root = new Prng(SEED).fork(`notes:${family}`);
        const cases = routes.flatMap((route) => {
          const rng = root.fork(routeKey(route));
          return Array.from({ length: CASES_PER_ROUTE }, (_, i) => generateCase(family, route, i, rng));
        });
        const outcomes = await sendCases({ client, toRequest, judge }, cases, CONCURRENCY);
        recordStatuses(statuses, outcomes);
        const broken = brokenOutcomes(SEED, outcomes);
        expect.soft(broken.count, broken.message).toBe(0);
        const changes = diffStoredData(
          initial,
          await snapshotStoredData(db.kysely, server.dataDir, VOLATILE),
        );
        expect(changes, `stored data changed (FUZZ_SEED=${SEED}, "${family}")`).toEqual([]);
      },
    );
  }

  test("got a success from every read of a known resource, and a 401 from every route", ({ skip }) => {
    if (statuses.size === 0) skip(); // the families above did not run (a -t filter)
    const missed: string[] = [];
    for (const route of routes) {
      const seen = [...(statuses.get(routeKey(route)) ?? [])];
      if (route.method === "GET" && !seen.some((s) => s < 400))
        missed.push(`${routeKey(route)}: never succeeded (${seen})`);
      if (!seen.includes(401)) missed.push(`${routeKey(route)}: never a 401 (${seen})`);
    }
    expect(missed).toEqual([]);
  });
});
