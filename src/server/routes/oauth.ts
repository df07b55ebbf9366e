import { createHash } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { CLIENT_STATE, readFlowCookie } from "../auth/oauth-flow.js";
import { escapeHtml } from "../http/html.js";
import { ProviderList } from "../schemas/index.js";
import type { Services } from "../services/index.js";

const ProviderParams = z.object({ provider: z.string() });
const StartQuery = z.object({
  state: z
    .string()
    .regex(CLIENT_STATE, "must be 16 to 128 characters of A-Z, a-z, 0-9, _ and -")
    .optional()
    .describe(
      "A value of the client's, handed back with the tokens as `state` on the post-login URL. A " +
        "browser client keeps it (the dashboard: in the tab's sessionStorage) and takes tokens only " +
        "with its own value, so that a link carrying someone else's tokens cannot sign it in.",
    ),
});
const CallbackQuery = z.object({
  state: z.string().optional(),
  error: z.string().optional(),
  error_description: z.string().optional(),
});

/** Public: the browser's way into OAuth sign-in and back. Responses are never cached. */
export const oauthRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/auth/oauth",
    {
      schema: {
        operationId: "listOAuthProviders",
        summary: "The OAuth providers you can sign in with here",
        security: [],
        response: { 200: ProviderList },
      },
    },
    async () => ({ providers: services.oauth.configuredProviders() }),
  );

  app.get(
    "/auth/oauth/:provider",
    {
      schema: {
        operationId: "startOAuthSignIn",
        summary: "Start signing in with an OAuth provider (a browser redirect)",
        security: [],
        params: ProviderParams,
        querystring: StartQuery,
        response: { 302: z.null().describe("To the provider") },
      },
    },
    async (request, reply) => {
      const { location, setCookie } = await services.oauth.start(
        request.params.provider,
        request.query.state,
      );
      reply.header("cache-control", "no-store").header("set-cookie", setCookie);
      return reply.redirect(location, 302);
    },
  );

  app.get(
    "/auth/oauth/:provider/callback",
    {
      schema: {
        operationId: "finishOAuthSignIn",
        summary: "Where the OAuth provider sends the browser back",
        security: [],
        params: ProviderParams,
        querystring: CallbackQuery,
        response: {
          302: z
            .null()
            .describe("To the post-login URL with access_token, refresh_token and the start's state, if any"),
        },
      },
    },
    async (request, reply) => {
      // The attempt is over whatever happens next: the cookie goes, on errors too.
      reply.header("cache-control", "no-store").header("set-cookie", services.oauth.clearCookie());
      const q = request.url.indexOf("?");
      const location = await services.oauth.finish(request.params.provider, {
        ...request.query,
        rawQuery: q >= 0 ? request.url.slice(q) : "",
        cookie: readFlowCookie(request.headers.cookie),
      });
      return reply.redirect(location, 302);
    },
  );
};

const TOKEN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
// Takes the tokens out of the address bar and history once the page has them. A sign-in the
// dashboard started left a random state in this tab's sessionStorage and came back with the same
// value in the address: then the page hands the tokens to the dashboard and goes back there. Any
// other state (a link someone sent, with their own tokens) stores nothing and says so. The key
// names are the dashboard's (src/dashboard/session.ts).
const SCRIPT = [
  'const state = new URLSearchParams(location.search).get("state");',
  'history.replaceState(null, "", location.pathname);',
  'const expected = sessionStorage.getItem("meetbot.oauth-state");',
  "if (expected !== null || state !== null) {",
  '  sessionStorage.removeItem("meetbot.oauth-state");',
  '  const [access, refresh] = Array.from(document.querySelectorAll("textarea"), (t) => t.value);',
  '  document.getElementById("tokens").remove();',
  "  if (expected !== null && state === expected) {",
  '    localStorage.setItem("meetbot.session", JSON.stringify({ access, refresh }));',
  '    location.replace("../");',
  "  } else {",
  '    document.getElementById("refused").hidden = false;',
  "  }",
  "}",
].join("\n");
const CSP = [
  "default-src 'none'",
  `script-src 'sha256-${createHash("sha256").update(SCRIPT).digest("base64")}'`,
  "style-src 'unsafe-inline'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * GET /auth/callback, the default post-login URL: shows the tokens of an OAuth sign-in so they can
 * be copied. The tokens are in its query string, so the route logs nothing below "warn".
 */
export const authCallbackPage: FastifyPluginAsync = async (app) => {
  app.get("/auth/callback", { logLevel: "warn" }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const access = typeof query.access_token === "string" ? query.access_token : "";
    const refresh = typeof query.refresh_token === "string" ? query.refresh_token : "";
    const ok = TOKEN.test(access) && TOKEN.test(refresh);
    reply
      .code(ok ? 200 : 400)
      .header("content-type", "text/html; charset=utf-8")
      .header("cache-control", "no-store")
      .header("referrer-policy", "no-referrer")
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", CSP);
    return ok ? page(signedIn(access, refresh)) : page(notSignedIn);
  });
};

const notSignedIn = `<h1>Not signed in</h1>
<p>This page shows the result of a sign-in. Start one at <code>/v1/auth/oauth/google</code> or
<code>/v1/auth/oauth/microsoft</code>.</p>`;

function signedIn(access: string, refresh: string): string {
  return `<div id="tokens">
<h1>Signed in</h1>
<p>Send the access token as <code>Authorization: Bearer &lt;token&gt;</code>; it is valid for 30 minutes.
<code>POST /v1/auth/refresh</code> with the refresh token (valid for 7 days) gives a new one of each;
a refresh token works once.</p>
<label>Access token<textarea readonly rows="4">${escapeHtml(access)}</textarea></label>
<label>Refresh token<textarea readonly rows="4">${escapeHtml(refresh)}</textarea></label>
</div>
<div id="refused" hidden>
<h1>Not signed in</h1>
<p role="alert">This sign-in was not started from the dashboard in this tab, so nothing was kept.
If you did not just sign in, someone may have sent you this link to sign you in to their account:
close it. Otherwise start again from the dashboard.</p>
<p><a href="../">Back to the dashboard</a></p>
</div>
<script>${SCRIPT}</script>`;
}

function page(body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>meetbot sign-in</title>
<style>body{font:16px system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem}
label{display:block;margin:1rem 0}textarea{display:block;width:100%;font:13px monospace}</style>
</head><body>
${body}
</body></html>
`;
}
