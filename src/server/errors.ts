import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { isInvalidValue } from "./db/database.js";
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
  /** `unread`: answered before the body was read; the connection closes rather than drain it. */
  constructor(detail = "Request body is too large", unread = false) {
    super(413, detail, unread ? { connection: "close" } : {});
  }
}

export class UnsupportedMediaTypeError extends ApiError {
  constructor(expected: string) {
    super(415, `Content-Type must be ${expected}`);
  }
}

export class RangeNotSatisfiableError extends ApiError {
  constructor(size: number) {
    super(416, "Range not satisfiable", { "content-range": `bytes */${size}` });
  }
}

/** A service the server relies on for the answer (a speech engine) failed: its detail says how. */
export class BadGatewayError extends ApiError {
  constructor(detail: string) {
    super(502, detail);
  }
}

/** Something the answer waits for (a running bot) did not answer in time. */
export class GatewayTimeoutError extends ApiError {
  constructor(detail: string) {
    super(504, detail);
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

/**
 * Fastify's own errors about the request's framing, by code. Everything that is not well-formed
 * JSON is 400; JSON that does not fit the schema is 422 (RequestValidationError).
 */
const FRAMING_ERRORS: Record<string, { status: number; detail: (request: FastifyRequest) => string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, detail: () => "Content-Type must be application/json" },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, detail: () => "Request body is not valid JSON" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, detail: () => "Request body is empty" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    detail: () => "Content-Length does not match the request body",
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    detail: (request) => `Request body is larger than ${request.routeOptions.bodyLimit} bytes`,
  },
  FST_ERR_BAD_URL: { status: 400, detail: () => "Malformed URL" },
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
  const framing = FRAMING_ERRORS[(err as FastifyError).code ?? ""];
  if (framing) {
    reply.code(framing.status).send({ detail: framing.detail(request) });
    return;
  }
  const status = (err as FastifyError).statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    reply.code(status).send({ detail: err.message });
    return;
  }
  // A value the database refuses (PostgreSQL: out of an integer's range, a NUL in text) is the
  // client's input, not our failure.
  if (isInvalidValue(err)) {
    reply
      .code(400)
      .send({ detail: "A value in the request cannot be stored (out of range or a NUL character)" });
    return;
  }
  request.log.error({ err }, "unhandled error");
  reply.code(500).send({ detail: "Internal Server Error" });
}

/**
 * A request Node's HTTP parser rejects (malformed request line, headers too large) never reaches
 * Fastify: answer on the socket, still with `{detail}`. Except to a HEAD: its answer has no body
 * (a client would take one for garbage); the method is read from the bytes the parser refused.
 */
export function clientErrorHandler(
  err: NodeJS.ErrnoException & { rawPacket?: unknown },
  socket: Socket,
  extraHeaders: Record<string, string> = {},
): void {
  if (err.code === "ECONNRESET" || !socket.writable) return;
  const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
  const body = JSON.stringify({ detail: STATUS_CODES[status] });
  const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString("latin1") === "HEAD ";
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      Object.entries(extraHeaders)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("") +
      `Connection: close\r\n\r\n${head ? "" : body}`,
  );
}
