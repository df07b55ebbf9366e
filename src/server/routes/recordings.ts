import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { DownloadLink, RecordingInfo } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const RecordingParams = z.object({ bot_id: IdParam });

/** Authenticated: recording info and a signed download link. */
export const recordingRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/recordings/:bot_id",
    { schema: { params: RecordingParams, response: { 200: RecordingInfo } } },
    async (request) => services.recordings.get(currentUser(request).id, request.params.bot_id),
  );

  app.get(
    "/recordings/:bot_id/download",
    { schema: { params: RecordingParams, response: { 200: DownloadLink } } },
    async (request) => services.recordings.downloadLink(currentUser(request).id, request.params.bot_id),
  );
};

/** Public: the file behind a signed link (the signature is the credential); single Range supported. */
export const recordingFileRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (
  app,
  { services },
) => {
  app.get(
    "/recordings/:bot_id/file",
    {
      schema: {
        params: RecordingParams,
        querystring: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
      },
    },
    async (request, reply) => {
      const { stream, size, range } = await services.recordings.openSigned(
        request.params.bot_id,
        request.query.expires,
        request.query.signature,
        request.headers.range,
      );
      reply.header("content-type", "video/mp4").header("accept-ranges", "bytes");
      if (range) {
        reply
          .code(206)
          .header("content-range", `bytes ${range.start}-${range.end}/${size}`)
          .header("content-length", range.end - range.start + 1);
      } else {
        reply.header("content-length", size);
      }
      return reply.send(stream);
    },
  );
};
