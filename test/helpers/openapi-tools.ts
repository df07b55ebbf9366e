import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { z } from "zod";

/**
 * What client generators see in an OpenAPI document, for any of our documents: Redocly's
 * recommended rules, and whether a TypeScript client generated from it compiles.
 */

export interface LintProblem {
  rule: string;
  severity: string;
  message: string;
  /** JSON pointer of the offending node, e.g. "#/paths/~1v1~1bots/get/operationId". */
  where: string;
}

/** Redocly's `recommended` ruleset over the document, as the Redocly CLI would run it. */
export async function lintOpenApi(document: object): Promise<LintProblem[]> {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({
    source: JSON.stringify(document),
    // Only names the document in messages: nothing is read from it.
    absoluteRef: "openapi.json",
    config,
  });
  return problems.map((p) => ({
    rule: p.ruleId,
    severity: p.severity,
    message: p.message,
    where: p.location[0]?.pointer ?? "",
  }));
}

/** "error" problems, one line each, so that a failing test shows all of them. */
export const errorsOf = (problems: LintProblem[]) =>
  problems.filter((p) => p.severity === "error").map((p) => `${p.rule} at ${p.where}: ${p.message}`);

/**
 * Generates `paths`/`operations` types with openapi-typescript, writes them next to `usage` (a
 * module that imports them from "./api.js") and typechecks both with the TypeScript compiler, in
 * strict mode. Returns the compiler's diagnostics, formatted; none means the client compiles.
 */
export async function compileGeneratedClient(document: object, usage: string): Promise<string[]> {
  // openapi-typescript takes a parsed document as is; a copy, since it may annotate what it walks.
  const ast = await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0]);
  const dir = await mkdtemp(path.join(tmpdir(), "meetbot-openapi-client-"));
  try {
    const files = [path.join(dir, "api.ts"), path.join(dir, "usage.ts")];
    await writeFile(files[0] as string, astToString(ast));
    await writeFile(files[1] as string, usage);
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      types: [],
    });
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A JSON schema in the document, as far as the tests read one; its other keywords are kept. */
export const JsonSchema = z.looseObject({
  type: z.string().optional(),
  format: z.string().optional(),
  required: z.array(z.string()).optional(),
  nullable: z.boolean().optional(),
  enum: z.array(z.unknown()).optional(),
  get properties() {
    return z.record(z.string(), JsonSchema).optional();
  },
});
export type JsonSchema = z.infer<typeof JsonSchema>;

const Content = z.record(z.string(), z.looseObject({ schema: JsonSchema.optional() }));

/** An operation of the document, as far as the tests read one. */
export const OpenApiOperation = z.looseObject({
  operationId: z.string().optional(),
  summary: z.string().optional(),
  security: z.array(z.record(z.string(), z.array(z.string()))).optional(),
  parameters: z
    .array(z.looseObject({ name: z.string(), in: z.string(), schema: JsonSchema.optional() }))
    .optional(),
  requestBody: z.looseObject({ required: z.boolean().optional(), content: Content }).optional(),
  responses: z.record(
    z.string(),
    z.looseObject({ content: Content.optional(), headers: z.record(z.string(), z.unknown()).optional() }),
  ),
});
export type OpenApiOperation = z.infer<typeof OpenApiOperation>;

/**
 * A served OpenAPI document, parsed (unknown keys kept, so that it still equals what was served):
 * a test reading a field the document lacks fails here, not with "undefined is not an object".
 */
export const OpenApiDocument = z.looseObject({
  paths: z.record(z.string(), z.record(z.string(), OpenApiOperation)),
  components: z.looseObject({ securitySchemes: z.record(z.string(), z.unknown()).optional() }).optional(),
  servers: z.array(z.looseObject({ url: z.string() })).optional(),
});
export type OpenApiDocument = z.infer<typeof OpenApiDocument>;

interface PathParameter {
  in: string;
  name: string;
  schema?: { type?: string };
}
interface DocumentedOperation {
  parameters?: PathParameter[];
  security?: Record<string, string[]>[];
}

/** Which credential and which value of `id` the server's routes of a security scheme need. */
export interface Credentials {
  /** The user's bearer token. */
  bearer?: string;
  /** A bot's id and its callback token, for the runner callbacks. */
  callback?: { botId: number; token: string };
  /** Headers a route checks before its parameters, by "METHOD /template" (an upload's media type). */
  headers?: Record<string, Record<string, string>>;
}

/**
 * Each documented path parameter checked against what its route validates: the parameter is sent
 * as `x` (the others as valid as can be) with the operation's credential, and the route refusing
 * it with a 422 at `["path", name]` must go with `type: integer` in the document, its taking it
 * with anything else. Returns the disagreements (empty when none) and how many of each kind.
 */
export async function checkPathParamTypes(
  document: { paths: Record<string, Record<string, DocumentedOperation>> },
  baseUrl: string,
  credentials: Credentials,
): Promise<{ mismatches: string[]; integers: number; others: number }> {
  const mismatches: string[] = [];
  let integers = 0;
  let others = 0;
  for (const [template, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const params = (operation.parameters ?? []).filter((p) => p.in === "path");
      const schemes = (operation.security ?? []).flatMap((s) => Object.keys(s));
      const callback = schemes.includes("callbackToken") ? credentials.callback : undefined;
      const token = callback?.token ?? (schemes.includes("bearer") ? credentials.bearer : undefined);
      for (const param of params) {
        const valueOf = (name: string) =>
          name === param.name ? "x" : name === "id" && callback ? String(callback.botId) : "1";
        const url = template.replace(/\{([^}]+)\}/g, (_, name: string) => valueOf(name));
        const res = await fetch(new URL(url, baseUrl), {
          method: method.toUpperCase(),
          headers: {
            ...credentials.headers?.[`${method.toUpperCase()} ${template}`],
            ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          },
        });
        const text = await res.text();
        const detail =
          res.status === 422 ? (JSON.parse(text) as { detail: { loc: unknown[] }[] }).detail : [];
        const refused = detail.some(
          (d) => d.loc.length === 2 && d.loc[0] === "path" && d.loc[1] === param.name,
        );
        const documented = param.schema?.type;
        if (refused) integers++;
        else others++;
        if (refused !== (documented === "integer")) {
          mismatches.push(
            `${method.toUpperCase()} ${template} ${param.name}: documented ${documented}, ` +
              `answered ${res.status} to "x"`,
          );
        }
      }
    }
  }
  return { mismatches, integers, others };
}
