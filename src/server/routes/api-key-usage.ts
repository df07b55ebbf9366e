import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { ApiKeyUsage, ApiKeyUsageQuery } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const KeyParams = z.object({ id: IdParam });

/** Authenticated: one of the caller's API keys, from the API request log; another user's key is 404. */
export const apiKeyUsageRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/api-keys/:id/usage",
    {
      schema: {
        operationId: "getApiKeyUsage",
        summary: "An API key's request counts",
        params: KeyParams,
        querystring: ApiKeyUsageQuery,
        response: { 200: ApiKeyUsage },
      },
    },
    async (request) => services.apiLogs.keyUsage(currentUser(request).id, request.params.id, request.query),
  );
};
