import { isDeepStrictEqual } from "node:util";
import { createJsonSchemaTransform } from "fastify-type-provider-zod";
import { describe, expect } from "vitest";
import { test } from "../helpers/fixtures.js";
import type { z } from "zod";
import { NOTES_API_RESPONSES } from "../../src/notes/responses.js";
import { BOT_API_RESPONSES, type ResponseMap } from "../../src/server/schemas/responses.js";
import { type TestServer } from "../helpers/server-harness.js";

/**
 * The response maps typed clients read answers through (src/server/schemas/responses.ts) against
 * the documents the servers serve, which are built from the routes' own schemas: each listed
 * operation exists and answers exactly its listed schema, and each operation that answers JSON is
 * listed.
 */
interface Operation {
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const toOpenApi = createJsonSchemaTransform({ skipList: [] });

/** The JSON Schema the document gives `schema` as an answer, made the way the server makes it. */
function documented(schema: z.ZodType, url: string, code: string): unknown {
  const input = {
    schema: { response: { [code]: schema } },
    url,
    route: { url, method: "GET" },
    openapiObject: { openapi: "3.0.3" },
  };
  const result = toOpenApi(input as unknown as Parameters<typeof toOpenApi>[0]) as {
    schema: { response: Record<string, unknown> };
  };
  return result.schema.response[code];
}

/** Each 2xx answer with a JSON body of the document, by "METHOD /path". */
function jsonAnswers(document: Document): Map<string, { code: string; schema: unknown }> {
  const answers = new Map<string, { code: string; schema: unknown }>();
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [code, response] of Object.entries(operation.responses)) {
        const json = response.content?.["application/json"];
        if (code.startsWith("2") && code !== "204" && json)
          answers.set(`${method.toUpperCase()} ${path}`, { code, schema: json.schema });
      }
    }
  }
  return answers;
}

let server: TestServer;
let botDocument: Document;
let notesDocument: Document;
test.override("serverOptions", { notes: { port: 0 } });
test.beforeAll(async ({ server: fileServer }) => {
  server = fileServer;
  botDocument = (await server.api.get("/openapi.json")).body as Document;
  notesDocument = (await fetch(`${server.notesUrl}/openapi.json`).then((r) => r.json())) as Document;
});

describe.each([
  ["the bot API", () => botDocument, BOT_API_RESPONSES as ResponseMap],
  ["the meeting-notes interface", () => notesDocument, NOTES_API_RESPONSES as ResponseMap],
])("the response map of %s", (_name, document, map) => {
  test("lists every operation that answers JSON, and nothing else", () => {
    expect(Object.keys(map).sort()).toEqual([...jsonAnswers(document()).keys()].sort());
  });

  test("gives each operation the schema its route answers with", () => {
    const answers = jsonAnswers(document());
    const differing = Object.entries(map).filter(([operation, schema]) => {
      const answer = answers.get(operation);
      if (!answer) return true;
      const url = operation.split(" ")[1] as string;
      return !isDeepStrictEqual(documented(schema, url, answer.code), answer.schema);
    });
    expect(differing.map(([operation]) => operation)).toEqual([]);
  });
});
