import { randomBytes } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { RetentionConfig } from "../config.js";
import { toIso } from "../db/database.js";
import type { Database, DialectName } from "../db/schema.js";
import { PollingWorker } from "../durable/polling-worker.js";
import type { BotDataService } from "./bot-data.js";
import type { ServiceContext } from "./context.js";

/**
 * Retention: a bot's meeting data is deleted (bot-data.ts, reason "retention") once its
 * retention has passed since it ended: its own `retention.hours` (data_expires_at, set as it
 * ended), else the server's MEETBOT_RETENTION_HOURS, else never. One durable task on the polling
 * worker, its rows the bots: the claim is a conditional UPDATE with a lease (FOR UPDATE SKIP
 * LOCKED on PostgreSQL), and the deletion runs only while that claim is the bot's, so several
 * processes delete once; a process that dies mid-sweep leaves its claim to run out.
 */

/** A claim not acted on within this long (its process died) is taken again. */
export const RETENTION_LEASE_MS = 60_000;

export interface ClaimedDeletion {
  id: number;
  retention_claim_token: string;
}

/** Claims up to `limit` ended bots whose data is due for deletion at `now`, oldest ended first. */
export async function claimDueDeletions(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; defaultHours: number | undefined; leaseMs: number },
): Promise<ClaimedDeletion[]> {
  const now = toIso(opts.now);
  // The texts are toISOString's one form, so they compare as the times do.
  const own = sql<boolean>`(b.data_expires_at is not null and b.data_expires_at <= ${now})`;
  const due =
    opts.defaultHours === undefined
      ? own
      : sql<boolean>`(${own} or (b.retention_hours is null
          and b.ended_at <= ${toIso(new Date(opts.now.getTime() - opts.defaultHours * 3_600_000))}))`;
  const rows = await db
    .updateTable("bots")
    .set({
      retention_claim_token: randomBytes(12).toString("hex"),
      retention_lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
    })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("bots as b")
        .select("b.id")
        // Checked on the row itself too: PostgreSQL re-checks it on a row another process claimed
        // since this statement's snapshot, and skips it.
        .where(
          sql<boolean>`b.ended_at is not null and b.data_deleted_at is null and ${due}
            and (b.retention_lease_until is null or b.retention_lease_until <= ${now})`,
        )
        .orderBy("b.ended_at")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returning(["id", "retention_claim_token"])
    .execute();
  return rows as ClaimedDeletion[];
}

/**
 * The sweeper: deletes the data of each bot it claims, while the claim is still the bot's. The
 * app starts it where the job worker runs; tests call runDue().
 */
export function retentionWorker(
  ctx: ServiceContext,
  botData: BotDataService,
  settings: RetentionConfig,
): PollingWorker<ClaimedDeletion> {
  return new PollingWorker({
    name: "retention sweeper",
    log: ctx.log,
    claim: (limit) =>
      claimDueDeletions(ctx.db, ctx.dialect, {
        now: ctx.now(),
        limit,
        defaultHours: settings.hours,
        leaseMs: RETENTION_LEASE_MS,
      }),
    run: async (claimed) => {
      const { deleted } = await botData.deleteBotData(claimed.id, "retention", {
        retentionClaim: claimed.retention_claim_token,
      });
      if (deleted) ctx.log.info({ botId: claimed.id }, "meeting data deleted: its retention ran out");
    },
    // Deleting files (S3 requests) is I/O: a few at once.
    concurrency: 4,
    pollIntervalMs: settings.sweepIntervalMs,
  });
}
