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

  // Pause and resume: commands like leave. Idempotent on the runner: a pause of a paused recording
  // (or a resume of a running one) is done and changes nothing (its result says `changed: false`),
  // so a retry after a lost answer is safe. Each ask is its own command (no reuse of an open one):
  // pause, resume, pause asked quickly must end paused, in that order (one lane in the runner).
  for (const [kind, path, operationId, summary, description] of [
    [
      "pause_recording",
      "/bots/:id/pause-recording",
      "pauseRecording",
      "Pause a bot's recording",
      "Nothing is recorded until the recording resumes: the file, the live transcript and the speaker " +
        "timeline leave the paused time out (the file has no gap: the paused part is simply not there), " +
        "and the silence timeout does not count it. The bot stays in the call. The event " +
        "`RECORDING_PAUSED` and the webhook `recording.paused` follow once the recording has stopped. " +
        "409 unless the bot is `IN_CALL`; a pause of a paused recording is done and changes nothing.",
    ],
    [
      "resume_recording",
      "/bots/:id/resume-recording",
      "resumeRecording",
      "Resume a bot's paused recording",
      "The recording goes on where it paused (`RECORDING_RESUMED`, webhook `recording.resumed`, once " +
        "the first frame is recorded again). 409 unless the bot is `IN_CALL`; a resume of a recording " +
        "that is not paused is done and changes nothing.",
    ],
  ] as const) {
    app.post(
      path,
      {
        schema: { operationId, summary, description, params: BotParams, response: { 202: Command } },
      },
      async (request, reply) => {
        const command = await services.commands.queue(
          currentUser(request).id,
          request.params.id,
          kind,
          {},
          ["IN_CALL"],
          { reuseOpen: false },
        );
        reply.code(202);
        return command;
      },
    );
  }

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
