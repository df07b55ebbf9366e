import { setTimeout as sleep } from "node:timers/promises";
import type { Readable } from "node:stream";
import {
  type BotStatus,
  COMMAND_DEADLINE_MS,
  SCREENSHOT_ARTIFACT,
  ScreenshotResult,
} from "../../core/index.js";
import { BadGatewayError, ConflictError, GatewayTimeoutError } from "../errors.js";
import type { Command } from "../schemas/index.js";
import type { ArtifactService } from "./artifacts.js";
import type { BotService } from "./bots.js";
import type { CommandService } from "./commands.js";
import type { ServiceContext } from "./context.js";

/** A bot has a meeting page from its first join step until it leaves: the lobby is worth seeing. */
const WITH_A_PAGE: readonly BotStatus[] = ["JOINING_CALL", "IN_WAITING_ROOM", "IN_CALL"];
/**
 * The rate limit: a bot takes at most one screenshot a second, however many ask. An ask within
 * this of the last screenshot gets that one; asks while one is on its way wait for it.
 */
export const SCREENSHOT_FRESH_MS = 1_000;
/** How often a waiting ask looks at its command: the runner's answer comes as a report. */
const LOOK_EVERY_MS = 100;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface Screenshot {
  png: Buffer;
  takenAt: string;
}

/**
 * GET /v1/bots/{id}/screenshot: what a running bot's page shows now, through a `screenshot`
 * command (the runner shoots its page and uploads it as the artifact SCREENSHOT_ARTIFACT). The
 * bytes come from a runner: they are served only if they are a PNG.
 */
export class ScreenshotService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly commands: CommandService,
    private readonly artifacts: ArtifactService,
  ) {}

  async take(userId: number, botId: number): Promise<Screenshot> {
    const bot = await this.bots.requireOwned(userId, botId);
    if (!WITH_A_PAGE.includes(bot.status as BotStatus)) {
      throw new ConflictError(`Bot has no meeting page to show (status is ${bot.status})`);
    }
    // The last screenshot if it is fresh, else the one on its way, else a new one: one decision
    // under the bot's lock. Checked apart, an ask that found none fresh while the first was on its
    // way queued a second one when that completed meanwhile (seen on a loaded machine).
    const command = await this.commands.queue(userId, botId, "screenshot", {}, WITH_A_PAGE, {
      reuseOpen: true,
      reuseDoneSince: new Date(this.ctx.now().getTime() - SCREENSHOT_FRESH_MS),
    });
    return this.read(userId, botId, await this.outcome(userId, command));
  }

  /** Waits for the command's result (a report from the runner) until its deadline. */
  private async outcome(userId: number, command: Command): Promise<ScreenshotResult> {
    const until = Date.now() + COMMAND_DEADLINE_MS.screenshot + LOOK_EVERY_MS;
    let current = command;
    while (current.status !== "done" && current.status !== "failed" && Date.now() < until) {
      await sleep(LOOK_EVERY_MS);
      current = await this.commands.get(userId, command.botId, command.commandId);
    }
    if (current.status === "done") {
      const result = ScreenshotResult.safeParse(current.result);
      if (result.success) return result.data;
      throw new BadGatewayError("The bot answered the screenshot without a picture");
    }
    const code = current.error?.code;
    if (code === "NOT_IN_CALL" || code === "BOT_ENDED") {
      throw new ConflictError("Bot has no meeting page to show: it left the meeting");
    }
    if (current.status !== "failed" || code === "DEADLINE_EXCEEDED") {
      throw new GatewayTimeoutError("The bot did not send its screenshot in time");
    }
    throw new BadGatewayError(`The bot could not take a screenshot: ${current.error?.message ?? code}`);
  }

  private async read(userId: number, botId: number, result: ScreenshotResult): Promise<Screenshot> {
    const file = await this.artifacts.open(userId, botId, SCREENSHOT_ARTIFACT);
    const png = await buffer(file.stream);
    if (!png.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
      this.ctx.log.warn({ botId, sizeBytes: png.length }, "a runner's screenshot is not a PNG");
      throw new BadGatewayError("The bot's screenshot is not a PNG");
    }
    return { png, takenAt: result.takenAt };
  }
}

async function buffer(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
