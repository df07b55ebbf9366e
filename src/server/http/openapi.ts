import fastifySwagger from "@fastify/swagger";
import type { FastifyInstance, RouteOptions } from "fastify";
import { createJsonSchemaTransform } from "fastify-type-provider-zod";
import { z } from "zod";

/** Prefixes the API is mounted under; the document lists the first, the others are aliases. */
export const API_PREFIX = "/v1";
export const SANDBOX_PREFIX = "/api/v1";

const zodToOpenApi = createJsonSchemaTransform({ skipList: [] });
type TransformInput = Parameters<typeof zodToOpenApi>[0];

const DESCRIPTION = [
  "The meetbot control plane. Every path also answers under the sandbox prefix `/api/v1`.",
  "",
  "Authenticate with `Authorization: Bearer <token>`: an access token (from register, login,",
  "refresh or OAuth sign-in) or an API key. Errors are `{detail: string}`, or",
  "`{detail: [{loc, msg, type}]}` (422) when a request does not validate.",
  "Rate limits: see the X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset headers;",
  "over the limit the answer is 429 with Retry-After.",
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

/**
 * @fastify/swagger collects every route registered after it; the document is built from the very
 * zod schemas the routes validate and serialize with. Call before registering any route.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      info: { title: "meetbot API", version: "v1", description: DESCRIPTION },
      components: {
        securitySchemes: {
          bearer: {
            type: "http",
            scheme: "bearer",
            description: "A JWT access token or an API key",
          },
        },
      },
    },
    transform: (input: TransformInput) => {
      // The API only, once: /api/v1 routes are the same routes again, and pages (docs, the OAuth
      // landing page) are not part of it.
      if (!input.url.startsWith(`${API_PREFIX}/`)) return { schema: { hide: true }, url: input.url };
      const result = zodToOpenApi(input);
      const schema: Record<string, unknown> = { ...result.schema };
      if (!schema.hide && !schema.tags) schema.tags = [tagOf(input.url)];
      schema.response = { ...(schema.response as object), "4XX": ERROR_RESPONSE };
      return { ...result, schema };
    },
  });
}

/** "/v1/bots/:id/logs" → "bots": one section per route group in the docs. */
function tagOf(url: string): string {
  return url.slice(API_PREFIX.length + 1).split("/")[0] || "other";
}

/**
 * An onRoute hook for the authenticated group: its routes say in the document that they need the
 * bearer credential, so that the document cannot disagree with the guard.
 */
export function documentBearerAuth(route: RouteOptions): void {
  route.schema = { ...route.schema, security: [{ bearer: [] }] };
}
