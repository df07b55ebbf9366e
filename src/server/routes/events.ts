import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { sendEventStream } from "../http/event-stream-reply.js";
import {
  BotEventList,
  BotLogList,
  BotLogsQuery,
  EventList,
  EventListQuery,
  EventStreamHeaders,
  EventStreamQuery,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ id: IdParam });

/** Authenticated: per-bot events and logs, and the aggregated event list. */
export const eventRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/bots/:id/events",
    {
      schema: {
        operationId: "listBotEvents",
        summary: "A bot's lifecycle events",
        params: BotParams,
        response: { 200: BotEventList },
      },
    },
    async (request) => services.events.listForBot(currentUser(request).id, request.params.id),
  );

  app.get(
    "/bots/:id/logs",
    {
      schema: {
        operationId: "listBotLogs",
        summary: "A bot's log lines",
        params: BotParams,
        querystring: BotLogsQuery,
        response: { 200: BotLogList },
      },
    },
    async (request) => services.events.logsForBot(currentUser(request).id, request.params.id, request.query),
  );

  app.get(
    "/events",
    {
      schema: {
        operationId: "listEvents",
        summary: "Events of all your bots",
        querystring: EventListQuery,
        response: { 200: EventList },
      },
    },
    async (request) => services.events.listAggregated(currentUser(request).id, request.query),
  );

  app.get(
    "/events/stream",
    {
      schema: {
        operationId: "streamEvents",
        summary: "Events of all your bots, live (server-sent events)",
        description: STREAM_DESCRIPTION,
        querystring: EventStreamQuery,
        headers: EventStreamHeaders,
        stream: {
          type: "text/event-stream",
          description:
            "One SSE event per aggregated event: `id:` its id, `event:` its eventType, " +
            "`data:` the same JSON as an item of GET /v1/events; `: ping` comments keep it open",
        },
      },
    },
    async (request, reply) => {
      const after = request.headers["last-event-id"] ?? request.query.since;
      const stream = await services.eventStreams.start(currentUser(request).id, after);
      return sendEventStream(reply, stream);
    },
  );
};

const STREAM_DESCRIPTION = [
  "Stays open and sends each new event of your bots as it happens: every status from JOINING_CALL",
  "to DONE or FATAL, and RECORDING. The credential is the Authorization header (browsers: read it",
  "with fetch(), EventSource cannot send headers). Without Last-Event-ID or `since`, events from",
  "now on; with one, the events after that id first, then live ones. A limited number of open",
  "streams per user (429 beyond); a client that stops reading for a minute is disconnected and",
  "may resume.",
].join("\n");
