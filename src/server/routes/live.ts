import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { sendEventStream } from "../http/event-stream-reply.js";
import {
  ChatMessageList,
  ChatMessageListQuery,
  Command,
  EventStreamHeaders,
  EventStreamQuery,
  SendChatBody,
} from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

const BotParams = z.object({ id: IdParam });

/** A bot's live meeting (authenticated by the enclosing plugin): its live stream and its chat. */
export const liveRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get(
    "/bots/:id/live",
    {
      schema: {
        operationId: "streamBotLive",
        summary: "One bot's meeting, live (server-sent events)",
        description: LIVE_DESCRIPTION,
        params: BotParams,
        querystring: EventStreamQuery,
        headers: EventStreamHeaders,
        stream: {
          type: "text/event-stream",
          description:
            "One SSE event per live event: `id:` its id, `event:` its type (status, participant.joined, " +
            "transcript.partial, chat.message, ...), `data:` the LiveEvent as JSON; `: ping` comments keep it open",
        },
      },
    },
    async (request, reply) => {
      const userId = currentUser(request).id;
      await services.bots.requireOwned(userId, request.params.id);
      const after = request.headers["last-event-id"] ?? request.query.since;
      const stream = await services.eventStreams.startLive(userId, request.params.id, after);
      return sendEventStream(reply, stream);
    },
  );

  app.get(
    "/bots/:id/chat-messages",
    {
      schema: {
        operationId: "listChatMessages",
        summary: "The meeting's chat as the bot read it",
        description: "Each message once, oldest first; the bot's own with `fromBot: true`.",
        params: BotParams,
        querystring: ChatMessageListQuery,
        response: { 200: ChatMessageList },
      },
    },
    async (request) => services.chat.list(currentUser(request).id, request.params.id, request.query),
  );

  app.post(
    "/bots/:id/chat",
    {
      schema: {
        operationId: "sendChatMessage",
        summary: "Send a message to the meeting's chat",
        description:
          "A command (202): done once the platform shows the message as sent. Over the platform's " +
          "length (Meet 500 characters, Zoom and Teams 4096) is a 422 before anything is sent; a bot " +
          "with no chat in the meeting (a Teams guest without chat rights) fails it CHAT_UNAVAILABLE. " +
          "409 unless the bot is IN_CALL.",
        params: BotParams,
        body: SendChatBody,
        response: { 202: Command },
      },
    },
    async (request, reply) => {
      const command = await services.chat.send(currentUser(request).id, request.params.id, request.body.text);
      reply.code(202);
      return command;
    },
  );
};

const LIVE_DESCRIPTION = [
  "Stays open and sends what happens in the bot's meeting as the runner reports it: statuses,",
  "participants joining and leaving, who is speaking, the live transcript (transcript.partial: the",
  "whole text so far of an utterance, replacing its last partial; transcript.final once it",
  "settled), the transcript's source, and chat messages. Without Last-Event-ID or `since`, from",
  "now on; with one, everything after that id first (a partial whose final came since is left",
  "out: the final replaces it), then live. Counted with the user's other streams (429 beyond).",
].join("\n");
