import type { FastifyBaseLogger } from "fastify";
import { ServiceUnavailableError } from "../errors.js";
import { StorageUnavailableError } from "../storage/unavailable.js";

/**
 * A store's failure as the API answers it: a 503 the client may retry (a runner's upload does),
 * logged here with its cause, which the 503 itself does not carry. Any other error is returned as is.
 */
export function unlessStoreFailed(
  err: unknown,
  what: "Recording" | "Artifact",
  log: FastifyBaseLogger,
  context: Record<string, unknown>,
): unknown {
  if (!(err instanceof StorageUnavailableError)) return err;
  log.warn({ err, ...context }, `${what.toLowerCase()} storage failed`);
  return new ServiceUnavailableError(`${what} storage is unavailable; try again later`);
}
