import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { RequestValidationError, type ValidationIssue } from "./validation.js";

/** Base of every error the API answers with on purpose; the body is the spec's `{detail}`. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
  body(): unknown {
    return { detail: this.detail };
  }
}

export class BadRequestError extends ApiError {
  constructor(detail: string) {
    super(400, detail);
  }
}

export class UnauthorizedError extends ApiError {
  constructor(detail = "Not authenticated") {
    super(401, detail, { "www-authenticate": "Bearer" });
  }
}

export class ForbiddenError extends ApiError {
  constructor(detail = "Forbidden") {
    super(403, detail);
  }
}

export class NotFoundError extends ApiError {
  constructor(detail = "Not Found") {
    super(404, detail);
  }
}

export class BotNotFoundError extends NotFoundError {
  constructor() {
    super("Bot not found");
  }
}

export class ConflictError extends ApiError {
  constructor(detail: string) {
    super(409, detail);
  }
}

export class PayloadTooLargeError extends ApiError {
  constructor(detail = "Request body is too large") {
    super(413, detail);
  }
}

export class RangeNotSatisfiableError extends ApiError {
  constructor(size: number) {
    super(416, "Range not satisfiable", { "content-range": `bytes */${size}` });
  }
}

export class ServiceUnavailableError extends ApiError {
  constructor(detail: string) {
    super(503, detail);
  }
}

/** A rule that only the service can check (e.g. an allowed meeting host), reported like zod's. */
export class ValidationError extends ApiError {
  constructor(readonly issues: ValidationIssue[]) {
    super(422, issues[0]?.msg ?? "Validation error");
  }
  override body(): unknown {
    return { detail: this.issues };
  }
}

const BAD_REQUEST_CODES = new Set([
  "FST_ERR_CTP_INVALID_MEDIA_TYPE", // wrong or missing content type: we answer 400, not 415
  "FST_ERR_CTP_INVALID_JSON_BODY",
  "FST_ERR_CTP_EMPTY_JSON_BODY",
  "FST_ERR_CTP_INVALID_CONTENT_LENGTH",
]);

const MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "Unsupported or missing Content-Type",
  FST_ERR_CTP_INVALID_JSON_BODY: "Request body is not valid JSON",
};

/**
 * The one place that turns errors into the spec's bodies:
 * `{detail: string}` everywhere, `{detail: [{loc, msg, type}]}` for validation (422).
 */
export function errorHandler(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof ApiError) {
    if (err.statusCode >= 500) request.log.error({ err }, err.detail);
    reply.code(err.statusCode).headers(err.headers).send(err.body());
    return;
  }
  if (err instanceof RequestValidationError) {
    reply.code(422).send({ detail: err.toDetail() });
    return;
  }
  const code = (err as FastifyError).code;
  if (code && BAD_REQUEST_CODES.has(code)) {
    reply.code(400).send({ detail: MESSAGES[code] ?? err.message });
    return;
  }
  const status = (err as FastifyError).statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    reply.code(status).send({ detail: err.message });
    return;
  }
  request.log.error({ err }, "unhandled error");
  reply.code(500).send({ detail: "Internal Server Error" });
}
