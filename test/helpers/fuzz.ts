import { createHash } from "node:crypto";
import { lstat, readdir, readFile } from "node:fs/promises";
import { Agent, type IncomingHttpHeaders, request as httpRequest } from "node:http";
import path from "node:path";
import { type Kysely, sql } from "kysely";
import type { Database } from "../../src/server/db/schema.js";

/**
 * Building blocks of the API fuzz test (test/integration/server-fuzz.test.ts): a seeded PRNG,
 * hostile values, JSON generated from the OpenAPI document's schemas (shaped like the schema, or
 * certain to break it), an HTTP client that sends paths and headers byte for byte, and snapshots
 * of a server's stored data.
 */

// ---- Seeds and the PRNG ---------------------------------------------------------------------------

/** Every run uses this seed unless env FUZZ_SEED names another: a failure replays exactly. */
export const DEFAULT_FUZZ_SEED = 20_240_917;

export function fuzzSeed(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.FUZZ_SEED;
  if (raw === undefined || raw === "") return DEFAULT_FUZZ_SEED;
  const seed = Number(raw);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new Error(`FUZZ_SEED must be an integer from 0 to 4294967295, got "${raw}"`);
  }
  return seed;
}

/** mulberry32: small and fast; plenty for picking test inputs. */
export class Prng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[this.int(items.length)] as T;
  }

  /**
   * An independent generator for one part of the run (a route, a family of inputs): adding a
   * route or a case elsewhere does not change the inputs of this one.
   */
  fork(label: string): Prng {
    return new Prng(createHash("sha256").update(`${this.seed}:${label}`).digest().readUInt32BE(0));
  }
}

// ---- Hostile values ------------------------------------------------------------------------------

const words = (text: string): string[] => text.trim().split(/\s+/);

/** Numbers as raw JSON text: JSON.stringify cannot write 1e309, -0 or integers past 2^53 exactly. */
export const RAW_NUMBERS = words(`
  0 -0 1 -1 0.5 1e309 -1e309 1e-400 5e-324 1.7976931348623157e308 2147483647 2147483648 -2147483649
  4294967296 9007199254740991 9007199254740993 9223372036854775807 9223372036854775808 1e21
  123456789012345678901234567890`);

/** Strings (JS values; JSON.stringify writes NUL and lone surrogates as \u0000, \ud800). */
export const HOSTILE_STRINGS = [
  ...["", " ", "\u0000", "a\u0000b", "\ud800", "x\udfffy", "\ud83d", "💩", "Ω≈ç√∫", "\u202eevil", "\ufeff"],
  ...["𝕏".repeat(200), "a".repeat(10_000), "'; DROP TABLE bots; --", '" OR 1=1 --', "\r\nX-Injected: 1"],
  ...words("../../../../etc/passwd ..\\..\\windows %00 %2e%2e%2f <script>alert(1)</script> ${7*7}{{7*7}}"),
  ...words("__proto__ constructor prototype toString null undefined NaN -1 1e309 user@example.com a@b"),
  ...words(
    "http://169.254.169.254/latest/meta-data/ http://[::1]:22/ javascript:alert(1) file:///etc/passwd",
  ),
  ...words(
    "http://127.0.0.1:9/meet/abc-defg-hij https://meet.google.com/abc-defg-hij https://zoom.us/j/1?pwd=x",
  ),
  ...words("2030-02-30T00:00:00Z 9999-12-31T23:59:59Z 0000-01-01T00:00:00Z +275760-09-13T00:00:00.000Z"),
  ...words("1970-01-01T00:00:00Z 2030-01-01T00:00:00+14:00"),
  `mbk_${"0".repeat(64)}`,
];

/** 10,000 levels of nesting: a parser or validator that recurses per level runs out of stack. */
export const DEEP_ARRAY = "[".repeat(10_000) + "]".repeat(10_000);
export const DEEP_OBJECT = '{"a":'.repeat(10_000) + "1" + "}".repeat(10_000);
/** Deep, with a prototype key at the bottom: a poisoning check that recurses would overflow. */
export const DEEP_PROTO = '{"a":'.repeat(10_000) + '{"__proto__":{"x":1}}' + "}".repeat(10_000);

/** Bodies that are not JSON, every one of them. */
export const MALFORMED_JSON = [
  ...words(`{ {"a": {"a":1,} [1,] {a:1} nul tru "unterminated {"a":1}{"b":2} NaN Infinity - 01 {}} ]`),
  ...words(`undefined {"a":"\\x41"} {"a":"\\ud800\\"}`),
  ...["{'a': 1}", '{"a":1} x', '{"a":"\u0000"}', "\u0000", "/* comment */ {}"],
];

/** Values of every JSON type, as raw JSON text. */
const VALUES_BY_TYPE: Record<JsonType, readonly string[]> = {
  string: [
    '""',
    '"x"',
    '"\\u0000"',
    '"\\ud800"',
    JSON.stringify("a".repeat(5000)),
    '"1"',
    '"true"',
    '"null"',
  ],
  number: RAW_NUMBERS,
  boolean: ["true", "false"],
  null: ["null"],
  array: ["[]", "[null]", '["x"]', "[{}]", "[1,2,3]", DEEP_ARRAY],
  object: ["{}", '{"x":1}', '{"constructor":1}', '{"toString":"x"}', DEEP_OBJECT],
};

/** Path segments where an integer id belongs: as written in the request target (already encoded). */
export const HOSTILE_IDS = [
  ...words("0 -1 00 01 1.0 +1 %2B1 1e3 0x10 2147483648 4294967297 9007199254740993 99999999999999999999"),
  ...words("%31 1%00 %00 .. ../ %2e%2e %2e%2e%2f ..%2f..%2fjwt-secret %2F NaN Infinity null true [] {}"),
  ...words("%F0%9F%92%A9 %EF%BC%91 1;x 1%3Bx 1%20 %201 % %zz %E0%A4%A __proto__ constructor"),
  "\u00ff",
  "9".repeat(400),
  "a".repeat(2000),
];

/** Changes to a whole request path: none of them names a route. */
export const PATH_EDITS: [string, (path: string) => string][] = [
  ["trailing slash", (p) => `${p}/`],
  ["double slash", (p) => p.replace("/v1/", "/v1//")],
  ["dot segment", (p) => p.replace("/v1/", "/v1/./")],
  ["dot-dot segment", (p) => p.replace("/v1/", "/v1/x/../")],
  ["encoded slash", (p) => p.replace("/v1/", "/v1%2F")],
  ["upper case", (p) => p.replace(/[a-z]/g, (c) => c.toUpperCase())],
  ["matrix parameter", (p) => `${p};jsessionid=1`],
  ["suffix", (p) => `${p}.json`],
  ["NUL suffix", (p) => `${p}%00`],
];

/** Query keys and values as written in the request target. */
export const QUERY_KEYS = [
  ...words("foo __proto__ __proto__[x] constructor constructor[prototype][x] prototype toString"),
  ...words("hasOwnProperty valueOf %00 PAGE page%20"),
  "",
  "a".repeat(1000),
];
export const QUERY_VALUES = [
  ...words("0 -1 1.5 1e3 0x10 NaN Infinity -Infinity 9007199254740993 2147483648 99999999999999999999999"),
  ...words("true null undefined %5B%5D %7B%7D %00 % %zz %E0%A4%A %C0%AF %F0%9F%92%A9 2030-02-30 2030-13-01"),
  ...words("0000-00-00 2030-01-01T25:00:00 %2B275760-09-13 1970-01-01 2030-01-01T00:00:00%2B14:00 2030-01"),
  ...words(
    "2030-01-01T00:00:00.1234567891Z 2030-00 DONE done FATAL,DONE GOOGLE __proto__ constructor %201 1%20",
  ),
  "",
  "\u00ff",
  "9".repeat(1000),
  "a".repeat(6000),
];

/** Content types that are not JSON, whatever a parser makes of them. */
export const WRONG_CONTENT_TYPES = [
  ...words("text/plain text/json application/x-www-form-urlencoded application/xml application/jsonx"),
  ...words("application/vnd.api+json application/json-patch+json */* json"),
  "multipart/form-data; boundary=x",
];
/** Spellings of JSON a parser may or may not take: the body alone decides whether it is refused. */
export const JSON_SPELLINGS = [
  ...words("application/json APPLICATION/JSON application/json;charset=UTF-8 application/json;"),
  ...[
    "application/json; charset=utf-8",
    'application/json; charset="utf-8"',
    "application/json; charset=latin1",
  ],
  ...["application/json; charset=utf-8; boundary=x", "application/json ; x=y", ""],
];

// ---- JSON from schemas --------------------------------------------------------------------------

export type JsonType = "string" | "number" | "boolean" | "null" | "array" | "object";
const JSON_TYPES: readonly JsonType[] = ["string", "number", "boolean", "null", "array", "object"];

/** The parts of an OpenAPI 3.0 schema object this fuzzer reads. */
export interface JsonSchema {
  type?: string | string[];
  nullable?: boolean;
  enum?: unknown[];
  const?: unknown;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean | number;
  exclusiveMaximum?: boolean | number;
}

function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

/** The JSON types a schema lets through; null when it does not say (anything may pass). */
export function allowedTypes(schema: JsonSchema | undefined): Set<JsonType> | null {
  if (!schema) return null;
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches) {
    const union = new Set<JsonType>();
    for (const branch of branches) {
      const types = allowedTypes(branch);
      if (!types) return null;
      for (const t of types) union.add(t);
    }
    return union;
  }
  let types: Set<JsonType> | null = null;
  if (schema.type !== undefined) {
    const names = Array.isArray(schema.type) ? schema.type : [schema.type];
    types = new Set(names.map((n) => (n === "integer" ? "number" : n) as JsonType));
  } else if (schema.enum) {
    types = new Set(schema.enum.map(jsonTypeOf));
  } else if ("const" in schema) {
    types = new Set([jsonTypeOf(schema.const)]);
  }
  if (types && schema.nullable) types.add("null");
  return types;
}

/**
 * True only when `schema` certainly refuses `value`, by what the schema itself states: types,
 * enums, bounds, required and unknown members. False when the value may pass. The server's zod
 * schemas, which the document is generated from, refuse at least this much.
 */
export function schemaRefuses(schema: JsonSchema | undefined, value: unknown): boolean {
  if (!schema) return false;
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches) return branches.every((branch) => schemaRefuses(branch, value));
  const type = jsonTypeOf(value);
  if (value === null && schema.nullable) return false;
  const allowed = allowedTypes(schema);
  if (allowed && !allowed.has(type)) return true;
  if (schema.enum && !schema.enum.includes(value)) return true;
  if ("const" in schema && value !== schema.const) return true;
  switch (type) {
    case "string": {
      const text = value as string;
      // UTF-16 units or code points, whichever the validator counts: only a sure miss counts.
      const shortest = Math.min(text.length, [...text].length);
      const longest = Math.max(text.length, [...text].length);
      return (
        (typeof schema.maxLength === "number" && shortest > schema.maxLength) ||
        (typeof schema.minLength === "number" && longest < schema.minLength)
      );
    }
    case "number": {
      const n = value as number;
      if (!Number.isFinite(n)) return true;
      if (schema.type === "integer" && !Number.isInteger(n)) return true;
      return outOfBounds(schema, n);
    }
    case "array": {
      const items = value as unknown[];
      if (typeof schema.maxItems === "number" && items.length > schema.maxItems) return true;
      if (typeof schema.minItems === "number" && items.length < schema.minItems) return true;
      return items.some((item) => schemaRefuses(schema.items, item));
    }
    case "object": {
      const record = value as Record<string, unknown>;
      if ((schema.required ?? []).some((name) => !Object.hasOwn(record, name))) return true;
      return Object.entries(record).some(([name, member]) => {
        const property = schema.properties?.[name];
        return property ? schemaRefuses(property, member) : schema.additionalProperties === false;
      });
    }
    default:
      return false;
  }
}

function outOfBounds(schema: JsonSchema, n: number): boolean {
  const { minimum, maximum, exclusiveMinimum: exMin, exclusiveMaximum: exMax } = schema;
  if (typeof exMin === "number" && n <= exMin) return true;
  if (typeof exMax === "number" && n >= exMax) return true;
  if (typeof minimum === "number" && (exMin === true ? n <= minimum : n < minimum)) return true;
  if (typeof maximum === "number" && (exMax === true ? n >= maximum : n > maximum)) return true;
  return false;
}

/** True when a JSON body is refused: not JSON at all, or JSON the schema refuses. */
export function jsonRefused(schema: JsonSchema | undefined, text: string): boolean {
  // The server takes an empty JSON body for no body, which reaches the schema as null: refused
  // unless the body is optional (nullable in the document).
  if (text === "") return schemaRefuses(schema, null);
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\ufeff/, ""));
  } catch {
    return true;
  }
  return schemaRefuses(schema, value);
}

/**
 * A value shaped like `schema` (the right JSON types, hostile contents), as raw JSON text. It may
 * or may not validate.
 */
export function shapedJson(schema: JsonSchema | undefined, rng: Prng, depth = 0): string {
  if (!schema || depth > 4) return rng.pick(VALUES_BY_TYPE[rng.pick(JSON_TYPES)]);
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches) return shapedJson(rng.pick(branches), rng, depth);
  if (schema.enum && rng.chance(0.8)) return JSON.stringify(rng.pick(schema.enum));
  const types = allowedTypes(schema);
  const type = types ? rng.pick([...types]) : rng.pick(JSON_TYPES);
  switch (type) {
    case "string":
      return JSON.stringify(rng.pick(HOSTILE_STRINGS));
    case "number":
      return rng.pick([...RAW_NUMBERS, ...boundaries(schema)]);
    case "boolean":
      return rng.pick(["true", "false"]);
    case "null":
      return "null";
    case "array": {
      const items = Array.from({ length: rng.int(4) }, () => shapedJson(schema.items, rng, depth + 1));
      return `[${items.join(",")}]`;
    }
    case "object":
      return objectJson(shapedMembers(schema, rng, depth));
  }
}

function boundaries(schema: JsonSchema): string[] {
  const out: string[] = [];
  if (typeof schema.minimum === "number") out.push(String(schema.minimum), String(schema.minimum - 1));
  if (typeof schema.maximum === "number") out.push(String(schema.maximum), String(schema.maximum + 1));
  return out;
}

/** The members of a shaped object: the required ones, some optional ones, now and then an extra. */
function shapedMembers(schema: JsonSchema, rng: Prng, depth: number): [string, string][] {
  const members: [string, string][] = [];
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (required.has(name) || rng.chance(0.5)) members.push([name, shapedJson(property, rng, depth + 1)]);
  }
  if (rng.chance(0.15)) members.push([rng.pick(["extra", "constructor", "toString", "id", "userId"]), "1"]);
  return members;
}

export function objectJson(members: readonly (readonly [string, string])[]): string {
  return `{${members.map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(",")}}`;
}

const PLAIN: Record<JsonType, string> = {
  string: '"x"',
  number: "1",
  boolean: "true",
  null: "null",
  array: "[]",
  object: "{}",
};

/** Values a schema refuses, as raw JSON: one of each JSON type it does not allow, then past its bounds. */
export function wrongValues(schema: JsonSchema): string[] {
  const allowed = allowedTypes(schema);
  const out = allowed ? JSON_TYPES.filter((t) => !allowed.has(t)).map((t) => PLAIN[t]) : [];
  if (typeof schema.maxLength === "number") out.push(JSON.stringify("x".repeat(schema.maxLength + 1)));
  if (typeof schema.minLength === "number" && schema.minLength > 0) {
    out.push(JSON.stringify("x".repeat(schema.minLength - 1)));
  }
  if (typeof schema.maximum === "number") out.push(String(schema.maximum + 1));
  if (typeof schema.minimum === "number") out.push(String(schema.minimum - 1));
  if (schema.type === "integer") out.push("0.5");
  if (allowed?.has("number")) out.push("1e309");
  const first = schema.enum?.find((v): v is string => typeof v === "string");
  if (first !== undefined)
    out.push(JSON.stringify(first === first.toUpperCase() ? first.toLowerCase() : first.toUpperCase()));
  if (typeof schema.maxItems === "number") {
    out.push(`[${Array.from({ length: schema.maxItems + 1 }, () => shapedPlain(schema.items)).join(",")}]`);
  }
  return out.filter((value) => schemaRefuses(schema, JSON.parse(value)));
}

function shapedPlain(schema: JsonSchema | undefined): string {
  const allowed = allowedTypes(schema);
  if (schema?.enum?.length) return JSON.stringify(schema.enum[0]);
  if (!allowed || allowed.has("string")) return '"x"';
  if (allowed.has("number")) return String(schema?.minimum ?? 1);
  return allowed.has("boolean") ? "true" : "null";
}

/** An object schema's alternatives: its oneOf/anyOf branches, or itself. */
function objectBranches(schema: JsonSchema): JsonSchema[] {
  return schema.oneOf ?? schema.anyOf ?? [schema];
}

/** A member of a request body, at any depth, and how to build a body around a value for it. */
export interface MemberSlot {
  path: (string | number)[];
  schema: JsonSchema;
  /** A body shaped like the schema with `value` (raw JSON) at `path`. */
  build(value: string, rng: Prng): string;
}

export function memberSlots(schema: JsonSchema, depth = 0): MemberSlot[] {
  const slots: MemberSlot[] = [];
  for (const branch of objectBranches(schema)) {
    if (!allowedTypes(branch)?.has("object") || !branch.properties) continue;
    for (const [name, property] of Object.entries(branch.properties)) {
      const place = (inner: string, rng: Prng) => {
        const members = shapedMembers(branch, rng, 1).filter(([n]) => n !== name);
        members.splice(rng.int(members.length + 1), 0, [name, inner]);
        return objectJson(members);
      };
      slots.push({ path: [name], schema: property, build: place });
      if (depth >= 2) continue;
      for (const slot of memberSlots(property, depth + 1)) {
        slots.push({
          path: [name, ...slot.path],
          schema: slot.schema,
          build: (v, rng) => place(slot.build(v, rng), rng),
        });
      }
      if (property.items) {
        const items = property.items;
        slots.push({ path: [name, 0], schema: items, build: (v, rng) => place(`[${v}]`, rng) });
        for (const slot of memberSlots(items, depth + 1)) {
          slots.push({
            path: [name, 0, ...slot.path],
            schema: slot.schema,
            build: (v, rng) => place(`[${slot.build(v, rng)}]`, rng),
          });
        }
      }
    }
  }
  return slots;
}

/**
 * JSON that `schema` certainly refuses (see schemaRefuses), with a note of how: a wrong root, a
 * member of the wrong type or past its bounds, a required member missing, an unknown member in a
 * strict object. Null when the schema says too little for any of these.
 */
export function violatingJson(schema: JsonSchema, rng: Prng): { json: string; how: string } | null {
  const slots = memberSlots(schema);
  const attempts: (() => { json: string; how: string } | null)[] = [
    () => {
      const values = wrongValues(schema).concat(hostileOfOtherTypes(schema));
      return values.length ? { json: rng.pick(values), how: "wrong value at the root" } : null;
    },
    () => {
      if (!slots.length) return null;
      const slot = rng.pick(slots);
      const values = wrongValues(slot.schema).concat(hostileOfOtherTypes(slot.schema));
      if (!values.length) return null;
      return { json: slot.build(rng.pick(values), rng), how: `${slot.path.join(".")} out of its schema` };
    },
    () => {
      const branch = rng.pick(objectBranches(schema));
      const required = branch.required ?? [];
      if (!required.length) return null;
      const name = rng.pick(required);
      return {
        json: objectJson(shapedMembers(branch, rng, 1).filter(([n]) => n !== name)),
        how: `required member ${name} missing`,
      };
    },
    () => {
      const branch = rng.pick(objectBranches(schema));
      if (branch.additionalProperties !== false) return null;
      const members = shapedMembers(branch, rng, 1);
      members.splice(rng.int(members.length + 1), 0, ["isAdmin", rng.pick(["1", "true", '"x"', "{}"])]);
      return { json: objectJson(members), how: "an unknown member in a strict object" };
    },
  ];
  for (let i = 0; i < 30; i++) {
    const candidate = rng.pick(attempts)();
    if (candidate && jsonRefused(schema, candidate.json)) return candidate;
  }
  return null;
}

/** The hostile corpus's values of the JSON types `schema` does not allow. */
function hostileOfOtherTypes(schema: JsonSchema): string[] {
  const allowed = allowedTypes(schema);
  return allowed ? JSON_TYPES.filter((t) => !allowed.has(t)).flatMap((t) => VALUES_BY_TYPE[t]) : [];
}

/**
 * For a body schema: every member (nested ones too), each set in turn to each value it refuses
 * (wrongValues), the rest of the body shaped like the schema; only bodies the schema certainly
 * refuses as a whole. The "wrong type for every field" sweep.
 */
export function memberSweep(schema: JsonSchema, rng: Prng): { json: string; how: string }[] {
  const bodies = wrongValues(schema).map((json) => ({ json, how: `root ${json}` }));
  for (const slot of memberSlots(schema)) {
    for (const value of wrongValues(slot.schema)) {
      bodies.push({ json: slot.build(value, rng), how: `${slot.path.join(".")} = ${value.slice(0, 40)}` });
    }
  }
  return bodies.filter((body) => jsonRefused(schema, body.json));
}

// ---- HTTP, byte for byte ------------------------------------------------------------------------

export interface RawRequest {
  method: string;
  /** Sent as is: no normalisation of dot segments or percent-encoding (fetch would do both). */
  path: string;
  headers: Record<string, string | string[]>;
  body?: Uint8Array;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** node:http with keep-alive: it writes the request target and header values exactly as given. */
export class RawClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 16 });
  private readonly host: string;
  private readonly port: number;

  constructor(baseUrl: string) {
    const url = new URL(baseUrl);
    this.host = url.hostname;
    this.port = Number(url.port);
  }

  send(req: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const headers = { ...req.headers };
      if (req.body !== undefined) headers["content-length"] = String(req.body.byteLength);
      const outgoing = httpRequest(
        { host: this.host, port: this.port, method: req.method, path: req.path, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on("error", reject);
        },
      );
      outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      outgoing.on("error", reject);
      outgoing.end(req.body === undefined ? undefined : Buffer.from(req.body));
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * Why `res` is not one of spec §7's two error bodies — `{detail: string}` or
 * `{detail: [{loc, msg, type}, ...]}`, as JSON — or null when it is.
 */
export function errorBodyProblem(res: RawResponse): string | null {
  if (!/^application\/json\b/i.test(res.headers["content-type"] ?? "")) {
    return `content-type is ${JSON.stringify(res.headers["content-type"] ?? null)}, not JSON`;
  }
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString("utf8"));
  } catch {
    return "body is not JSON";
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "body is not an object";
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== "detail")
    return `body has members ${JSON.stringify(keys)}, not just detail`;
  const detail = (body as { detail: unknown }).detail;
  if (typeof detail === "string") return detail ? null : "detail is an empty string";
  if (!Array.isArray(detail) || detail.length === 0)
    return "detail is neither a string nor a non-empty array";
  for (const issue of detail) {
    const ok =
      typeof issue === "object" &&
      issue !== null &&
      Object.keys(issue).sort().join() === "loc,msg,type" &&
      Array.isArray(issue.loc) &&
      issue.loc.every((p: unknown) => typeof p === "string" || typeof p === "number") &&
      typeof issue.msg === "string" &&
      typeof issue.type === "string";
    if (!ok) return `validation issue ${JSON.stringify(issue).slice(0, 200)} is not {loc, msg, type}`;
  }
  return null;
}

// ---- Snapshots of stored data -------------------------------------------------------------------

export interface StoredData {
  /** Table name → its rows as canonical JSON, sorted. */
  tables: Map<string, string[]>;
  /** Path relative to the data dir → "dir" or the sha256 of the file. */
  files: Map<string, string>;
}

export interface SnapshotExclusions {
  /** Tables that change on every request (e.g. a request log). */
  tables: readonly string[];
  /** Per table, columns that change on reads (e.g. a last-used time). */
  columns: Readonly<Record<string, readonly string[]>>;
  /** Files in the data dir that are the database itself (compared as rows instead). */
  files: RegExp;
}

/**
 * Every row of every table (found by introspection, so new tables are included) and every file
 * under `dataDir`. Works on SQLite and PostgreSQL alike.
 */
export async function snapshotStoredData(
  db: Kysely<Database>,
  dataDir: string,
  exclude: SnapshotExclusions,
): Promise<StoredData> {
  const tables = new Map<string, string[]>();
  for (const table of await db.introspection.getTables()) {
    if (exclude.tables.includes(table.name)) continue;
    const skip = new Set(exclude.columns[table.name] ?? []);
    // A table found at run time (one the schema type may not know yet): read by its name.
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table.name)}`.execute(db);
    const canonical = rows.map((row) =>
      JSON.stringify(
        Object.fromEntries(
          Object.keys(row)
            .filter((k) => !skip.has(k))
            .sort()
            .map((k) => [k, row[k]]),
        ),
      ),
    );
    tables.set(table.name, canonical.sort());
  }
  const files = new Map<string, string>();
  await walk(dataDir, "", files, exclude.files);
  return { tables, files };
}

async function walk(root: string, relative: string, out: Map<string, string>, skip: RegExp): Promise<void> {
  for (const name of (await readdir(path.join(root, relative))).sort()) {
    const rel = path.join(relative, name);
    if (skip.test(rel)) continue;
    const info = await lstat(path.join(root, rel));
    if (info.isDirectory()) {
      out.set(rel, "dir");
      await walk(root, rel, out, skip);
    } else {
      out.set(
        rel,
        createHash("sha256")
          .update(await readFile(path.join(root, rel)))
          .digest("hex"),
      );
    }
  }
}

/** What differs between two snapshots, one line per row or file; empty when nothing does. */
export function diffStoredData(before: StoredData, after: StoredData): string[] {
  const lines: string[] = [];
  for (const name of new Set([...before.tables.keys(), ...after.tables.keys()])) {
    const was = before.tables.get(name) ?? [];
    const is = after.tables.get(name) ?? [];
    const wasSet = new Set(was);
    const isSet = new Set(is);
    for (const row of was) if (!isSet.has(row)) lines.push(`table ${name}: row gone or changed: ${row}`);
    for (const row of is) if (!wasSet.has(row)) lines.push(`table ${name}: row new or changed: ${row}`);
  }
  for (const file of new Set([...before.files.keys(), ...after.files.keys()])) {
    const was = before.files.get(file);
    const is = after.files.get(file);
    if (was !== is)
      lines.push(`file ${file}: ${was === undefined ? "created" : is === undefined ? "removed" : "changed"}`);
  }
  return lines;
}

// ---- Sending cases and reporting what broke -----------------------------------------------------

/** A route as the fuzzers name it. */
export const routeKey = (route: { method: string; template: string }) => `${route.method} ${route.template}`;

/** What a fuzz case tells about itself when it fails: where it came from and how it was made. */
export interface FuzzCase {
  family: string;
  index: number;
  route: { method: string; template: string };
  credential: { label: string };
  pathEdit?: [string, (path: string) => string];
  /** `what`: how the body was made, when the fuzzer says. */
  body?: { refused: boolean; what?: string };
}

/** One case sent: the request byte for byte, the status and start of the answer, the rules it broke. */
export interface FuzzOutcome<C extends FuzzCase> {
  c: C;
  request: RawRequest;
  status: number;
  broken: string[];
  answer: string;
}

/** How a fuzz test turns its cases into requests and judges the answers (the rules are the test's). */
export interface FuzzTarget<C extends FuzzCase> {
  client: RawClient;
  toRequest: (c: C) => RawRequest;
  /** The rules the answer breaks (none: empty). */
  judge: (c: C, res: RawResponse) => string[];
}

/** The line that names a case, with the seed that replays it. */
export const fuzzCaseLabel = (seed: number, c: FuzzCase) =>
  `FUZZ_SEED=${seed}, "${c.family}", ${routeKey(c.route)}, case ${c.index}`;

async function sendCase<C extends FuzzCase>(target: FuzzTarget<C>, c: C): Promise<FuzzOutcome<C>> {
  const request = target.toRequest(c);
  try {
    const res = await target.client.send(request);
    return {
      c,
      request,
      status: res.status,
      broken: target.judge(c, res),
      answer: res.body.toString("utf8", 0, 300),
    };
  } catch (err) {
    return { c, request, status: 0, broken: [`an answer (${(err as Error).message})`], answer: "" };
  }
}

/** Sends every case, `concurrency` at a time; the outcomes in the order of the cases. */
export async function sendCases<C extends FuzzCase>(
  target: FuzzTarget<C>,
  cases: C[],
  concurrency: number,
): Promise<FuzzOutcome<C>[]> {
  const outcomes: FuzzOutcome<C>[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cases.length; i = next++) outcomes[i] = await sendCase(target, cases[i] as C);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return outcomes;
}

/** Adds each outcome's status to those seen on its route. */
export function recordStatuses(statuses: Map<string, Set<number>>, outcomes: FuzzOutcome<FuzzCase>[]): void {
  for (const o of outcomes) {
    const key = routeKey(o.c.route);
    statuses.set(key, (statuses.get(key) ?? new Set()).add(o.status));
  }
}

const excerpt = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length})` : text;

/** A failed case: the rules broken, the request as sent (to reproduce it by hand), the answer. */
function describeOutcome(seed: number, o: FuzzOutcome<FuzzCase>): string {
  const body = o.request.body && Buffer.from(o.request.body).toString("utf8");
  const bodyName = o.c.body?.what ? `body, ${o.c.body.what}` : "body";
  const notes = [`credential: ${o.c.credential.label}`, o.c.pathEdit && `path: ${o.c.pathEdit[0]}`];
  return [
    `${fuzzCaseLabel(seed, o.c)}: expected ${o.broken.join("; ")}`,
    `  ${o.request.method} ${excerpt(o.request.path, 200)}`,
    ...Object.entries(o.request.headers).map(
      ([name, value]) => `  ${name}: ${excerpt(JSON.stringify(value), 120)}`,
    ),
    ...(body === undefined ? [] : [`  ${bodyName}: ${excerpt(JSON.stringify(body), 200)}`]),
    `  (${notes.filter(Boolean).join("; ")})`,
    `  → ${o.status} ${excerpt(o.answer, 200)}`,
  ].join("\n");
}

/** The outcomes that broke a rule, and a message describing the first 15 of them in full. */
export function brokenOutcomes(
  seed: number,
  outcomes: FuzzOutcome<FuzzCase>[],
): { count: number; message: string } {
  const failed = outcomes.filter((o) => o.broken.length > 0);
  const shown = failed
    .slice(0, 15)
    .map((o) => describeOutcome(seed, o))
    .join("\n\n");
  return { count: failed.length, message: `${failed.length} of ${outcomes.length} requests:\n\n${shown}\n` };
}
