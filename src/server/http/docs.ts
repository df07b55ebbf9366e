import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createRequire } from "node:module";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { escapeHtml } from "./html.js";
import { servedDocument } from "./openapi.js";

/**
 * GET /openapi.json, /docs (Swagger UI) and /redoc (ReDoc). Every asset comes from an installed
 * package and is served by this server: the pages work with no network, and their
 * Content-Security-Policy says so (same origin only).
 */

const REDOC_BUNDLE = createRequire(import.meta.url).resolve("redoc/bundles/redoc.standalone.js");

/** Same origin only; inline styles because both UIs set styles from script. */
const SWAGGER_UI_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";
/** ReDoc also starts its search index in a worker made from a blob. */
const REDOC_CSP =
  "default-src 'self'; script-src 'self' blob:; worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; " +
  "img-src 'self' data:; font-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";

// Relative URLs, so that the page also works behind a proxy that mounts the server under a path.
const redocPage = (title: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${escapeHtml(title)}</title>
    <style>body { margin: 0; }</style>
  </head>
  <body>
    <redoc spec-url="openapi.json"></redoc>
    <script src="redoc/redoc.standalone.js"></script>
  </body>
</html>
`;

export async function registerDocs(
  app: FastifyInstance,
  publicBaseUrl: () => string,
  title: string,
): Promise<void> {
  const page = redocPage(title);
  app.get("/openapi.json", { schema: { hide: true } }, async () =>
    servedDocument(app.swagger(), publicBaseUrl()),
  );

  await app.register(fastifySwaggerUi, {
    routePrefix: "/docs",
    transformSpecification: (document) => servedDocument(document, publicBaseUrl()),
    staticCSP: SWAGGER_UI_CSP,
    uiConfig: { deepLinking: true },
  });

  app.get("/redoc", { schema: { hide: true } }, async (_request, reply) =>
    reply.type("text/html; charset=utf-8").header("content-security-policy", REDOC_CSP).send(page),
  );

  app.get("/redoc/redoc.standalone.js", { schema: { hide: true } }, async (_request, reply) => {
    const { size } = await stat(REDOC_BUNDLE);
    return reply
      .type("text/javascript; charset=utf-8")
      .header("content-length", size)
      .header("cache-control", "public, max-age=86400")
      .send(createReadStream(REDOC_BUNDLE));
  });
}
