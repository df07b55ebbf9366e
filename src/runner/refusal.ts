import { AbortError } from "p-retry";

/**
 * The error for a control-plane answer that was not a success. A client error other than 429 (our
 * own bug, a refused upload, a bot that has ended) cannot change by asking again, so p-retry stops
 * at it (AbortError); a 5xx or a 429 is retried.
 */
export function refusal(message: string, statusCode: number): Error {
  const failure = new Error(message);
  return statusCode >= 400 && statusCode < 500 && statusCode !== 429 ? new AbortError(failure) : failure;
}
