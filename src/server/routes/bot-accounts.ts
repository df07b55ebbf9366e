import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import {
  BotAccount,
  BotAccountList,
  BotAccountListQuery,
  CreateBotAccountBody,
  UpdateBotAccountBody,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const AccountParams = z.object({ id: IdParam });

/**
 * Authenticated (the guard is added by the enclosing plugin). Another user's account is a 404,
 * like one that does not exist. No answer ever carries a session.
 */
export const botAccountRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const accounts = services.botAccounts;

  app.post(
    "/bot-accounts",
    {
      schema: {
        operationId: "createBotAccount",
        summary: "Store a signed-in platform account for bots to join as",
        description:
          "The session is a Playwright storage state (at most 1 MiB of JSON), stored encrypted with the " +
          "operator's MEETBOT_SECRET_KEY; 503 when none is set.",
        body: CreateBotAccountBody,
        response: { 201: BotAccount },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return accounts.create(currentUser(request).id, request.body);
    },
  );

  app.get(
    "/bot-accounts",
    {
      schema: {
        operationId: "listBotAccounts",
        summary: "List your bot accounts",
        querystring: BotAccountListQuery,
        response: { 200: BotAccountList },
      },
    },
    async (request) => accounts.list(currentUser(request).id, request.query),
  );

  app.get(
    "/bot-accounts/:id",
    {
      schema: {
        operationId: "getBotAccount",
        summary: "A bot account and where it stands",
        params: AccountParams,
        response: { 200: BotAccount },
      },
    },
    async (request) => accounts.get(currentUser(request).id, request.params.id),
  );

  app.patch(
    "/bot-accounts/:id",
    {
      schema: {
        operationId: "updateBotAccount",
        summary: "Rename, regroup, disable or enable a bot account, or give it a new session",
        params: AccountParams,
        body: UpdateBotAccountBody,
        response: { 200: BotAccount },
      },
    },
    async (request) => accounts.update(currentUser(request).id, request.params.id, request.body),
  );

  // 409 while a bot holds it.
  app.delete(
    "/bot-accounts/:id",
    {
      schema: {
        operationId: "deleteBotAccount",
        summary: "Delete a bot account no bot is using",
        params: AccountParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await accounts.remove(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
