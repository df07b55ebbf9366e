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
