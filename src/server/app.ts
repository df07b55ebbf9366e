import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import type { Core } from "./core.js";
import { registerDocs } from "./http/docs.js";
import { createApiServer } from "./http/api-server.js";
import { registerDashboard } from "./http/dashboard.js";
import { API_PREFIX, BOT_API_DOCUMENT, registerOpenApi, SANDBOX_PREFIX } from "./http/openapi.js";
import { RateLimiter } from "./http/rate-limit.js";
import { apiRoutes } from "./routes/index.js";
import { authCallbackPage } from "./routes/oauth.js";

/**
 * The bot API's app (not listening): its routes, document, docs pages and dashboard on `core`.
 * The caller owns the core: it releases the core's long requests before closing this app, and
 * stops the core after (main.ts, startServer).
 */
export async function buildApp(core: Core, publicBaseUrl: () => string): Promise<FastifyInstance> {
  const app = await createApiServer(core.config, core.log);
  const { services } = core;
  // One limiter for both prefixes: /v1 and /api/v1 share a credential's budget.
  const rateLimiter = new RateLimiter(core.config.rateLimit, () => core.now().getTime());

  // WebSocket upgrades (the live stream's socket); a client's messages are small JSON.
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  await registerOpenApi(app, BOT_API_DOCUMENT);
  await app.register(apiRoutes, { prefix: API_PREFIX, services, rateLimiter });
  await app.register(apiRoutes, { prefix: SANDBOX_PREFIX, services, rateLimiter });
  await registerDocs(app, publicBaseUrl, BOT_API_DOCUMENT.title);
  await app.register(authCallbackPage);
  registerDashboard(app);
  return app;
}
