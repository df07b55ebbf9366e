import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { Command } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ id: IdParam });
const CommandParams = z.object({ id: IdParam, commandId: IdParam });

/**
 * Commands to a running bot (authenticated by the enclosing plugin). Each answers 202 with the
 * command, stored until the bot's runner acknowledges it; GET follows it to `done` or `failed`.
 */
export const commandRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/bots/:id/leave",
    {
      schema: {
        operationId: "leaveCall",
        summary: "Ask a bot in a call to leave it now",
        description:
          "The bot leaves (`CALL_ENDED` with subCode `LEFT_ON_REQUEST`), uploads its recording and ends " +
          "`DONE`: unlike kill, nothing is lost. 409 unless the bot is `IN_CALL`. Asked again while the " +
          "first leave is open, answers that command.",
        params: BotParams,
        response: { 202: Command },
      },
    },
    async (request, reply) => {
      const command = await services.commands.queue(
        currentUser(request).id,
        request.params.id,
        "leave",
        {},
        ["IN_CALL"],
        { reuseOpen: true },
      );
      reply.code(202);
      return command;
    },
  );

  app.get(
    "/bots/:id/screenshot",
    {
      schema: {
        operationId: "getBotScreenshot",
        summary: "What a running bot's meeting page shows now (a PNG)",
        description:
          "The bot takes a screenshot of its page (a `screenshot` command) and the answer is that PNG, with " +
          "`X-Screenshot-Taken-At`. From the bot's first join step until it leaves (`JOINING_CALL`, " +
          "`IN_WAITING_ROOM`, `IN_CALL`); otherwise 409. At most one screenshot a second per bot: an ask " +
          "within a second of the last screenshot gets that one, and asks while one is on its way wait for " +
          "it. 504 when the bot does not answer within 15 s, 502 when it could not take one.",
        params: BotParams,
        file: { types: ["image/png"], ranges: false },
      },
    },
    async (request, reply) => {
      const shot = await services.screenshots.take(currentUser(request).id, request.params.id);
      reply
        .header("content-type", "image/png")
        .header("content-length", shot.png.length)
        .header("cache-control", "no-store")
        .header("x-screenshot-taken-at", shot.takenAt);
      return reply.send(shot.png);
    },
  );

  app.get(
    "/bots/:id/commands/:commandId",
    {
      schema: {
        operationId: "getBotCommand",
        summary: "A command to a bot, and where it stands",
        params: CommandParams,
        response: { 200: Command },
      },
    },
    async (request) =>
      services.commands.get(currentUser(request).id, request.params.id, request.params.commandId),
  );
};
