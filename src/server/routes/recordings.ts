import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { MEDIA_DESCRIPTION, MEDIA_TYPES, rangeRequest, sendRecording } from "../http/recording-reply.js";
import { DownloadLink, RecordingInfo, RecordingList, RecordingListQuery } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const RecordingParams = z.object({ bot_id: IdParam });

/** Authenticated: the user's recordings, their info, stream, deletion and signed download link. */
export const recordingRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/recordings",
    {
      schema: {
        operationId: "listRecordings",
        summary: "List your recordings",
        querystring: RecordingListQuery,
        response: { 200: RecordingList },
      },
    },
    async (request) => services.recordings.list(currentUser(request).id, request.query),
  );

  app.get(
    "/recordings/:bot_id",
    {
      schema: {
        operationId: "getRecording",
        summary: "A recording's details",
        params: RecordingParams,
        response: { 200: RecordingInfo },
      },
    },
    async (request) => services.recordings.get(currentUser(request).id, request.params.bot_id),
  );

  app.delete(
    "/recordings/:bot_id",
    {
      schema: {
        operationId: "deleteRecording",
        summary: "Delete a recording with all of its meeting's data",
        params: RecordingParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await services.botData.deleteBotData(request.params.bot_id, "request", {
        userId: currentUser(request).id,
        recordingRequired: true,
      });
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/recordings/:bot_id/stream",
    {
      schema: {
        operationId: "getRecordingStream",
        summary: "Stream a recording's MP4",
        params: RecordingParams,
        file: { types: MEDIA_TYPES, ranges: true },
        description: `${MEDIA_DESCRIPTION} Needs the Authorization header; a \`<video src>\` cannot send one: give it the /download link.`,
      },
    },
    async (request, reply) => {
      const file = await services.recordings.openOwned(
        currentUser(request).id,
        request.params.bot_id,
        rangeRequest(request.headers),
      );
      return sendRecording(request, reply, file);
    },
  );

  app.get(
    "/recordings/:bot_id/download",
    {
      schema: {
        operationId: "getRecordingDownloadLink",
        summary: "A signed, expiring link to a recording's file",
        params: RecordingParams,
        response: { 200: DownloadLink },
      },
    },
    async (request) => services.recordings.downloadLink(currentUser(request).id, request.params.bot_id),
  );
};

/** Public: the file behind a signed link (the signature is the credential). */
export const recordingFileRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (
  app,
  { services },
) => {
  app.get(
    "/recordings/:bot_id/file",
    {
      schema: {
        operationId: "getRecordingFile",
        summary: "A recording's MP4, by a signed link",
        security: [],
        params: RecordingParams,
        file: { types: MEDIA_TYPES, ranges: true },
        querystring: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
        description: MEDIA_DESCRIPTION,
      },
    },
    async (request, reply) => {
      const file = await services.recordings.openSigned(
        request.params.bot_id,
        request.query.expires,
        request.query.signature,
        rangeRequest(request.headers),
      );
      return sendRecording(request, reply, file);
    },
  );
};
