import { rm } from "node:fs/promises";
import path from "node:path";
import { type DataDeletionReason, recordingDeletedWebhookEvent } from "../../core/index.js";
import { parseJson, toIso } from "../db/database.js";
import { BotNotFoundError, ConflictError, NotFoundError } from "../errors.js";
import type { DeploymentError } from "../schemas/index.js";
import { OutputClipStore } from "../storage/output-clips.js";
import { enqueueWebhookEvents } from "../webhooks/outbox.js";
import { appendLog, lockBot } from "./bot-state.js";
import { expireCallbackToken } from "./callback-token.js";
import type { ServiceContext } from "./context.js";

/** Statuses in which nothing more can arrive for a bot: its data may be deleted. */
const ENDED_STATUSES = ["DONE", "FATAL"];

/**
 * Webhook deliveries whose payload carries what was said or written in the meeting: they go with
 * the data (a delivery log must not keep what the deletion removed). The others (statuses,
 * participants, recording figures) stay with the bot's events.
 */
const CONTENT_EVENTS = [
  "transcript.partial",
  "transcript.final",
  "chat.message",
  "summary.ready",
  // The notes interface's (src/notes/webhooks.ts).
  "meeting.completed",
  "action_items.detected",
];

/** Who may delete, and what must hold (see deleteBotData). */
export interface DeletionGuard {
  /** The owner asking: another user's bot is a 404, as a missing one; a running bot a 409. */
  userId?: number;
  /** DELETE /v1/recordings/{bot_id}: a 404 "Recording not found" when there is none (left). */
  recordingRequired?: boolean;
  /** The retention sweep's claim: nothing is deleted unless it is still the bot's. */
  retentionClaim?: string;
}

export interface DeletionResult {
  /** False when the data was deleted before (or the sweep's claim was lost): no second webhook. */
  deleted: boolean;
  dataDeletedAt: string | null;
}

/**
 * The one deletion of a bot's meeting data (docs/design.md: everything a meeting produces), for
 * DELETE /v1/recordings/{bot_id}, POST /v1/bots/{id}/delete-data and the retention sweep. In one
 * transaction: the recording row (its share link, transcript, summary and their jobs go by ON
 * DELETE CASCADE; a running job loses its claim and stores nothing), the speaker timeline, the
 * live transcript and live events, the chat, the commands (what the bot was told to say), the
 * webhook deliveries that carry content; the bot gets `data_deleted_at`, its callback token ends
 * (a runner still winding down may send nothing more), its deploymentError loses the artifacts,
 * and `recording.deleted` is queued. Then the files, local or S3: the recording, its segments and
 * any upload in flight, the failure artifacts, the clips it played, the runner's work dir. The
 * bot, its status, events and logs stay. Nothing comes back: uploads, segments and the salvage at
 * startup refuse a bot with `data_deleted_at` (recordings.ts, recording-segments.ts).
 */
export class BotDataService {
  constructor(private readonly ctx: ServiceContext) {}

  async deleteBotData(
    botId: number,
    reason: DataDeletionReason,
    guard: DeletionGuard = {},
  ): Promise<DeletionResult> {
    const outcome = await this.ctx.db.transaction().execute(async (trx) => {
      const bot = await lockBot(trx, this.ctx.dialect, botId);
      if (!bot || (guard.userId !== undefined && bot.user_id !== guard.userId)) throw new BotNotFoundError();
      if (guard.retentionClaim !== undefined && bot.retention_claim_token !== guard.retentionClaim)
        return { deleted: false, dataDeletedAt: bot.data_deleted_at };
      if (!ENDED_STATUSES.includes(bot.status)) return { refused: bot.status };
      if (guard.recordingRequired) {
        const recording = await trx
          .selectFrom("recordings")
          .select("bot_id")
          .where("bot_id", "=", botId)
          .executeTakeFirst();
        if (!recording) throw new NotFoundError("Recording not found");
      }
      if (bot.data_deleted_at !== null) return { deleted: false, dataDeletedAt: bot.data_deleted_at };
      const now = toIso(this.ctx.now());
      await trx.deleteFrom("recordings").where("bot_id", "=", botId).execute();
      for (const table of [
        "speaker_changes",
        "live_events",
        "live_utterances",
        "chat_messages",
        "bot_commands",
      ] as const)
        await trx.deleteFrom(table).where("bot_id", "=", botId).execute();
      await trx
        .deleteFrom("webhook_deliveries")
        .where("bot_id", "=", botId)
        .where("event", "in", CONTENT_EVENTS)
        .execute();
      const failure = parseJson<DeploymentError>(bot.deployment_error);
      await trx
        .updateTable("bots")
        .set({
          data_deleted_at: now,
          retention_claim_token: null,
          retention_lease_until: null,
          ...(failure?.artifacts
            ? { deployment_error: JSON.stringify({ code: failure.code, message: failure.message }) }
            : {}),
        })
        .where("id", "=", botId)
        .execute();
      await expireCallbackToken(trx, botId, now);
      await appendLog(trx, botId, "info", `meeting data deleted (${REASON_TEXT[reason]})`, now);
      const queued = await enqueueWebhookEvents(
        trx,
        bot,
        [recordingDeletedWebhookEvent(botId, reason)],
        now,
        now,
      );
      return { deleted: true, dataDeletedAt: now, queued };
    });
    if ("refused" in outcome)
      throw new ConflictError(
        `Meeting data can only be deleted once the bot has ended (status is ${outcome.refused})`,
      );
    if ("queued" in outcome && (outcome.queued ?? 0) > 0) this.ctx.outbox.notify();
    // After a deletion, and again on a repeated one: files that resisted get another try.
    if (outcome.dataDeletedAt !== null) await this.removeFiles(botId);
    return { deleted: outcome.deleted, dataDeletedAt: outcome.dataDeletedAt };
  }

  /** The rows are gone, so nothing serves these files any more; one that resists is only logged. */
  private async removeFiles(botId: number): Promise<void> {
    const removals = await Promise.allSettled([
      this.ctx.store.remove(botId),
      this.ctx.artifactStore.removeAll(botId),
      new OutputClipStore(this.ctx.config.paths.outputs).removeAll(botId),
      // The runner's work dir (local launcher): its spool and, had it not uploaded, its recording.
      rm(path.join(this.ctx.config.paths.bots, String(botId), "work"), { recursive: true, force: true }),
    ]);
    for (const result of removals)
      if (result.status === "rejected")
        this.ctx.log.warn({ err: result.reason, botId }, "could not remove a file of deleted meeting data");
  }
}

const REASON_TEXT: Record<DataDeletionReason, string> = {
  retention: "its retention ran out",
  request: "on request",
};
