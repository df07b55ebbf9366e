/**
 * A configuration or environment problem the operator fixes: `meetbot serve` reports it as one
 * line, no stack. Its own module, so that config.ts, auth/ and db/ can all throw it without
 * importing each other.
 */
export class StartupError extends Error {
  override name = "StartupError";
}
