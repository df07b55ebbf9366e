import fastifySwagger, { type FastifyDynamicSwaggerOptions } from "@fastify/swagger";
import type { FastifyInstance, RouteOptions } from "fastify";
import { createJsonSchemaTransform } from "fastify-type-provider-zod";
import { z } from "zod";
import { ASSEMBLYAI_WEBHOOK_HEADER } from "../../intelligence/providers.js";
import { UNLIMITED_HEADER_VALUE } from "../../notes/plans.js";
import { documentedInteger } from "../validation.js";

declare module "fastify" {
  interface FastifySchema {
    /**
     * The route answers with a file, not JSON. For the document only: a stream is never
     * serialized, so the answer has no zod schema to be documented from.
     */
    file?: FileAnswer;
    /** The route answers with a stream of text (server-sent events), documented the same way. */
    stream?: StreamAnswer;
    /**
     * The route takes a file as its body, streamed, never parsed: documented as a binary body of
     * these media types (a zod body schema would have it validated as JSON).
     */
    upload?: UploadBody;
  }
}

export interface UploadBody {
  /** Media types the body may have (without parameters). */
  types: readonly string[];
  description: string;
}

export interface StreamAnswer {
  /** Its media type, e.g. text/event-stream. */
  type: string;
  /** What the stream carries, for the document. */
  description: string;
}

export interface FileAnswer {
  /** Media types the file may have (without parameters). */
  types: readonly string[];
  /** Whether the route honours Range requests (206, 416), as sendRecording does. */
  ranges: boolean;
}

/** Prefixes the API is mounted under; the document lists the first, the others are aliases. */
export const API_PREFIX = "/v1";
export const SANDBOX_PREFIX = "/api/v1";

const zodToOpenApi = createJsonSchemaTransform({ skipList: [] });
type TransformInput = Parameters<typeof zodToOpenApi>[0];

const DESCRIPTION = [
  "The meetbot control plane. Every path also answers under the sandbox prefix `/api/v1`.",
  "",
  "Authenticate with `Authorization: Bearer <token>`: an access token (from register, login,",
  "refresh or OAuth sign-in) or an API key. Refresh tokens rotate: each works once, and one used",
  "again ends its session; a password change or POST /v1/auth/sessions/revoke ends every session.",
  "Runners authenticate their callbacks with their bot's own callback token, the same way.",
  "Errors are `{detail: string}`, or",
  "`{detail: [{loc, msg, type}]}` (422) when a request does not validate.",
  "Rate limits: every authenticated answer carries X-RateLimit-Limit, X-RateLimit-Remaining and",
  "X-RateLimit-Reset (60 requests a minute and 1000 an hour per credential unless the operator set",
  "others). As the spec plans them, they are enforced only where the operator turned that on",
  "(MEETBOT_RATE_LIMIT_ENFORCE); then a request over them is a 429 with Retry-After. Sign-in and",
  "share links are limited per client address always.",
].join("\n");

/** Spec §7's two error bodies, documented once for every operation as its 4XX answer. */
const ERROR_RESPONSE = {
  ...z.toJSONSchema(
    z.object({
      detail: z.union([
        z.string(),
        z.array(
          z.object({
            loc: z.array(z.union([z.string(), z.number().int()])),
            msg: z.string(),
            type: z.string(),
          }),
        ),
      ]),
    }),
    { target: "openapi-3.0" },
  ),
  description:
    "`{detail: string}`; on 422 (validation) `{detail: [{loc, msg, type}]}`. " +
    "429 (rate limited) also carries Retry-After.",
};

const BINARY = { type: "string", format: "binary" };
const header = (description: string, schema: object = { type: "string" }) => ({ ...schema, description });

/** The answers of a route that sends a file, in @fastify/swagger's response notation. */
function fileResponses({ types, ranges }: FileAnswer): Record<string, object> {
  const content = Object.fromEntries(types.map((type) => [type, { schema: BINARY }]));
  const length = header("Bytes in this answer", { type: "integer" });
  if (!ranges) return { 200: { description: "The file", content, headers: { "Content-Length": length } } };
  const common = {
    "Content-Length": length,
    "Accept-Ranges": header("`bytes`"),
    ETag: header("Changes when the file does; send it back as If-Range"),
  };
  return {
    200: { description: "The whole file", content, headers: common },
    206: {
      description: "One range of the file",
      content,
      headers: { ...common, "Content-Range": header("`bytes start-end/size`") },
    },
    416: {
      ...ERROR_RESPONSE,
      description: "The range starts past the end of the file",
      headers: { "Content-Range": header("`bytes */size`") },
    },
  };
}

/**
 * The X-RateLimit-* headers and the 429 of an interface whose every answer carries them, for a
 * document that says so (ApiDocument.rateLimitHeaders).
 */
const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": header(
    `Requests allowed in the window; ${UNLIMITED_HEADER_VALUE} on a plan with no limit`,
    { type: "integer" },
  ),
  "X-RateLimit-Remaining": header(
    `Requests left in the window; ${UNLIMITED_HEADER_VALUE}, never less, on a plan with no limit`,
    { type: "integer" },
  ),
  "X-RateLimit-Reset": header("When the window ends, in seconds since the Unix epoch", { type: "integer" }),
};
const RATE_LIMITED_RESPONSE = {
  ...ERROR_RESPONSE,
  description: "Over the rate limit",
  headers: {
    ...RATE_LIMIT_HEADERS,
    "Retry-After": header("Seconds until a request may succeed", { type: "integer" }),
  },
};

/** Adds the rate-limit headers to every success answer, and the 429 answer. */
function withRateLimitHeaders(responses: Record<string, object>): Record<string, object> {
  const out: Record<string, object> = {};
  for (const [status, response] of Object.entries(responses)) {
    const headers = (response as { headers?: object }).headers;
    out[status] = status.startsWith("2")
      ? { ...response, headers: { ...headers, ...RATE_LIMIT_HEADERS } }
      : response;
  }
  return { ...out, 429: RATE_LIMITED_RESPONSE };
}

/** The answer of a route that streams text. */
function streamResponses({ type, description }: StreamAnswer): Record<string, object> {
  return { 200: { description, content: { [type]: { schema: { type: "string" } } } } };
}

/** The bot API's document: its title, its description and the credentials its routes take. */
export const BOT_API_DOCUMENT: ApiDocument = {
  title: "meetbot API",
  description: DESCRIPTION,
  securitySchemes: {
    bearer: {
      type: "http",
      scheme: "bearer",
      description: "A JWT access token or an API key",
    },
    callbackToken: {
      type: "http",
      scheme: "bearer",
      description: "The bot's own callback token, handed to its runner at deploy",
    },
    providerWebhookSecret: {
      type: "apiKey",
      in: "header",
      name: ASSEMBLYAI_WEBHOOK_HEADER,
      description: "The secret a transcript job gave the provider for its completion webhook",
    },
  },
};

type SecuritySchemes = NonNullable<
  NonNullable<NonNullable<FastifyDynamicSwaggerOptions["openapi"]>["components"]>["securitySchemes"]
>;

/** What differs between the two interfaces' documents; the rest (errors, files, tags) is shared. */
export interface ApiDocument {
  title: string;
  description: string;
  securitySchemes: SecuritySchemes;
  /** Every answer carries the X-RateLimit-* headers: documented on each operation, with its 429. */
  rateLimitHeaders?: boolean;
}

/**
 * @fastify/swagger collects every route registered after it; the document is built from the very
 * zod schemas the routes validate and serialize with. Call before registering any route.
 */
export async function registerOpenApi(app: FastifyInstance, document: ApiDocument): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: document.title,
        version: "v1",
        description: document.description,
        license: { name: "MIT", url: "https://spdx.org/licenses/MIT.html" },
      },
      components: { securitySchemes: document.securitySchemes },
    },
    transform: (input: TransformInput) => {
      // The API only, once: /api/v1 routes are the same routes again, and pages (docs, the OAuth
      // landing page) are not part of it.
      if (!input.url.startsWith(`${API_PREFIX}/`)) return { schema: { hide: true }, url: input.url };
      const result = zodToOpenApi(input);
      const { file, stream, upload, ...schema }: Record<string, unknown> = { ...result.schema };
      documentIdParams(input.schema?.params, schema.params);
      if (upload) {
        const { types, description } = upload as UploadBody;
        Object.assign(schema, { body: { ...BINARY, description }, consumes: [...types] });
      }
      if (!schema.hide && !schema.tags) schema.tags = [tagOf(input.url)];
      const responses = {
        ...(file ? fileResponses(file as FileAnswer) : {}),
        ...(stream ? streamResponses(stream as StreamAnswer) : {}),
        ...(schema.response as Record<string, object>),
      };
      schema.response = {
        ...(document.rateLimitHeaders ? withRateLimitHeaders(responses) : responses),
        "4XX": ERROR_RESPONSE,
      };
      return { ...result, schema };
    },
    transformObject: (input) => {
      if (!("openapiObject" in input)) throw new Error("OpenAPI 2.0 is not supported");
      return optionalBodies(input.openapiObject);
    },
  });
}

/**
 * Path parameters that are integerPathParams (ids, a segment's seq) are documented as the integers
 * they are (zod can only describe their digits as a string pattern), keeping their description.
 */
function documentIdParams(params: unknown, documented: unknown): void {
  const properties = (documented as { properties?: Record<string, { description?: string }> } | undefined)
    ?.properties;
  if (!(params instanceof z.ZodObject) || !properties) return;
  for (const [name, param] of Object.entries(params.shape)) {
    const described = properties[name];
    const integer = documentedInteger(param);
    if (!integer || !described) continue;
    const { description } = described;
    properties[name] = { ...integer, ...(description === undefined ? {} : { description }) };
  }
}

/**
 * @fastify/swagger marks every request body required; a nullable one (transcribe, summarize,
 * share: no body takes the defaults) is not.
 */
function optionalBodies<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
    for (const operation of Object.values(operations)) {
      const body = (operation as { requestBody?: { required?: boolean; content?: object } }).requestBody;
      const schemas = Object.values(body?.content ?? {}) as { schema?: { nullable?: boolean } }[];
      if (body && schemas.length > 0 && schemas.every((media) => media.schema?.nullable === true))
        body.required = false;
    }
  }
  return document;
}

/** "/v1/bots/:id/logs" → "bots": one section per route group in the docs. */
function tagOf(url: string): string {
  return url.slice(API_PREFIX.length + 1).split("/")[0] || "other";
}

/**
 * The document as served: `servers` is where this server is reached from outside (its public base
 * URL), known only once it listens. Paths carry the `/v1` prefix, so the base URL is the server's.
 */
export function servedDocument<T extends object>(document: T, publicBaseUrl: string): T {
  return { ...document, servers: [{ url: publicBaseUrl, description: "This server" }] };
}

/**
 * An onRoute hook for the authenticated group: its routes say in the document that they need the
 * bearer credential, so that the document cannot disagree with the guard.
 */
export function documentBearerAuth(route: RouteOptions): void {
  route.schema = { ...route.schema, security: [{ bearer: [] }] };
}

/** The same for the runner callbacks: their credential is the bot's callback token. */
export function documentCallbackAuth(route: RouteOptions): void {
  route.schema = { ...route.schema, security: [{ callbackToken: [] }] };
}
