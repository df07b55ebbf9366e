import { createRequire } from "node:module";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { DownloadSigner } from "./auth/signed-urls.js";
import { JwtIssuer } from "./auth/tokens.js";
import type { ServerConfig } from "./config.js";
import type { Db } from "./db/database.js";
import { BadRequestError, clientErrorHandler, errorHandler } from "./errors.js";
import { registerDocs } from "./http/docs.js";
import { API_PREFIX, registerOpenApi, SANDBOX_PREFIX } from "./http/openapi.js";
import { RateLimiter } from "./http/rate-limit.js";
import { serializerCompiler } from "./http/serializer.js";
import { transportOptions } from "./http/tls.js";
import type { Launcher } from "./launcher/launcher.js";
import { apiRoutes } from "./routes/index.js";
import { authCallbackPage } from "./routes/oauth.js";
import { createServices } from "./services/index.js";
import { LocalRecordingStore } from "./storage/recordings.js";
import { validatorCompiler } from "./validation.js";
import { WakeSignal } from "./wake-signal.js";

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

/** Body limit of JSON routes; the recording upload sets its own. */
export const JSON_BODY_LIMIT = 1024 * 1024;

export interface AppDeps {
  config: ServerConfig;
  db: Db;
  /** The server secret (JWT and download-link keys are derived from it). */
  secret: Uint8Array;
  launcher: Launcher;
  publicBaseUrl(): string;
  now?: () => Date;
}

/** Builds the Fastify app (not listening). The caller owns the database and closes it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    ...transportOptions(deps.config),
    logger: loggerOptions(deps.config.logLevel),
    bodyLimit: JSON_BODY_LIMIT,
    // A URL that does not decode, a request Node cannot parse: the same {detail} bodies.
    frameworkErrors: errorHandler,
    clientErrorHandler,
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
  app.decorateRequest("user", null);
  app.decorateRequest("credential", null);
  closeKeepAliveSocketsOnShutdown(app);

  const now = deps.now ?? (() => new Date());
  const services = createServices({
    db: deps.db.kysely,
    dialect: deps.db.dialect,
    config: deps.config,
    launcher: deps.launcher,
    jwt: new JwtIssuer(deps.secret),
    signer: new DownloadSigner(deps.secret),
    store: new LocalRecordingStore(deps.config.paths.recordings),
    publicBaseUrl: deps.publicBaseUrl,
    now,
    log: app.log,
    outbox: new WakeSignal(),
    jobs: new WakeSignal(),
  });
  // One limiter for both prefixes: /v1 and /api/v1 share a credential's budget.
  const rateLimiter = new RateLimiter(deps.config.rateLimit, () => now().getTime());

  await registerOpenApi(app);
  await app.register(apiRoutes, { prefix: API_PREFIX, services, rateLimiter });
  await app.register(apiRoutes, { prefix: SANDBOX_PREFIX, services, rateLimiter });
  await registerDocs(app, deps.publicBaseUrl);
  await app.register(authCallbackPage);
  services.watchdog.start();
  services.apiLogs.start();
  if (deps.config.webhooks.worker) services.webhookWorker.start();
  if (deps.config.jobs.worker) services.jobWorker.start();
  app.addHook("onClose", async () => {
    await services.watchdog.stop();
    // Hands running transcripts and summaries back to the queue, to be resumed after a restart.
    await services.jobWorker.stop();
    // Waits briefly for deliveries in flight; the rest are sent again after a restart.
    await services.webhookWorker.stop();
    // Before the caller closes the database: the last buffered request-log rows.
    await services.apiLogs.stop();
  });
  return app;
}

/**
 * Fastify closes idle keep-alive sockets once, when close() starts. A response that finishes just
 * after that (a client has all of a Content-Length body before the server's "finish") would leave
 * its socket open until the keep-alive timeout and hold close() up; sweep again after each one.
 */
function closeKeepAliveSocketsOnShutdown(app: FastifyInstance): void {
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onResponse", async () => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
  });
}

/** A download link's signature is a credential: request logs show it redacted. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]signature=)[^&]*/gi, "$1[redacted]");
}

function loggerOptions(level: string): FastifyServerOptions["logger"] {
  const serializers = {
    req: (req: { method: string; url: string; ip?: string }) => ({
      method: req.method,
      url: redactUrl(req.url),
      remoteAddress: req.ip,
    }),
  };
  // JSON logs; pretty only on a terminal, and only where pino-pretty is installed (a dev dependency).
  if (level === "silent" || !process.stdout.isTTY) return { level, serializers };
  try {
    createRequire(import.meta.url).resolve("pino-pretty");
    return { level, serializers, transport: { target: "pino-pretty" } };
  } catch {
    return { level, serializers };
  }
}
