import type { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { currentUser } from "../auth/guard.js";
import { PayloadTooLargeError, UnsupportedMediaTypeError } from "../errors.js";
import { Command } from "../schemas/index.js";
import type { Services } from "../services/index.js";
import { IdParam } from "../validation.js";

/** The media type of a Content-Type header, without its parameters, in lower case. */
export const mediaType = (header: string | undefined) =>
  (header ?? "").split(";")[0]?.trim().toLowerCase() ?? "";

/**
 * A file upload's onRequest hook: before any parser runs, and before a byte of the body is read,
 * another Content-Type is a 415 and a declared length over `limit` a 413 (one that does not
 * declare it is cut off at the route's bodyLimit).
 */
export function fileUploadGate(types: readonly string[], limit: number) {
  return async (request: FastifyRequest): Promise<void> => {
    if (!types.includes(mediaType(request.headers["content-type"]))) {
      throw new UnsupportedMediaTypeError(`one of ${types.join(", ")}`);
    }
    const declared = Number(request.headers["content-length"]);
    if (declared > limit) {
      throw new PayloadTooLargeError(`Upload declares ${declared} bytes; the limit is ${limit}`, true);
    }
  };
}

/**
 * POST /bots/{id}/<file route>: a route whose body is one file (of `types`, read as the format
 * each names, at most `limit` bytes) that answers 202 with the command `queue` made of it. The
 * file reaches `queue` as the raw request stream, never buffered. A plugin of its own: register
 * it in its own scope, so only this route takes such files (the others answer 415 to anything
 * but JSON).
 */
export function fileCommandRoute<F>(opts: {
  url: string;
  /** The media types taken (the Content-Type's, parameters aside), each with the format it is read as. */
  types: Readonly<Record<string, F>>;
  /** What the scope's body parser takes: the types above (the gate refuses the rest before it). */
  parser: RegExp;
  limit: number;
  schema: { operationId: string; summary: string; description: string; file: string };
  queue: (services: Services, userId: number, botId: number, format: F, body: Readable) => Promise<Command>;
}): FastifyPluginAsyncZod<{ services: Services }> {
  const names = Object.keys(opts.types);
  return async (app, { services }) => {
    app.addContentTypeParser(opts.parser, (_request, payload, done) => done(null, payload));
    app.post(
      opts.url,
      {
        bodyLimit: opts.limit,
        onRequest: fileUploadGate(names, opts.limit),
        schema: {
          operationId: opts.schema.operationId,
          summary: opts.schema.summary,
          description: opts.schema.description,
          params: z.object({ id: IdParam }),
          upload: { types: names, description: opts.schema.file },
          response: { 202: Command },
        },
      },
      async (request, reply) => {
        const format = opts.types[mediaType(request.headers["content-type"])];
        if (format === undefined) throw new UnsupportedMediaTypeError(`one of ${names.join(", ")}`);
        const userId = currentUser(request).id;
        const command = await opts.queue(
          services,
          userId,
          request.params.id,
          format,
          request.body as Readable,
        );
        reply.code(202);
        return command;
      },
    );
  };
}
