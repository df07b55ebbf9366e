/**
 * The API paths the server hands out inside its answers and configs (stored in a bot's
 * deploymentError, given to a runner, signed into a download link). One place, so a route that
 * moves moves here too.
 */

/** Where the owner reads a bot's failure artifact (what deploymentError.artifacts lists). */
export function artifactPath(botId: number, name: string): string {
  return `/v1/bots/${botId}/artifacts/${name}`;
}

/** Where a bot's runner uploads its recording. */
export function recordingUploadPath(botId: number): string {
  return `/v1/bot-callbacks/${botId}/recording`;
}

/** The file behind a signed download link (the query carries expires and signature). */
export function recordingFilePath(botId: number): string {
  return `/v1/recordings/${botId}/file`;
}

/** A recording's public share page (HTML for a browser, JSON otherwise); the token is the credential. */
export function sharePath(token: string): string {
  return `/v1/share/${token}`;
}

/** The recording behind a share link, with Range. */
export function shareStreamPath(token: string): string {
  return `${sharePath(token)}/stream`;
}
