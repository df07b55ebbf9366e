import { z } from "zod";
import { OutputOptions } from "../../core/index.js";

/** A picture for the bot's camera, sent as a file or in a data URL: at most 5 MiB. */
export const MAX_OUTPUT_IMAGE_BYTES = 5 * 1024 ** 2;

/** The longest data URL holding MAX_OUTPUT_IMAGE_BYTES: its prefix and the bytes in base64. */
export const MAX_IMAGE_DATA_URL_CHARS =
  "data:image/jpeg;base64,".length + Math.ceil(MAX_OUTPUT_IMAGE_BYTES / 3) * 4;

/** `data:image/png;base64,...` or `data:image/jpeg;base64,...`: how a picture travels in JSON. */
export const ImageDataUrl = z
  .string()
  .max(MAX_IMAGE_DATA_URL_CHARS, `must hold at most ${MAX_OUTPUT_IMAGE_BYTES} bytes`)
  .regex(
    /^data:image\/(png|jpeg);base64,[A-Za-z0-9+/]+={0,2}$/,
    "must be a data URL of a PNG or a JPEG: data:image/png;base64,... or data:image/jpeg;base64,...",
  );

/**
 * The output option as a request gives it (POST and PATCH /v1/bots): the picture as a data URL.
 * Answers show what the server made of it (core OutputOptions: `image` names the stored PNG).
 */
export const OutputOptionsBody = z.object({
  keepMicOn: OutputOptions.shape.keepMicOn,
  image: ImageDataUrl.optional().describe(
    `a picture the bot's camera shows from its join on (ours): a PNG or JPEG of at most ${MAX_OUTPUT_IMAGE_BYTES} bytes as a data URL; ` +
      "stored as a PNG of at most 1280x720, which answers name as `{imageId, width, height}`",
  ),
});
export type OutputOptionsBody = z.infer<typeof OutputOptionsBody>;
