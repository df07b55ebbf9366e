import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { UnauthorizedError } from "../errors.js";
import { ProviderWebhookReceived } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

/**
 * Public: calls from transcription providers about a job this process runs, authenticated by the
 * secret header the job gave the provider (the body is not trusted: the engine reads the result
 * from the provider's API itself). Never rate limited: the provider's retries must get through.
 */
export const webhookReceiverRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (
  app,
  { services },
) => {
  app.post(
    "/webhook-receivers/assemblyai/:job_id",
    {
      schema: {
        operationId: "receiveAssemblyAiWebhook",
        summary: "AssemblyAI's transcript-completed webhook",
        security: [{ providerWebhookSecret: [] }],
        params: z.object({ job_id: IdParam }),
        body: z.unknown(),
        response: { 200: ProviderWebhookReceived },
        description:
          "AssemblyAI's transcript-completed webhook. 401, the same answer, without the job's secret " +
          "header and for a job this server process is not waiting for (its polling finds the result " +
          "anyway): the answer never tells whether a job exists.",
      },
    },
    async (request) => {
      const receipt = services.assemblyAiWebhooks.receive(request.params.job_id, request.headers);
      // One answer for both: a caller without the secret learns nothing about which jobs exist.
      if (receipt !== "accepted")
        throw new UnauthorizedError("No transcript job here is waiting for this webhook with this secret");
      return { received: true as const };
    },
  );
};
