/** A configuration or environment problem the operator fixes: reported as one line, no stack. */
export class StartupError extends Error {
  override name = "StartupError";
}
