import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { findRepoRoot } from "../launcher/local-process.js";

/**
 * The web dashboard at `/`: the files `make build` puts in dist/dashboard (scripts/build-dashboard.mjs),
 * read once at start-up. It talks to this same server's /v1 API, so its policy admits our own
 * origin only: no inline script or style, no other host. `blob:` images are the failure
 * screenshots, which the page fetches with its token and shows from memory.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "media-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

const COMMON_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function registerDashboard(
  app: FastifyInstance,
  dir = path.join(findRepoRoot(), "dist", "dashboard"),
): void {
  const indexFile = path.join(dir, "index.html");
  const built = existsSync(indexFile);
  const index = built ? readFileSync(indexFile) : null;
  // Named by their content's hash (the build's doing), so they never change under a name.
  const assets = new Map<string, { body: Buffer; type: string }>();
  if (built) {
    for (const name of readdirSync(path.join(dir, "assets"))) {
      const type = TYPES[path.extname(name)];
      if (type) assets.set(name, { body: readFileSync(path.join(dir, "assets", name)), type });
    }
  }

  app.get("/", { schema: { hide: true } }, async (_request, reply) => {
    if (!index) {
      return reply.code(503).send({
        detail: "The dashboard is not built: run `make build` (the API is at /v1, its reference at /docs)",
      });
    }
    return reply
      .headers(COMMON_HEADERS)
      .header("cache-control", "no-cache")
      .type("text/html; charset=utf-8")
      .send(index);
  });

  app.get<{ Params: { name: string } }>(
    "/assets/:name",
    { schema: { hide: true } },
    async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset) return reply.code(404).send({ detail: `No dashboard asset named ${request.params.name}` });
      return reply
        .headers(COMMON_HEADERS)
        .header("cache-control", "public, max-age=31536000, immutable")
        .type(asset.type)
        .send(asset.body);
    },
  );
}
