import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { MEDIA_DESCRIPTION, MEDIA_TYPES, rangeRequest, sendRecording } from "../http/recording-reply.js";
import { SHARE_PAGE_HEADERS, sharePage, wantsHtml } from "../http/share-page.js";
import { CreatedShare, CreateShareBody, SharedRecording, ShareInfo } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const RecordingParams = z.object({ bot_id: IdParam });
const TokenParams = z.object({ token: z.string() });

/** Authenticated: the owner creates, reads and revokes a recording's share link. */
export const shareRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/recordings/:bot_id/share",
    {
      schema: {
        operationId: "createShare",
        summary: "Create a public link to a recording",
        params: RecordingParams,
        body: CreateShareBody,
        response: { 201: CreatedShare },
        description:
          "A new public link, replacing the recording's previous one. The token is shown only here.",
      },
    },
    async (request, reply) => {
      const share = await services.shares.create(
        currentUser(request).id,
        request.params.bot_id,
        request.body,
      );
      return reply.code(201).send(share);
    },
  );

  app.get(
    "/recordings/:bot_id/share",
    {
      schema: {
        operationId: "getShare",
        summary: "A recording's public link",
        params: RecordingParams,
        response: { 200: ShareInfo },
        description: "The live link's dates; 404 when there is none (revoked or expired).",
      },
    },
    async (request) => services.shares.get(currentUser(request).id, request.params.bot_id),
  );

  app.delete(
    "/recordings/:bot_id/share",
    {
      schema: {
        operationId: "revokeShare",
        summary: "Revoke a recording's public link",
        params: RecordingParams,
        response: { 204: z.null().describe("revoked") },
      },
    },
    async (request, reply) => {
      await services.shares.revoke(currentUser(request).id, request.params.bot_id);
      return reply.code(204).send(null);
    },
  );
};

/**
 * Public: the token is the credential (rate limited per client address by the caller). The token
 * is in the path, so these routes log nothing below "warn".
 */
export const sharedRecordingRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (
  app,
  { services },
) => {
  app.get(
    "/share/:token",
    {
      logLevel: "warn",
      schema: {
        operationId: "getSharedRecording",
        summary: "A shared recording, by its link's token",
        security: [],
        params: TokenParams,
        response: { 200: SharedRecording },
        description:
          "With `Accept: text/html`, a page with a player; otherwise JSON. Unknown, expired and " +
          "revoked tokens are the same 404.",
      },
    },
    async (request, reply) => {
      const shared = await services.shares.view(request.params.token);
      if (!wantsHtml(request.headers.accept)) return shared;
      // A string with a non-JSON Content-Type is sent as is, past the JSON schema typed here.
      const page = sharePage(shared, request.params.token) as unknown as SharedRecording;
      return reply.headers(SHARE_PAGE_HEADERS).send(page);
    },
  );

  app.get(
    "/share/:token/stream",
    {
      logLevel: "warn",
      schema: {
        operationId: "getSharedRecordingStream",
        summary: "Stream a shared recording's MP4",
        security: [],
        params: TokenParams,
        description: MEDIA_DESCRIPTION,
        file: { types: MEDIA_TYPES, ranges: true },
      },
    },
    async (request, reply) => {
      const file = await services.shares.open(request.params.token, rangeRequest(request.headers));
      return sendRecording(request, reply, file);
    },
  );
};
