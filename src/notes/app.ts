import type { FastifyInstance } from "fastify";
import { requireUser } from "../server/auth/guard.js";
import type { Core } from "../server/core.js";
import { createApiServer } from "../server/http/api-server.js";
import { registerDocs } from "../server/http/docs.js";
import { API_PREFIX, type ApiDocument, documentBearerAuth, registerOpenApi } from "../server/http/openapi.js";
import { MeetingService } from "./meetings.js";
import {
  PlanLimiter,
  planHeadersOnEveryResponse,
  planRateLimit,
  planRateLimitHeaders,
} from "./plan-limits.js";
import { notesRoutes } from "./routes.js";
import { NotesWebhookService } from "./webhooks.js";

export const NOTES_DOCUMENT: ApiDocument = {
  title: "meetbot meeting notes API",
  description: [
    "Meetings, transcripts and summaries of the user's bots, on their own base address.",
    "",
    "Authenticate with `Authorization: Bearer <API key>` (the bot API's keys) or an access token.",
    "Errors are `{detail: string}`, or `{detail: [{loc, msg, type}]}` (422) when a request does not",
    "validate. Meeting ids are `mtg_` and 24 hex digits.",
    "Each user has an hourly request budget set by their plan: every answer carries the",
    "X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset headers, and past the budget",
    "the answer is 429 with Retry-After.",
  ].join("\n"),
  rateLimitHeaders: true,
  securitySchemes: {
    bearer: { type: "http", scheme: "bearer", description: "An API key or a JWT access token" },
  },
};

/**
 * The meeting-notes interface (the second spec): the same server builder, error bodies and
 * credentials as the bot API, its own routes, document and docs pages, on the same core (one set
 * of users, keys, jobs and webhooks). It owns no worker: the core runs them.
 */
export async function buildNotesApp(core: Core, publicBaseUrl: () => string): Promise<FastifyInstance> {
  const { services, db, config } = core;
  const limiter = new PlanLimiter(db.kysely, config.notes.defaultPlan, core.now);
  // Every answer carries the X-RateLimit-* headers: a 401, a 404 of an unknown path, and what is
  // answered before any hook runs (a URL that does not decode, a request Node cannot parse) too.
  const app = await createApiServer(config, core.log, {
    earlyHeaders: () => planRateLimitHeaders(limiter.anonymous()),
  });
  const meetings = new MeetingService({
    db: db.kysely,
    dialect: db.dialect,
    content: { transcripts: services.transcripts, summaries: services.summaries },
  });
  const webhooks = new NotesWebhookService(db.kysely, config, core.now);
  app.addHook("onSend", planHeadersOnEveryResponse(limiter));
  await registerOpenApi(app, NOTES_DOCUMENT);
  await app.register(
    async (api) => {
      api.addHook(
        "onRequest",
        requireUser((token) => services.users.resolveBearer(token)),
      );
      // Per user, across all their keys and tokens and every server process: their plan's hour.
      api.addHook("onRequest", planRateLimit(limiter));
      api.addHook("onRoute", documentBearerAuth);
      await api.register(notesRoutes, { meetings, webhooks });
    },
    { prefix: API_PREFIX },
  );
  await registerDocs(app, publicBaseUrl, NOTES_DOCUMENT.title);
  return app;
}
