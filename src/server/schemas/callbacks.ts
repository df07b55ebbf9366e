import { z } from "zod";
import { BotStatus } from "../../core/index.js";

export const CallbackResult = z.object({
  applied: z.boolean(),
  duplicate: z.boolean().optional(),
  status: BotStatus,
});
export type CallbackResult = z.infer<typeof CallbackResult>;
