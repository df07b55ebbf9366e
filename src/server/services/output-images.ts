import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import type { OutputImage } from "../../core/index.js";
import { normalizePicture, type PictureFormat, UndecodablePictureError } from "../../media/picture.js";
import { NotFoundError, ValidationError } from "../errors.js";
import { MAX_OUTPUT_IMAGE_BYTES } from "../schemas/picture.js";
import { CLIP_ID, newClipId, type OutputClipStore } from "../storage/output-clips.js";

/**
 * Makes a picture for a bot's camera out of a user's PNG or JPEG (media/picture.ts: checked,
 * decoded, written again as a PNG of at most 1280x720) and keeps it with the bot's clips
 * (`<outputs>/<botId>/<imageId>.png`, swept when the bot ends or is deleted), for its runner to
 * fetch. Work happens in a temporary directory, so a picture that fails leaves nothing behind.
 */
export class OutputImages {
  constructor(private readonly store: OutputClipStore) {}

  /**
   * Runs `use` with a fresh temporary directory, removed afterwards whatever happened. A picture
   * made in it (`normalize`) stays the caller's until `keep` moves it to a bot.
   */
  async inTemporaryDir<T>(use: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(tmpdir(), "meetbot-picture-"));
    try {
      return await use(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * The camera's PNG made from `input` (read as `format` only), in `dir`. Rejects with a 422 at
   * `loc` saying why when the bytes are not that format or do not decode.
   */
  async normalize(
    input: string,
    format: PictureFormat,
    dir: string,
    loc: (string | number)[],
  ): Promise<{ png: string; width: number; height: number }> {
    const png = path.join(dir, "camera.png");
    try {
      return { png, ...(await normalizePicture(input, format, png)) };
    } catch (err) {
      if (err instanceof UndecodablePictureError) {
        throw new ValidationError([
          { loc, msg: `Cannot show this picture: ${err.message}`, type: "value_error" },
        ]);
      }
      throw err;
    }
  }

  /**
   * A data URL's picture (the bot option output.image; ImageDataUrl checked its form) as a file
   * in `dir`, with the format its media type names. 422 at `loc` past MAX_OUTPUT_IMAGE_BYTES.
   */
  async fromDataUrl(
    dataUrl: string,
    dir: string,
    loc: (string | number)[],
  ): Promise<{ file: string; format: PictureFormat }> {
    const comma = dataUrl.indexOf(",");
    const format: PictureFormat = dataUrl.startsWith("data:image/png;") ? "png" : "jpeg";
    const bytes = Buffer.from(dataUrl.slice(comma + 1), "base64");
    if (bytes.length > MAX_OUTPUT_IMAGE_BYTES) {
      throw new ValidationError([
        {
          loc,
          msg: `The picture has ${bytes.length} bytes; the limit is ${MAX_OUTPUT_IMAGE_BYTES}`,
          type: "value_error",
        },
      ]);
    }
    const file = path.join(dir, `upload.${format}`);
    await writeFile(file, bytes);
    return { file, format };
  }

  /**
   * Copies a picture made by `normalize` to the bot's outputs (the temporary directory may be on
   * another file system); answers what names it.
   */
  async keep(
    botId: number,
    picture: { png: string; width: number; height: number },
    imageId = newClipId(),
  ): Promise<OutputImage> {
    await this.store.write(botId, imageId, (part) => copyFile(picture.png, part), "png");
    return { imageId, width: picture.width, height: picture.height };
  }

  async remove(botId: number, imageId: string): Promise<void> {
    await this.store.remove(botId, imageId, "png");
  }

  /** 404 unless the bot has this picture. */
  async open(botId: number, imageId: string): Promise<{ stream: Readable; size: number }> {
    const image = CLIP_ID.test(imageId) ? await this.store.open(botId, imageId, "png") : null;
    if (!image) throw new NotFoundError("Image not found");
    return image;
  }
}
