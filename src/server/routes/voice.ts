import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { Command, SpeakBody } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { MAX_OUTPUT_AUDIO_BYTES, OUTPUT_AUDIO_TYPES } from "../services/voice.js";
import { IdParam } from "../validation.js";
import { fileCommandRoute } from "./uploads.js";

const BotParams = z.object({ id: IdParam });

/** POST /bots/{id}/output-audio. */
const outputAudioUpload = fileCommandRoute({
  url: "/bots/:id/output-audio",
  types: OUTPUT_AUDIO_TYPES,
  parser: /^(audio\/|application\/ogg)/i,
  limit: MAX_OUTPUT_AUDIO_BYTES,
  schema: {
    operationId: "playOutputAudio",
    summary: "Play an audio file in the meeting",
    description:
      `The body is the file (WAV, MP3 or OGG, as its Content-Type says; at most ${MAX_OUTPUT_AUDIO_BYTES} ` +
      "bytes). The server decodes it into a clip and queues a `play_audio` command (202): `payload` " +
      '`{clipId, durationMs, source: "upload"}`. A file that cannot be decoded, has no audio or is empty is 422 ' +
      "saying why, and nothing is queued; another Content-Type is 415; a larger file 413; 409 unless the bot is `IN_CALL`.",
    file: "The audio file",
  },
  queue: (services, userId, botId, format, body) => services.voice.playUpload(userId, botId, format, body),
});

/**
 * A bot that speaks (authenticated by the enclosing plugin): text it says, files it plays, and
 * stopping them. Each is a command (202) like /chat; the sounds play one after another.
 */
export const voiceRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post(
    "/bots/:id/speak",
    {
      schema: {
        operationId: "speak",
        summary: "Say something in the meeting",
        description:
          "The server renders the text as speech with its engine (flite, or an OpenAI-compatible server: " +
          "MEETBOT_TTS_ENGINE), then queues a `play_audio` command (202) with the clip: " +
          '`payload` `{clipId, durationMs, source: "speak", text}`. Sounds play one after another. ' +
          'An unknown voice is 422 at `["body","voice"]`; the engine failing is 502; 409 unless the bot is `IN_CALL`.',
        params: BotParams,
        body: SpeakBody,
        response: { 202: Command },
      },
    },
    async (request, reply) => {
      const { text, voice } = request.body;
      const command = await services.voice.speak(currentUser(request).id, request.params.id, text, voice);
      reply.code(202);
      return command;
    },
  );

  // Its own scope: only this route takes a file (the others answer 415 to anything but JSON).
  await app.register(outputAudioUpload, { services });

  app.delete(
    "/bots/:id/output-audio",
    {
      schema: {
        operationId: "stopOutputAudio",
        summary: "Stop the sound playing and drop those queued",
        description:
          "A `stop_audio` command (202): the runner stops what plays now and drops the sounds queued " +
          "behind it, which fail `OUTPUT_STOPPED`. 409 unless the bot is `IN_CALL`.",
        params: BotParams,
        response: { 202: Command },
      },
    },
    async (request, reply) => {
      const command = await services.voice.stop(currentUser(request).id, request.params.id);
      reply.code(202);
      return command;
    },
  );
};
