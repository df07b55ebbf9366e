import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { currentUser } from "../server/auth/guard.js";
import { Summary, Transcript } from "../server/schemas/index.js";
import type { MeetingService } from "./meetings.js";
import { Meeting, MeetingList, MeetingListQuery, MeetingParams } from "./schemas.js";

/** The meeting-notes interface's routes (under /v1 of its own base address). */
export const notesRoutes: FastifyPluginAsyncZod<{ meetings: MeetingService }> = async (app, { meetings }) => {
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
};
