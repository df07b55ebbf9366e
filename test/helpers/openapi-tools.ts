import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

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
