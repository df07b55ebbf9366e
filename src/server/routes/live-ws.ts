import type { Readable } from "node:stream";
import type {} from "@fastify/websocket";
import type { FastifyPluginAsync } from "fastify";
import type { WebSocket } from "ws";
import { bearerToken } from "../auth/guard.js";
import { ApiError } from "../errors.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

/** Each upgrade request's newest live event of its bot, read before the upgrade was answered. */
const newestBeforeUpgrade = new WeakMap<object, number>();

/** How long a client that did not authenticate on the upgrade has to send its auth message. */
const AUTH_TIMEOUT_MS = 10_000;
/** A ping this often keeps proxies from closing a quiet meeting's socket. */
const PING_INTERVAL_MS = 15_000;
/** Messages handed to the socket and not yet written: beyond this the stream waits (backpressure). */
const MAX_UNSENT = 64;

/**
 * Close codes: 4400 a bad message or resume id, 4401 no valid credential, 4404 no such bot of
 * yours, 4429 too many open streams, 1001 the server is going away. Application codes sit in
 * 4000-4999, where RFC 6455 leaves them to the application.
 */
export const LIVE_WS_CLOSE = { badRequest: 4400, unauthorized: 4401, notFound: 4404, tooMany: 4429 } as const;

/**
 * GET /v1/bots/{id}/live/ws: the bot's live stream over a WebSocket, the same events as the SSE
 * stream, one JSON text message each. Outside the bearer guard on purpose: a browser cannot set
 * headers on a WebSocket, so the credential may come as the first message instead
 * (`{"type":"auth","token":"…","lastEventId"?:N}`); never in the URL, where logs keep it.
 */
export const liveSocketRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/bots/:id/live/ws",
    {
      websocket: true,
      // OpenAPI 3 has no words for a WebSocket (and @fastify/websocket hides these routes from
      // it anyway): docs/api.md describes it.
      schema: { hide: true },
      // Without a resume id the stream starts where the socket opened, not where the credential
      // was checked: the client sees the socket open first, and an event stored in between (a
      // partial, never replayed) would be lost to it. So the newest event is read before the
      // upgrade is answered; nothing is sent before the credential is checked.
      preHandler: async (request) => {
        const botId = IdParam.safeParse((request.params as { id?: unknown }).id);
        if (botId.success)
          newestBeforeUpgrade.set(request, await services.eventStreams.newestLiveEventId(botId.data));
      },
    },
    (socket, request) => {
      const botId = IdParam.safeParse((request.params as { id?: unknown }).id);
      const headerToken = bearerToken(request.headers.authorization);
      const headerResume = parseResume(
        request.headers["last-event-id"] ?? (request.query as { since?: unknown }).since,
      );
      const close = (code: number, reason: string) => socket.close(code, reason.slice(0, 120));
      if (!botId.success) return close(LIVE_WS_CLOSE.notFound, "Bot not found");
      if (headerResume === "bad") return close(LIVE_WS_CLOSE.badRequest, "Last-Event-ID must be an event id");
      const openedAfter = newestBeforeUpgrade.get(request);

      const open = async (token: string, resume: number | undefined) => {
        const principal = await services.users.resolveBearer(token);
        if (!principal) return close(LIVE_WS_CLOSE.unauthorized, "Could not validate credentials");
        try {
          await services.bots.requireOwned(principal.user.id, botId.data);
          const after = resume ?? openedAfter;
          const stream = await services.eventStreams.startLive(
            principal.user.id,
            botId.data,
            after,
            "json-lines",
          );
          relay(stream, socket);
        } catch (error) {
          const status = error instanceof ApiError ? error.statusCode : 500;
          const detail = error instanceof ApiError ? error.message : "Internal Server Error";
          if (status === 500) request.log.error({ err: error }, "live socket failed to open");
          close(
            status === 404 ? LIVE_WS_CLOSE.notFound : status === 429 ? LIVE_WS_CLOSE.tooMany : 1011,
            detail,
          );
        }
      };

      if (headerToken) {
        void open(headerToken, headerResume);
        return;
      }
      const timer = setTimeout(() => close(LIVE_WS_CLOSE.unauthorized, "Not authenticated"), AUTH_TIMEOUT_MS);
      socket.once("message", (data) => {
        clearTimeout(timer);
        const hello = parseHello(String(data));
        if (!hello)
          return close(LIVE_WS_CLOSE.badRequest, 'The first message must be {"type":"auth","token":"…"}');
        void open(hello.token, hello.lastEventId ?? headerResume);
      });
      socket.once("close", () => clearTimeout(timer));
    },
  );
};

/** Sends each event of `stream` (one JSON per line) as a message; pauses it while the socket is behind. */
function relay(stream: Readable, socket: WebSocket): void {
  let unsent = 0;
  let rest = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    rest += chunk;
    let end: number;
    while ((end = rest.indexOf("\n")) >= 0) {
      const message = rest.slice(0, end);
      rest = rest.slice(end + 1);
      unsent += 1;
      socket.send(message, () => {
        unsent -= 1;
        if (unsent < MAX_UNSENT / 2 && stream.isPaused()) stream.resume();
      });
    }
    if (unsent >= MAX_UNSENT) stream.pause();
  });
  // The stream ends when the server closes (or gives up on a stalled client): so does the socket.
  stream.once("close", () => socket.close(1001, "The stream ended; resume with lastEventId"));
  stream.once("error", () => socket.close(1011, "The stream failed; resume with lastEventId"));
  const ping = setInterval(() => socket.ping(), PING_INTERVAL_MS);
  socket.once("close", () => {
    clearInterval(ping);
    stream.destroy();
  });
}

function parseHello(text: string): { token: string; lastEventId?: number } | null {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return null;
  }
  const { type, token, lastEventId } = (message ?? {}) as Record<string, unknown>;
  if (type !== "auth" || typeof token !== "string" || token.length === 0 || token.length > 4096) return null;
  if (lastEventId === undefined) return { token };
  const resume = parseResume(lastEventId);
  if (resume === "bad" || resume === undefined) return null;
  return { token, lastEventId: resume };
}

/** A resume position: undefined when none was given, "bad" when it is not an event id. */
function parseResume(value: unknown): number | undefined | "bad" {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) return "bad";
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : "bad";
}
