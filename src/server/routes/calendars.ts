import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import {
  Calendar,
  CalendarEvent,
  CalendarEventList,
  CalendarList,
  CreateCalendarBody,
  EventBotQuery,
  SyncResult,
  UpdateCalendarBody,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const CalendarParams = z.object({ id: IdParam });
const EventParams = z.object({
  id: IdParam,
  uid: z.string().min(1).max(500).describe("the event's iCalendar UID, percent-encoded"),
});

/** Authenticated (the guard is added by the enclosing plugin). Ours: the spec has no calendars. */
export const calendarRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/calendars",
    {
      schema: {
        operationId: "createCalendar",
        summary: "Add an iCalendar feed: its events with a meeting link get scheduled bots",
        body: CreateCalendarBody,
        response: { 201: Calendar },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return services.calendars.create(currentUser(request).id, request.body);
    },
  );

  app.get(
    "/calendars",
    {
      schema: {
        operationId: "listCalendars",
        summary: "Your calendar feeds",
        response: { 200: CalendarList },
      },
    },
    async (request) => services.calendars.list(currentUser(request).id),
  );

  app.get(
    "/calendars/:id",
    {
      schema: {
        operationId: "getCalendar",
        summary: "A calendar feed and its last sync",
        params: CalendarParams,
        response: { 200: Calendar },
      },
    },
    async (request) => services.calendars.get(currentUser(request).id, request.params.id),
  );

  app.patch(
    "/calendars/:id",
    {
      schema: {
        operationId: "updateCalendar",
        summary: "Change a calendar feed; it is synced again at once",
        params: CalendarParams,
        body: UpdateCalendarBody,
        response: { 200: Calendar },
      },
    },
    async (request) => services.calendars.update(currentUser(request).id, request.params.id, request.body),
  );

  app.delete(
    "/calendars/:id",
    {
      schema: {
        operationId: "deleteCalendar",
        summary: "Delete a calendar feed and its bots that are still only scheduled",
        params: CalendarParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await services.calendars.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/calendars/:id/sync",
    {
      schema: {
        operationId: "syncCalendar",
        summary: "Read the feed now; 409 while a sync of it runs",
        params: CalendarParams,
        response: { 200: SyncResult },
      },
    },
    async (request) => services.calendars.syncNow(currentUser(request).id, request.params.id),
  );

  app.get(
    "/calendars/:id/events",
    {
      schema: {
        operationId: "listCalendarEvents",
        summary: "The feed's events with a meeting link, from now to 28 days ahead, and their bots",
        params: CalendarParams,
        response: { 200: CalendarEventList },
      },
    },
    async (request) => services.calendars.events(currentUser(request).id, request.params.id),
  );

  // One event's bot by hand: POST gives it one, DELETE takes it away; both hold through syncs.
  const eventBotRoutes = [
    {
      method: "POST",
      mode: "on",
      operationId: "addCalendarEventBot",
      summary: "Give one event a bot, whatever autoJoin says",
    },
    {
      method: "DELETE",
      mode: "off",
      operationId: "removeCalendarEventBot",
      summary: "Take one event's bot away (it stays away through later syncs)",
    },
  ] as const;
  for (const { method, mode, operationId, summary } of eventBotRoutes) {
    app.route({
      method,
      url: "/calendars/:id/events/:uid/bot",
      schema: {
        operationId,
        summary,
        params: EventParams,
        querystring: EventBotQuery,
        response: { 200: CalendarEvent },
      },
      handler: async (request) =>
        services.calendars.chooseBot(
          currentUser(request).id,
          request.params.id,
          { uid: request.params.uid, query: request.query },
          mode,
        ),
    });
  }
};
