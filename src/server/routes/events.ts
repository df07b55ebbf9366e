import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { BotEvent, BotLogEntry, BotLogsQuery, EventList, EventListQuery } from "../schemas/index.js";
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
        response: { 200: z.array(BotEvent) },
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
        response: { 200: z.array(BotLogEntry) },
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
};
