/**
 * The store refused or did not answer (S3 unreachable, bucket gone, credentials revoked): not the
 * client's fault, and worth trying again later. Services answer it with a 503, which a runner's
 * upload retries (a 4xx would make it give up on the recording).
 */
export class StorageUnavailableError extends Error {
  override name = "StorageUnavailableError";
}
