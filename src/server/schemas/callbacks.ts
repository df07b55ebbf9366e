import { z } from "zod";
import { BotStatus } from "../../core/index.js";

export const CallbackResult = z.object({
  applied: z.boolean(),
  duplicate: z.boolean().optional(),
  status: BotStatus,
});
export type CallbackResult = z.infer<typeof CallbackResult>;

/** A runner's artifact as stored. */
export const ArtifactSaved = z.object({ name: z.string(), sizeBytes: z.number().int() });
/** A segment of a recording as stored. */
export const SegmentSaved = z.object({ seq: z.number().int(), sizeBytes: z.number().int() });
