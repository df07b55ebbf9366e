import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { OUTPUT_IMAGE_MAX_HEIGHT, OUTPUT_IMAGE_MAX_WIDTH } from "../../core/index.js";
import { currentUser } from "../auth/guard.js";
import { Command, MAX_OUTPUT_IMAGE_BYTES } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { OUTPUT_IMAGE_TYPES } from "../services/picture.js";
import { IdParam } from "../validation.js";
import { fileCommandRoute } from "./uploads.js";

const BotParams = z.object({ id: IdParam });

/** POST /bots/{id}/output-image. */
const outputImageUpload = fileCommandRoute({
  url: "/bots/:id/output-image",
  types: OUTPUT_IMAGE_TYPES,
  parser: /^image\//i,
  limit: MAX_OUTPUT_IMAGE_BYTES,
  schema: {
    operationId: "showOutputImage",
    summary: "Show a picture on the bot's camera",
    description:
      `The body is the picture (PNG or JPEG, as its Content-Type says; at most ${MAX_OUTPUT_IMAGE_BYTES} bytes). ` +
      `The server decodes it into a PNG of at most ${OUTPUT_IMAGE_MAX_WIDTH}x${OUTPUT_IMAGE_MAX_HEIGHT} ` +
      "(scaled down to fit, its proportions kept) and queues a `show_image` command (202): `payload` " +
      "`{imageId, width, height}`. The runner turns the bot's camera on, showing it, until another picture " +
      "or DELETE. A file that is not the type it says or does not decode is 422 saying why, and nothing is " +
      "queued; another Content-Type is 415; a larger file 413; 409 unless the bot is `IN_CALL`.",
    file: "The picture",
  },
  queue: (services, userId, botId, format, body) => services.picture.show(userId, botId, format, body),
});

/** The bot's camera (authenticated by the enclosing plugin): a picture shown, and the camera off. */
export const pictureRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  // Its own scope: only this route takes a picture (the others answer 415 to anything but JSON).
  await app.register(outputImageUpload, { services });

  app.delete(
    "/bots/:id/output-image",
    {
      schema: {
        operationId: "hideOutputImage",
        summary: "Turn the bot's camera off",
        description:
          "A `hide_image` command (202): the runner turns the bot's camera off (the picture shown by " +
          "POST /output-image or the bot option output.image goes). 409 unless the bot is `IN_CALL`.",
        params: BotParams,
        response: { 202: Command },
      },
    },
    async (request, reply) => {
      const command = await services.picture.hide(currentUser(request).id, request.params.id);
      reply.code(202);
      return command;
    },
  );
};
