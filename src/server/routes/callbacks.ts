import type { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  CallbackEvent,
  CommandPoll,
  MAX_COMMAND_POLL_WAIT_S,
  LoginSessionWriteBack,
  LoginSessionWriteBackResult,
  MAX_SESSION_BYTES,
} from "../../core/index.js";
import { bearerToken } from "../auth/guard.js";
import { MAX_INTEGER_COLUMN } from "../db/database.js";
import { documentCallbackAuth } from "../http/openapi.js";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../errors.js";
import { AccountSession, ArtifactSaved, CallbackResult, Recording, SegmentSaved } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { MAX_RECORDING_BYTES } from "../services/recordings.js";
import { ARTIFACT_NAME, MAX_ARTIFACT_BYTES } from "../storage/artifacts.js";
import { IdParam, integerPathParam, toValidationIssue } from "../validation.js";

/** A day of 1-second segments many times over; a bound, so a seq is never an unbounded number. */
const MAX_SEGMENT_SEQ = 10_000_000;

const BotParams = z.object({ id: IdParam });
const ArtifactParams = z.object({
  id: IdParam,
  name: z.string().regex(ARTIFACT_NAME, "must be 1-64 of a-z 0-9 . _ - (starting with a letter or digit)"),
});
/** A runner's poll that names no wait waits this long (seconds). */
const DEFAULT_POLL_WAIT_S = 25;
const PollQuery = z.object({
  wait: integerPathParam(0, MAX_COMMAND_POLL_WAIT_S)
    .optional()
    .describe(
      `How long to wait for a command when there is none, in whole seconds; default ${DEFAULT_POLL_WAIT_S}`,
    ),
});
// Any text: an id no clip can have is a clip not found (404), like an unknown one.
const ClipParams = z.object({ id: IdParam, clipId: z.string() });
const ImageParams = z.object({ id: IdParam, imageId: z.string() });
const SegmentParams = z.object({
  id: IdParam,
  // Canonical decimal only: no empty seq read as 0, no `0x10` read as 16, no `1e3`, no leading zeros.
  seq: integerPathParam(0, MAX_SEGMENT_SEQ),
});
const CompleteBody = z.object({
  segments: z
    .number()
    .int()
    .min(1)
    .max(MAX_SEGMENT_SEQ + 1)
    .describe("How many segments were sent: seq 0 to segments-1"),
});

const UploadHeaders = z.looseObject({
  "x-recording-duration-ms": z
    .string()
    .regex(/^[0-9]{1,10}$/, "must be a non-negative integer (milliseconds)")
    .transform(Number)
    .refine((n) => n <= MAX_INTEGER_COLUMN, `must be at most ${MAX_INTEGER_COLUMN}`),
});

/** The write-back's session must sign in (at least one cookie), as an uploaded one must. */
const LoginSessionBody = LoginSessionWriteBack.extend({ session: AccountSession });

const isMp4 = (contentType: string | undefined) => /^video\/mp4\s*(;|$)/i.test(contentType ?? "");

/**
 * An upload that declares more than `limit` bytes is refused before any of it is read (one
 * without a Content-Length is still cut off at the limit while it streams in).
 */
function refuseDeclaredOver(request: FastifyRequest, limit: number): void {
  const declared = Number(request.headers["content-length"]);
  if (declared > limit) {
    throw new PayloadTooLargeError(`Upload declares ${declared} bytes; the limit is ${limit}`, true);
  }
}

/**
 * What runners call: event reports and the recording upload. Public in the spec; we require the
 * bot's own callback token (`Authorization: Bearer <token>`), checked before the body is read.
 */
export const callbackRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.addHook("onRequest", async (request) => {
    const id = IdParam.safeParse((request.params as { id?: unknown }).id);
    if (!id.success)
      throw new ValidationError(
        id.error.issues.map((i) => toValidationIssue("path", { ...i, path: ["id"] })),
      );
    await services.callbacks.authenticate(id.data, bearerToken(request.headers.authorization));
  });
  app.addHook("onRoute", documentCallbackAuth);

  // The upload body is handed to the route as the raw request stream, never buffered.
  app.addContentTypeParser("video/mp4", (_request, payload, done) => done(null, payload));

  app.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));

  app.put(
    "/bot-callbacks/:id/artifacts/:name",
    {
      bodyLimit: MAX_ARTIFACT_BYTES,
      onRequest: async (request) => {
        if (!/^application\/octet-stream\s*(;|$)/i.test(request.headers["content-type"] ?? ""))
          throw new UnsupportedMediaTypeError("application/octet-stream");
        refuseDeclaredOver(request, MAX_ARTIFACT_BYTES);
      },
      schema: {
        operationId: "uploadBotArtifact",
        summary: "Runner: upload a failure artifact (screenshot, page HTML, trace)",
        params: ArtifactParams,
        response: { 201: ArtifactSaved },
      },
    },
    async (request, reply) => {
      const saved = await services.artifacts.save(
        request.params.id,
        request.params.name,
        request.body as Readable,
      );
      reply.code(201);
      return saved;
    },
  );

  app.post(
    "/bot-callbacks/:id/event",
    {
      schema: {
        operationId: "reportBotEvent",
        summary: "Runner: report a lifecycle event",
        params: BotParams,
        body: CallbackEvent,
        response: { 200: CallbackResult },
      },
    },
    async (request) => services.callbacks.apply(request.params.id, request.body),
  );

  app.get(
    "/bot-callbacks/:id/commands",
    {
      schema: {
        operationId: "pollBotCommands",
        summary: "Runner: the commands not yet done (a long poll)",
        description:
          "Every command of the bot without a result yet, oldest first (queued ones become `sent`). With " +
          "none, the answer waits up to `wait` seconds for one. A command stays in every answer until the " +
          "runner reports its result (a `command.result` event), so the runner runs each `commandId` once and, given it again, resends " +
          "the result it has.",
        params: BotParams,
        querystring: PollQuery,
        response: { 200: CommandPoll },
      },
    },
    async (request) => {
      // The wait ends early when the runner goes away (its socket closes).
      const gone = new AbortController();
      request.raw.once("close", () => gone.abort());
      const waitS = request.query.wait ?? DEFAULT_POLL_WAIT_S;
      return services.commands.poll(request.params.id, waitS * 1000, gone.signal);
    },
  );

  app.get(
    "/bot-callbacks/:id/output-clips/:clipId",
    {
      schema: {
        operationId: "fetchOutputClip",
        summary: "Runner: fetch a sound to play (a play_audio command's clip)",
        description:
          "The clip a `play_audio` command names: a WAV, 48 kHz, mono, 16-bit, rendered by the server. " +
          "404 for a clip that is not this bot's (or no longer kept: the bot has ended).",
        params: ClipParams,
        file: { types: ["audio/wav"], ranges: false },
      },
    },
    async (request, reply) => {
      const clip = await services.voice.openClip(request.params.id, request.params.clipId);
      reply.header("content-type", "audio/wav").header("content-length", clip.size);
      return reply.send(clip.stream);
    },
  );

  app.get(
    "/bot-callbacks/:id/output-images/:imageId",
    {
      schema: {
        operationId: "fetchOutputImage",
        summary: "Runner: fetch a picture to show (show_image, output.image)",
        description:
          "The picture a `show_image` command or the bot's `output.image` names: a PNG of at most 1280x720, " +
          "made by the server. 404 for a picture that is not this bot's (or no longer kept: the bot has ended).",
        params: ImageParams,
        file: { types: ["image/png"], ranges: false },
      },
    },
    async (request, reply) => {
      const image = await services.picture.openImage(request.params.id, request.params.imageId);
      reply.header("content-type", "image/png").header("content-length", image.size);
      return reply.send(image.stream);
    },
  );

  app.put(
    "/bot-callbacks/:id/login-session",
    {
      bodyLimit: MAX_SESSION_BYTES,
      schema: {
        operationId: "writeBackLoginSession",
        summary: "Runner: write back the login's session as the browser has it now",
        description:
          "Platforms rotate cookies: a runner that ends its call cleanly sends its browser's storage state " +
          "back, before its last status report. Kept (`kept: true`) only while the account's stored session " +
          "is still the one this bot was given at deploy (or last wrote back itself); a newer upload or " +
          "another bot's newer write-back wins (`kept: false`). 409 for a bot deployed without a login.",
        params: BotParams,
        body: LoginSessionBody,
        response: { 200: LoginSessionWriteBackResult },
      },
    },
    async (request) => services.botAccounts.writeBack(request.params.id, request.body),
  );

  app.put(
    "/bot-callbacks/:id/recording",
    {
      bodyLimit: MAX_RECORDING_BYTES,
      // Before any parser runs: a JSON parser with this route's body limit would buffer the upload.
      onRequest: async (request) => {
        if (!isMp4(request.headers["content-type"])) throw new UnsupportedMediaTypeError("video/mp4");
        refuseDeclaredOver(request, MAX_RECORDING_BYTES);
      },
      schema: {
        operationId: "uploadRecording",
        summary: "Runner: upload the meeting's MP4",
        params: BotParams,
        headers: UploadHeaders,
        response: { 201: Recording },
      },
    },
    async (request, reply) => {
      const recording = await services.recordings.upload(
        request.params.id,
        request.body as Readable,
        request.headers["x-recording-duration-ms"],
      );
      reply.code(201);
      return recording;
    },
  );

  app.put(
    "/bot-callbacks/:id/recording/segments/:seq",
    {
      bodyLimit: MAX_RECORDING_BYTES,
      onRequest: async (request) => {
        if (!isMp4(request.headers["content-type"])) throw new UnsupportedMediaTypeError("video/mp4");
        refuseDeclaredOver(request, MAX_RECORDING_BYTES);
      },
      schema: {
        operationId: "uploadRecordingSegment",
        summary: "Runner: upload one segment of the recording during the call",
        description:
          "Segment `seq` (from 0) is the next byte range of the runner's fragmented MP4, ending on a box boundary. " +
          "The same seq again replaces it; segments may arrive in any order.",
        params: SegmentParams,
        response: { 201: SegmentSaved },
      },
    },
    async (request, reply) => {
      const saved = await services.segments.save(
        request.params.id,
        request.params.seq,
        request.body as Readable,
      );
      reply.code(201);
      return saved;
    },
  );

  app.post(
    "/bot-callbacks/:id/recording/complete",
    {
      schema: {
        operationId: "completeRecording",
        summary: "Runner: the segments are all sent; store them as the recording",
        description:
          "Joins segments 0 to segments-1 into one faststart MP4, stores it as the bot's recording " +
          "(`recording.ready`) and removes the segments. 409 when any of them is missing.",
        params: BotParams,
        body: CompleteBody,
        response: { 201: Recording },
      },
    },
    async (request, reply) => {
      const recording = await services.segments.complete(request.params.id, request.body.segments);
      reply.code(201);
      return recording;
    },
  );
};
