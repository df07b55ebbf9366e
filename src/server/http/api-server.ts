import { createRequire } from "node:module";
import type { Socket } from "node:net";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { pino } from "pino";
import type { ServerConfig } from "../config.js";
import { BadRequestError, clientErrorHandler, errorHandler } from "../errors.js";
import { validatorCompiler } from "../validation.js";
import { serializerCompiler } from "./serializer.js";
import { transportOptions } from "./tls.js";

const UTF8 = new TextDecoder("utf-8", { fatal: true });
/** Only a `\uD800`-`\uDFFF` escape can put a lone surrogate in text decoded from valid UTF-8. */
const ESCAPED_SURROGATE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * A string (key or value) anywhere in `value` holds half a UTF-16 pair: not text, and not storable
 * as UTF-8. Walked without recursion: a body may nest 10,000 levels deep.
 */
function holdsLoneSurrogate(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) return true;
    } else if (item && typeof item === "object") {
      for (const [key, member] of Object.entries(item)) pending.push(key, member);
    }
  }
  return false;
}

const NO_SNIFF = { "x-content-type-options": "nosniff" };

/** Body limit of JSON routes; a route that takes files sets its own. */
export const JSON_BODY_LIMIT = 1024 * 1024;

/**
 * A Fastify instance as both interfaces (the bot API, the meeting-notes interface) serve: zod
 * validation and serialization, the `{detail}` error bodies, JSON-only bodies that must be UTF-8,
 * the request's `user` and `credential` slots, a clean shutdown of keep-alive sockets, and HTTPS
 * (TLS of its own or behind a trusted proxy) as configured. Each interface adds its own routes,
 * authentication, rate limits and OpenAPI document.
 */
export async function createApiServer(
  config: Pick<ServerConfig, "tls" | "trustProxy">,
  log: FastifyBaseLogger,
  opts: {
    /**
     * Headers every answer of this interface carries, for the answers given before any hook
     * runs (a request Node cannot parse, a URL that does not decode): the notes interface's
     * X-RateLimit-* headers.
     */
    earlyHeaders?: () => Record<string, string>;
  } = {},
): Promise<FastifyInstance> {
  // No answer may be sniffed into something it is not (a JSON error or a recording as HTML).
  const early = () => ({ ...NO_SNIFF, ...opts.earlyHeaders?.() });
  const app = Fastify({
    ...transportOptions(config),
    loggerInstance: log,
    bodyLimit: JSON_BODY_LIMIT,
    // Path parameters can be long: an Outlook event's UID is over 100 characters before encoding.
    routerOptions: { maxParamLength: 1500 },
    // A URL that does not decode, a request Node cannot parse: the same {detail} bodies.
    frameworkErrors: (error, request, reply) => {
      reply.headers(early());
      return errorHandler(error, request, reply);
    },
    clientErrorHandler: (error, socket) => clientErrorHandler(error, socket, early()),
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send({ detail: "Not Found" });
  });

  // JSON only: no text/plain parser, and an empty JSON body counts as no body (a bodyless POST such
  // as /deploy sent with a JSON content type is not an error; a route that needs a body says 422).
  // Text that is not UTF-8 is refused, not decoded with replacement characters into what is stored.
  const json = app.getDefaultJsonParser("error", "error");
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = UTF8.decode(body as Buffer);
    } catch {
      return done(new BadRequestError("Request body is not valid UTF-8"));
    }
    json(request, text, (err, value) => {
      if (!err && ESCAPED_SURROGATE.test(text) && holdsLoneSurrogate(value)) {
        return done(
          new BadRequestError(
            "Request body has a lone surrogate (a \\uD800-\\uDFFF escape without its pair)",
          ),
        );
      }
      done(err, value);
    });
  });
  // On the raw response: it holds for hijacked answers too (event streams) and for errors.
  app.addHook("onRequest", async (_request, reply) => {
    for (const [name, value] of Object.entries(NO_SNIFF)) reply.raw.setHeader(name, value);
  });
  app.decorateRequest("user", null);
  app.decorateRequest("credential", null);
  closeKeepAliveSocketsOnShutdown(app);

  return app;
}

/**
 * Fastify closes idle keep-alive sockets once, when close() starts. A response that finishes just
 * after that (a client has all of a Content-Length body before the server's "finish") would leave
 * its socket open until the keep-alive timeout and hold close() up; sweep again after each one.
 * Node's idle sweep also leaves connections that have not sent a byte (a browser's preconnect, a
 * spare connection of a client's pool): they would hold close() up for as long as the client keeps
 * them, so they are closed when it starts.
 */
function closeKeepAliveSocketsOnShutdown(app: FastifyInstance): void {
  let closing = false;
  const connections = new Set<Socket>();
  app.server.on("connection", (socket: Socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
  });
  app.addHook("preClose", async () => {
    closing = true;
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  });
  app.addHook("onResponse", async () => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
  });
}

/** A download link's signature is a credential: request logs show it redacted. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]signature=)[^&]*/gi, "$1[redacted]");
}

/**
 * The server's one logger: both interfaces' requests and the workers write through it. JSON
 * lines; pretty only on a terminal, and only where pino-pretty is installed (a dev dependency).
 */
export function createLogger(config: Pick<ServerConfig, "logLevel" | "logStream">): FastifyBaseLogger {
  const level = config.logLevel;
  const serializers = {
    req: (req: { method: string; url: string; ip?: string }) => ({
      method: req.method,
      url: redactUrl(req.url),
      remoteAddress: req.ip,
    }),
  };
  if (config.logStream) return pino({ level, serializers }, config.logStream);
  if (level === "silent" || !process.stdout.isTTY) return pino({ level, serializers });
  try {
    createRequire(import.meta.url).resolve("pino-pretty");
    return pino({ level, serializers, transport: { target: "pino-pretty" } });
  } catch {
    return pino({ level, serializers });
  }
}
