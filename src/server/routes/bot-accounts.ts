import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AccountCheckReport, MAX_SESSION_BYTES } from "../../core/index.js";
import { bearerToken, currentUser } from "../auth/guard.js";
import { documentCallbackAuth } from "../http/openapi.js";
import {
  BotAccount,
  BotAccountCheckQueued,
  BotAccountCheckResult,
  CheckBotAccountBody,
  BotAccountList,
  BotAccountListQuery,
  CreateBotAccountBody,
  UpdateBotAccountBody,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { ValidationError } from "../errors.js";
import { IdParam, toValidationIssue } from "../validation.js";

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

  // 202: a runner checks the session; the answer lands on the account and in bot_account.checked.
  app.post(
    "/bot-accounts/:id/check",
    {
      schema: {
        operationId: "checkBotAccount",
        summary: "Check that a bot account's session still signs in",
        description:
          "Queues a check: a short runner opens the meeting with the session and reports whether its " +
          "pre-join shows the account. The result is on the account (status, lastCheckedAt, " +
          "accountName, accountEmail) and in the webhook bot_account.checked. 409 for a disabled " +
          "account or while a check of it is queued or running.",
        params: AccountParams,
        body: CheckBotAccountBody,
        response: { 202: BotAccountCheckQueued },
      },
    },
    async (request, reply) => {
      reply.code(202);
      return services.accountChecks.request(currentUser(request).id, request.params.id, request.body);
    },
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

/**
 * What a check's runner calls, with the check's own token (`Authorization: Bearer <token>`):
 * public like the bot callbacks, registered outside the user guard.
 */
export const accountCheckCallbackRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (
  app,
  { services },
) => {
  app.addHook("onRoute", documentCallbackAuth);
  app.post(
    "/bot-account-checks/:id/result",
    {
      bodyLimit: MAX_SESSION_BYTES + 16_384,
      // The token is checked before the body is read.
      onRequest: async (request) => {
        const id = IdParam.safeParse((request.params as { id?: unknown }).id);
        if (!id.success)
          throw new ValidationError(
            id.error.issues.map((i) => toValidationIssue("path", { ...i, path: ["id"] })),
          );
        await services.accountChecks.authenticate(id.data, bearerToken(request.headers.authorization));
      },
      schema: {
        operationId: "reportBotAccountCheck",
        summary: "Runner: report whether a bot account's session signed in",
        params: AccountParams,
        body: AccountCheckReport,
        response: { 200: BotAccountCheckResult },
      },
    },
    async (request) => services.accountChecks.report(request.params.id, request.body),
  );
};
