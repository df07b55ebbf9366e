import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { ApiKeyList, CreateApiKeyBody, CreatedApiKey } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const ApiKeyParams = z.object({ id: IdParam });

/** Authenticated (the guard is added by the enclosing plugin). */
export const apiKeyRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/api-keys",
    {
      schema: {
        operationId: "createApiKey",
        summary: "Create an API key",
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKey },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return services.apiKeys.create(currentUser(request).id, request.body);
    },
  );

  app.get(
    "/api-keys",
    { schema: { operationId: "listApiKeys", summary: "List your API keys", response: { 200: ApiKeyList } } },
    async (request) => services.apiKeys.list(currentUser(request).id),
  );

  // 204 like every deletion (spec §7); the key stays listed with isRevoked true.
  app.delete(
    "/api-keys/:id",
    {
      schema: {
        operationId: "revokeApiKey",
        summary: "Revoke an API key",
        params: ApiKeyParams,
        response: { 204: z.null().describe("Revoked") },
      },
    },
    async (request, reply) => {
      await services.apiKeys.revoke(currentUser(request).id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
