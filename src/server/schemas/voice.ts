import { z } from "zod";

/** POST /v1/bots/{id}/speak. */
export const SpeakBody = z.strictObject({
  text: z.string().trim().min(1).max(4096).describe("What the bot says: 1 to 4096 characters, trimmed"),
  voice: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "The engine's voice: flite has awb, kal, kal16, rms (default), slt; openai takes its server's names (default alloy)",
    ),
});
