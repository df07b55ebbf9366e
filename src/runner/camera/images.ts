import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { type BotConfig, outputImageUrl } from "../../core/index.js";
import { pictureFormatOf } from "../../media/picture.js";
import { fetchOutput } from "../voice/clips.js";

/** The server's pictures are at most 1280x720 RGBA: under 4 MB even uncompressed. */
const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

/**
 * Fetches a picture the server made (core OutputImage) through `dir`; answers its bytes. Bytes
 * from the server are still checked: a PNG of a sane size, or the picture is refused.
 */
export async function fetchImage(
  config: Pick<BotConfig, "botId" | "callback">,
  imageId: string,
  dir: string,
  log: Logger,
): Promise<Buffer> {
  const path = join(dir, `${imageId}.png`);
  try {
    await fetchOutput(config, outputImageUrl(config, imageId), path, MAX_IMAGE_BYTES, log);
    const png = await readFile(path);
    if (pictureFormatOf(png) !== "png") throw new Error(`picture ${imageId} is not a PNG`);
    return png;
  } finally {
    // Kept in memory by the page's camera: the file has served.
    await rm(path, { force: true });
  }
}
