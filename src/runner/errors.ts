import type { SubCode } from "../core/index.js";

/** A failure the runner knows how to report: it ends the bot as FATAL with this subCode. */
export class BotFailure extends Error {
  constructor(
    readonly subCode: SubCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "BotFailure";
  }
}
