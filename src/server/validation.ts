import type { FastifySchemaCompiler } from "fastify";
import { z } from "zod";
import { MAX_INTEGER_COLUMN } from "./db/database.js";

/** One entry of the spec's validation body `{detail: [{loc, msg, type}]}`. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** Where a request part shows up in `loc`, by Fastify's validation context. */
const LOC_ROOT: Record<string, string> = {
  body: "body",
  querystring: "query",
  params: "path",
  headers: "header",
};

/** Carries zod's issues from the validator compiler to the error handler, untouched. */
export class RequestValidationError extends Error {
  /** Set by Fastify to the part of the request that failed ("body", "querystring", ...). */
  validationContext?: string;
  constructor(readonly issues: readonly z.core.$ZodIssue[]) {
    super("request validation failed");
  }

  toDetail(): ValidationIssue[] {
    const root = LOC_ROOT[this.validationContext ?? "body"] ?? "body";
    return this.issues.map((issue) => toValidationIssue(root, issue));
  }
}

export function toValidationIssue(root: string, issue: z.core.$ZodIssue): ValidationIssue {
  const loc = [root, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
  // Fastify hands an absent body to the validator as null.
  const absent = issue.input === undefined || (issue.input === null && issue.path.length === 0);
  const missing = (issue.code === "invalid_type" || issue.code === "invalid_value") && absent;
  if (missing) return { loc, msg: "Field required", type: "missing" };
  return { loc, msg: issue.message, type: issue.code === "custom" ? "value_error" : issue.code };
}

/**
 * Like fastify-type-provider-zod's validatorCompiler, but keeps zod's issue paths as arrays so that
 * `loc` segments keep their types (array indexes stay numbers). `reportInput` only serves to tell
 * a missing field from a wrong one (inputs are never echoed back); it makes a parse about four
 * times slower, so only a request that failed is parsed again with it.
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const explained = schema.safeParse(data, { reportInput: true });
    return { error: new RequestValidationError(explained.error?.issues ?? result.error.issues) };
  };

/** How the API documents a path parameter that is an integer. */
export interface DocumentedInteger {
  type: "integer";
  minimum: number;
  maximum: number;
}

const INTEGER_PATH_PARAMS = new Map<z.ZodType, DocumentedInteger>();

/**
 * A path parameter that is an integer in canonical decimal text: digits only (no "1e3", no "0x10",
 * no leading zeros, no empty text read as 0), from `minimum` to `maximum`. zod can only describe
 * the text as a string pattern; the OpenAPI transform documents it as the integer it is.
 */
export function integerPathParam(minimum: 0 | 1, maximum: number) {
  const more = `[0-9]{0,${String(maximum).length - 1}}`;
  const digits = new RegExp(minimum === 0 ? `^(0|[1-9]${more})$` : `^[1-9]${more}$`);
  const schema = z
    .string()
    .regex(digits, minimum === 0 ? "must be a whole number, in decimal" : "must be a positive integer")
    .transform(Number)
    .refine((n) => n <= maximum, `must be at most ${maximum}`);
  INTEGER_PATH_PARAMS.set(schema, { type: "integer", minimum, maximum });
  return schema;
}

/** How the OpenAPI document shows `param`, when it is an integerPathParam. */
export function documentedInteger(param: unknown): DocumentedInteger | undefined {
  return INTEGER_PATH_PARAMS.get(param as z.ZodType);
}

/**
 * A positive integer id in a path. Ids are integer columns: one past PostgreSQL's int4 range is a
 * 422 on every dialect, not a 500.
 */
export const IdParam = integerPathParam(1, MAX_INTEGER_COLUMN);

export const Pagination = {
  page: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(20),
};
