import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { renderTranscript, TRANSCRIPT_CONTENT_TYPES } from "../../intelligence/transcript-formats.js";
import { currentUser } from "../auth/guard.js";
import { TranscribeBody, Transcript, TranscriptFormatQuery, TranscriptJobStatus } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ bot_id: IdParam });

const GET_DESCRIPTION =
  "Who said what: utterances with their speaker (from the platform's speaking indicator), times in ms " +
  "from the recording's start, and their words. `?format=txt|srt|vtt` answers the same as text. " +
  "404 saying why while there is none yet (queued, processing or failed: see /status); while a new " +
  "one is being made, the previous one with the new one's status.";

/** A bot's transcript: start, follow, read, delete. */
export const transcriptRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/transcripts/:bot_id/transcribe",
    {
      schema: {
        operationId: "transcribeRecording",
        summary: "Start transcribing a bot's recording",
        params: BotParams,
        body: TranscribeBody,
        response: { 202: TranscriptJobStatus },
        description:
          "Queues a transcript of the recording (replacing a finished one). 404 without a recording, " +
          "409 while one is queued or processing, 422 for an engine this server has not configured.",
      },
    },
    async (request, reply) => {
      const status = await services.transcripts.request(
        currentUser(request).id,
        request.params.bot_id,
        request.body,
      );
      return reply.code(202).send(status);
    },
  );

  app.get(
    "/transcripts/:bot_id/status",
    {
      schema: {
        operationId: "getTranscriptStatus",
        summary: "Where a bot's transcript stands",
        params: BotParams,
        response: { 200: TranscriptJobStatus },
      },
    },
    async (request) => services.transcripts.status(currentUser(request).id, request.params.bot_id),
  );

  const getTranscript = (operationId: string, summary: string) => ({
    schema: {
      operationId,
      summary,
      params: BotParams,
      querystring: TranscriptFormatQuery,
      response: { 200: Transcript },
      description: GET_DESCRIPTION,
    },
  });
  const answerTranscript = async (
    userId: number,
    botId: number,
    format: z.infer<typeof TranscriptFormatQuery>["format"],
  ) => {
    const transcript = await services.transcripts.get(userId, botId);
    if (format === "json") return { transcript };
    return {
      text: renderTranscript(format, transcript.utterances),
      contentType: TRANSCRIPT_CONTENT_TYPES[format],
    };
  };

  // The spec's recordings group names the same transcript under the recording.
  const routes = [
    ["/transcripts/:bot_id", getTranscript("getTranscript", "A bot's transcript: who said what, and when")],
    [
      "/recordings/:bot_id/transcription",
      getTranscript(
        "getRecordingTranscription",
        "The recording's transcript (same as GET /transcripts/{bot_id})",
      ),
    ],
  ] as const;
  for (const [url, options] of routes) {
    app.get(url, options, async (request, reply) => {
      const answer = await answerTranscript(
        currentUser(request).id,
        request.params.bot_id,
        request.query.format,
      );
      if ("transcript" in answer) return answer.transcript;
      // A string is sent as it is: the response schema serializes the JSON answer only.
      return reply.type(answer.contentType).send(answer.text as never);
    });
  }

  app.delete(
    "/transcripts/:bot_id",
    {
      schema: {
        operationId: "deleteTranscript",
        summary: "Delete a bot's transcript",
        params: BotParams,
        response: { 204: z.null().describe("deleted") },
        description:
          "Deletes the transcript and stops one being made; a summary already made stays, one waiting for this transcript goes.",
      },
    },
    async (request, reply) => {
      await services.transcripts.remove(currentUser(request).id, request.params.bot_id);
      return reply.code(204).send(null);
    },
  );
};
