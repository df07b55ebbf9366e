import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { PayloadTooLargeError } from "../errors.js";
import {
  Bot,
  BotDetail,
  BotList,
  BotListQuery,
  CreateBotBody,
  DeployResult,
  KillResult,
  MAX_IMAGE_DATA_URL_CHARS,
  UpdateBotBody,
} from "../schemas/index.js";
import { JSON_BODY_LIMIT } from "../http/api-server.js";
import type { Services } from "../services/index.js";
import { ARTIFACT_NAME } from "../storage/artifacts.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ id: IdParam });
const ArtifactParams = z.object({
  id: IdParam,
  name: z.string().regex(ARTIFACT_NAME, "not an artifact name"),
});
const ARTIFACT_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".html": "text/plain; charset=utf-8",
  ".zip": "application/zip",
};
/** For the API document, which lists media types without parameters. */
const ARTIFACT_MEDIA_TYPES = Object.values(ARTIFACT_TYPES).map((type) => type.split(";")[0] as string);

/** A bot's options, with room for the picture its camera may show (output.image, a data URL). */
const BOT_BODY_LIMIT = JSON_BODY_LIMIT + MAX_IMAGE_DATA_URL_CHARS;

/**
 * The rest of a bot's body is held to the 1 MiB of every JSON body: only a picture may take it
 * past that. Before validation, so a body too large answers 413 as it would without the room.
 */
async function onlyThePictureOverTheLimit(request: FastifyRequest): Promise<void> {
  const body = request.body as { output?: { image?: unknown } } | undefined;
  const size = Number(request.headers["content-length"]) || Buffer.byteLength(JSON.stringify(body ?? null));
  const picture = typeof body?.output?.image === "string" ? body.output.image.length : 0;
  if (size - picture > JSON_BODY_LIMIT) {
    const besides = picture > 0 ? ` (besides output.image, which may add ${MAX_IMAGE_DATA_URL_CHARS})` : "";
    throw new PayloadTooLargeError(`Request body is larger than ${JSON_BODY_LIMIT} bytes${besides}`);
  }
}

/** Authenticated (the guard is added by the enclosing plugin). */
export const botRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/bots",
    {
      bodyLimit: BOT_BODY_LIMIT,
      preValidation: onlyThePictureOverTheLimit,
      schema: {
        operationId: "createBot",
        summary: "Create a bot for a meeting",
        body: CreateBotBody,
        response: { 201: Bot },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return services.bots.create(currentUser(request).id, request.body);
    },
  );

  app.get(
    "/bots",
    {
      schema: {
        operationId: "listBots",
        summary: "List your bots",
        querystring: BotListQuery,
        response: { 200: BotList },
      },
    },
    async (request) => services.bots.list(currentUser(request).id, request.query),
  );

  app.get(
    "/bots/:id",
    {
      schema: {
        operationId: "getBot",
        summary: "A bot with its status",
        params: BotParams,
        response: { 200: BotDetail },
      },
    },
    async (request) => services.bots.get(currentUser(request).id, request.params.id),
  );

  // Only before deployment (READY_TO_DEPLOY); otherwise 409.
  app.patch(
    "/bots/:id",
    {
      bodyLimit: BOT_BODY_LIMIT,
      preValidation: onlyThePictureOverTheLimit,
      schema: {
        operationId: "updateBot",
        summary: "Change a bot before it is deployed",
        params: BotParams,
        body: UpdateBotBody,
        response: { 200: BotDetail },
      },
    },
    async (request) => services.bots.update(currentUser(request).id, request.params.id, request.body),
  );

  // Only in READY_TO_DEPLOY, DONE or FATAL; otherwise 409.
  app.delete(
    "/bots/:id",
    {
      schema: {
        operationId: "deleteBot",
        summary: "Delete a bot that is not running",
        params: BotParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await services.bots.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );

  // A failed bot's screenshot, page HTML or trace. The HTML was captured from a third-party page:
  // it is served as a download in a sandbox, never rendered as part of this origin.
  app.get(
    "/bots/:id/artifacts/:name",
    {
      schema: {
        operationId: "getBotArtifact",
        summary: "Download a failed bot's screenshot, page HTML or trace",
        params: ArtifactParams,
        file: { types: ARTIFACT_MEDIA_TYPES, ranges: false },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const file = await services.artifacts.open(currentUser(request).id, request.params.id, name);
      reply
        .header(
          "content-type",
          ARTIFACT_TYPES[name.slice(name.lastIndexOf("."))] ?? "application/octet-stream",
        )
        .header("content-length", file.size)
        .header("content-disposition", `attachment; filename="${name}"`)
        .header("content-security-policy", "sandbox")
        .header("x-content-type-options", "nosniff");
      return reply.send(file.stream);
    },
  );

  // Only once the bot has ended (DONE or FATAL); otherwise 409. Again on a deleted bot: 200, no change.
  app.post(
    "/bots/:id/delete-data",
    {
      schema: {
        operationId: "deleteBotData",
        summary: "Delete a bot's meeting data now (the bot and its events stay)",
        params: BotParams,
        response: { 200: BotDetail },
      },
    },
    async (request) => {
      const userId = currentUser(request).id;
      await services.botData.deleteBotData(request.params.id, "request", { userId });
      return services.bots.get(userId, request.params.id);
    },
  );

  app.post(
    "/bots/:id/deploy",
    {
      schema: {
        operationId: "deployBot",
        summary: "Send a bot into its meeting",
        params: BotParams,
        response: { 200: DeployResult },
      },
    },
    async (request) => services.bots.deploy(currentUser(request).id, request.params.id),
  );

  // Only while running (DEPLOYING … CALL_ENDED); otherwise 409.
  app.post(
    "/bots/:id/kill",
    {
      schema: {
        operationId: "killBot",
        summary: "Stop a running bot",
        params: BotParams,
        response: { 200: KillResult },
      },
    },
    async (request) => services.bots.kill(currentUser(request).id, request.params.id),
  );
};
