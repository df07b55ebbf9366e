import fastJsonStringify from "fast-json-stringify";
import type { FastifySerializerCompiler } from "fastify/types/schema.js";
import { z } from "zod";

/**
 * Writes a route's JSON responses with fast-json-stringify, compiled from the JSON Schema of its
 * zod response schema: the very schema /openapi.json documents. Only the documented fields are
 * written, as with zod's serializer; what it no longer does is validate, at run time, the object a
 * service built (TypeScript checks that at build time, and the tests read every answer). Zod's
 * parse-then-stringify was a fifth of an authenticated GET's CPU; this is a few microseconds.
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) => {
  let serialize = compiled.get(schema);
  if (!serialize) {
    const { $schema: _, ...jsonSchema } = z.toJSONSchema(schema, { target: "draft-7", io: "output" });
    serialize = fastJsonStringify(allowingExtraFields(jsonSchema) as Parameters<typeof fastJsonStringify>[0]);
    compiled.set(schema, serialize);
  }
  return serialize;
};

/**
 * Each schema's serializer, compiled once per process: compiling is most of an app's start (the
 * error answers' schemas recur on every route, and a process may build several apps), and a
 * compiled serializer is a pure function of its input.
 */
const compiled = new WeakMap<z.ZodType, (data: unknown) => string>();

/**
 * Zod's output schemas say `additionalProperties: false`. fast-json-stringify picks the branch of
 * a union (a nullable object, say) by validating against it, so an object carrying one field more
 * than documented would match no branch and fail the response; zod would have dropped the field.
 * Dropping the keyword restores that: extra fields are matched, then left out of the output.
 */
function allowingExtraFields(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(allowingExtraFields);
  if (typeof schema !== "object" || schema === null) return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "additionalProperties" && value === false) continue;
    copy[key] = allowingExtraFields(value);
  }
  return copy;
}
