import type { FastifyRequest } from "fastify";
import { PayloadTooLargeError, UnsupportedMediaTypeError } from "../errors.js";

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
