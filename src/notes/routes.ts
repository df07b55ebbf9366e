import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { currentUser } from "../server/auth/guard.js";
import { Summary, Transcript } from "../server/schemas/index.js";
import { z } from "zod";
import { IdParam } from "../server/validation.js";
import type { MeetingService } from "./meetings.js";
import {
  CreatedNotesWebhook,
  CreateNotesWebhookBody,
  NotesWebhook,
  NotesWebhookList,
  type NotesWebhookService,
} from "./webhooks.js";
import { Meeting, MeetingList, MeetingListQuery, MeetingParams } from "./schemas.js";

/** The meeting-notes interface's routes (under /v1 of its own base address). */
export const notesRoutes: FastifyPluginAsyncZod<{
  meetings: MeetingService;
  webhooks: NotesWebhookService;
}> = async (app, { meetings, webhooks }) => {
  app.get(
    "/meetings",
    {
      schema: {
        operationId: "listMeetings",
        summary: "The user's meetings, newest first, with filters and full-text search",
        querystring: MeetingListQuery,
        response: { 200: MeetingList },
      },
    },
    async (request) => meetings.list(currentUser(request).id, request.query),
  );

  app.get(
    "/meetings/:id",
    {
      schema: {
        operationId: "getMeeting",
        summary: "One meeting with its participants, recording, transcript and summary status",
        params: MeetingParams,
        response: { 200: Meeting },
      },
    },
    async (request) => meetings.get(currentUser(request).id, request.params.id),
  );

  app.get(
    "/meetings/:id/transcript",
    {
      schema: {
        operationId: "getMeetingTranscript",
        summary: "The meeting's transcript: who said what, and when",
        description: "404 `{detail}` saying so while it is being made; its status is on the meeting.",
        params: MeetingParams,
        response: { 200: Transcript },
      },
    },
    async (request) => meetings.transcript(currentUser(request).id, request.params.id),
  );

  app.get(
    "/meetings/:id/summary",
    {
      schema: {
        operationId: "getMeetingSummary",
        summary: "The meeting's summary: overview, key points, action items, decisions",
        description: "404 `{detail}` saying so while it is being made; its status is on the meeting.",
        params: MeetingParams,
        response: { 200: Summary },
      },
    },
    async (request) => meetings.summary(currentUser(request).id, request.params.id),
  );

  app.post(
    "/webhooks",
    {
      schema: {
        operationId: "createWebhook",
        summary: "Register a webhook for meeting.completed, transcript.ready or action_items.detected",
        description:
          "Deliveries are signed, logged and retried exactly as the bot API's (X-Webhook-Signature over " +
          "`<timestamp>.<body>` with the returned secret). The secret is shown only here.",
        body: CreateNotesWebhookBody,
        response: { 201: CreatedNotesWebhook },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await webhooks.create(currentUser(request).id, request.body)),
  );

  app.get(
    "/webhooks",
    {
      schema: {
        operationId: "listWebhooks",
        summary: "The user's webhooks of this interface",
        response: { 200: NotesWebhookList },
      },
    },
    async (request) => webhooks.list(currentUser(request).id),
  );

  app.get(
    "/webhooks/:id",
    {
      schema: {
        operationId: "getWebhook",
        summary: "One webhook",
        params: WebhookParams,
        response: { 200: NotesWebhook },
      },
    },
    async (request) => webhooks.get(currentUser(request).id, request.params.id),
  );

  app.delete(
    "/webhooks/:id",
    {
      schema: {
        operationId: "deleteWebhook",
        summary: "Delete a webhook; deliveries still queued for it are not sent",
        params: WebhookParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await webhooks.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};

const WebhookParams = z.object({ id: IdParam });
