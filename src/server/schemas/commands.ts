import { z } from "zod";
import { COMMAND_STATUSES, CommandError, CommandKind } from "../../core/index.js";
import { Timestamp } from "./common.js";

/** A command to a running bot (POST /v1/bots/{id}/leave, ...), as every command route answers it. */
export const Command = z.object({
  commandId: z.number().int(),
  botId: z.number().int(),
  kind: CommandKind,
  status: z
    .enum(COMMAND_STATUSES)
    .describe(
      "queued: stored; sent: the runner has it; done / failed: the runner's answer (or the deadline's)",
    ),
  error: CommandError.nullable().describe("why it failed; null unless failed"),
  result: z.record(z.string(), z.unknown()).nullable().describe("what the runner answered when done"),
  createdAt: Timestamp,
  sentAt: Timestamp.nullable(),
  deadlineAt: Timestamp.describe(
    "not done by then: failed DEADLINE_EXCEEDED (done after all if the runner's late result shows it finished in time)",
  ),
  completedAt: Timestamp.nullable(),
});
export type Command = z.infer<typeof Command>;
