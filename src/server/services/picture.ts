import path from "node:path";
import type { Readable } from "node:stream";
import type { BotStatus } from "../../core/index.js";
import type { PictureFormat } from "../../media/picture.js";
import { BadRequestError, ConflictError, PayloadTooLargeError, ValidationError } from "../errors.js";
import type { Command } from "../schemas/index.js";
import { MAX_OUTPUT_IMAGE_BYTES } from "../schemas/picture.js";
import { writeStreamAtomically } from "../storage/files.js";
import type { BotService } from "./bots.js";
import type { CommandService } from "./commands.js";
import type { OutputImages } from "./output-images.js";

/** The content types a picture may be sent as, and the one format each is read as. */
export const OUTPUT_IMAGE_TYPES: Readonly<Record<string, PictureFormat>> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
};

/** A bot's camera changes only in its call, as it plays sounds there. */
const IN_CALL: readonly BotStatus[] = ["IN_CALL"];

/**
 * The bot's camera in its call: POST /v1/bots/{id}/output-image shows a picture (a `show_image`
 * command: the runner fetches it and turns the camera on), DELETE turns the camera off
 * (`hide_image`). The bot option output.image does the same from the join on (BotService).
 */
export class PictureService {
  constructor(
    private readonly bots: BotService,
    private readonly commands: CommandService,
    private readonly images: OutputImages,
  ) {}

  /**
   * POST /v1/bots/{id}/output-image: the body (a PNG or JPEG, as its content type says) read to a
   * temporary file (at most MAX_OUTPUT_IMAGE_BYTES), made into the camera's picture and queued.
   * What cannot be shown is a 422, and nothing of it is kept.
   */
  async show(userId: number, botId: number, format: PictureFormat, body: Readable): Promise<Command> {
    const bot = await this.bots.requireOwned(userId, botId);
    if (!IN_CALL.includes(bot.status as BotStatus)) {
      throw new ConflictError(`Bot is not in a call (status is ${bot.status})`);
    }
    const image = await this.images.inTemporaryDir(async (dir) => {
      const upload = path.join(dir, `upload.${format}`);
      const { sizeBytes } = await receive(body, upload);
      if (sizeBytes === 0) {
        throw new ValidationError([{ loc: ["body"], msg: "The upload is empty", type: "value_error" }]);
      }
      return this.images.keep(botId, await this.images.normalize(upload, format, dir, ["body"]));
    });
    try {
      return await this.commands.queue(userId, botId, "show_image", image, IN_CALL, { reuseOpen: false });
    } catch (err) {
      await this.images.remove(botId, image.imageId);
      throw err;
    }
  }

  /** DELETE /v1/bots/{id}/output-image: the runner turns the camera off. */
  async hide(userId: number, botId: number): Promise<Command> {
    return this.commands.queue(userId, botId, "hide_image", {}, IN_CALL, { reuseOpen: false });
  }

  /** GET /v1/bot-callbacks/{id}/output-images/{imageId} (the runner's). */
  openImage(botId: number, imageId: string): Promise<{ stream: Readable; size: number }> {
    return this.images.open(botId, imageId);
  }
}

/** Streams the upload to `file`, cut off past the limit (one that declared more never gets here). */
async function receive(body: Readable, file: string): Promise<{ sizeBytes: number }> {
  const tooLarge = () => new PayloadTooLargeError(`Upload exceeds ${MAX_OUTPUT_IMAGE_BYTES} bytes`, true);
  try {
    return await writeStreamAtomically(body, file, MAX_OUTPUT_IMAGE_BYTES, tooLarge);
  } catch (err) {
    if (err instanceof PayloadTooLargeError) throw err;
    throw new BadRequestError("Upload was interrupted");
  }
}
