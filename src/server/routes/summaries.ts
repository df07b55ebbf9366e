import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { SummarizeBody, Summary, SummaryJobStatus } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ bot_id: IdParam });

/** A bot's summary: start, follow, read, delete. */
export const summaryRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/summaries/:bot_id/summarize",
    {
      schema: {
        operationId: "summarizeRecording",
        summary: "Start summarizing a bot's transcript",
        params: BotParams,
        body: SummarizeBody,
        response: { 202: SummaryJobStatus },
        description:
          "Queues a summary of the transcript. Without a transcript it waits for one: the one being " +
          "made, or else one queued now with the server's default engine (a failed transcript fails " +
          "it). 404 without a recording, 409 while a summary is queued or processing.",
      },
    },
    async (request, reply) => {
      const status = await services.summaries.request(
        currentUser(request).id,
        request.params.bot_id,
        request.body,
      );
      return reply.code(202).send(status);
    },
  );

  app.get(
    "/summaries/:bot_id/status",
    {
      schema: {
        operationId: "getSummaryStatus",
        summary: "Where a bot's summary stands",
        params: BotParams,
        response: { 200: SummaryJobStatus },
      },
    },
    async (request) => services.summaries.status(currentUser(request).id, request.params.bot_id),
  );

  app.get(
    "/summaries/:bot_id",
    {
      schema: {
        operationId: "getSummary",
        summary: "A bot's summary: overview, key points, action items, decisions",
        params: BotParams,
        response: { 200: Summary },
        description:
          "404 saying why while there is none yet (queued, waiting for the transcript, processing, failed).",
      },
    },
    async (request) => services.summaries.get(currentUser(request).id, request.params.bot_id),
  );

  app.delete(
    "/summaries/:bot_id",
    {
      schema: {
        operationId: "deleteSummary",
        summary: "Delete a bot's summary",
        params: BotParams,
        response: { 204: z.null().describe("deleted") },
      },
    },
    async (request, reply) => {
      await services.summaries.remove(currentUser(request).id, request.params.bot_id);
      return reply.code(204).send(null);
    },
  );
};
