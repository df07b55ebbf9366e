import { randomBytes } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { ScheduleConfig } from "../config.js";
import { toIso } from "../db/database.js";
import type { Database, DialectName } from "../db/schema.js";
import { PollingWorker } from "../durable/polling-worker.js";
import type { BotService } from "./bots.js";
import type { ServiceContext } from "./context.js";

/**
 * Scheduled bots (bot option joinAt): one durable task on the polling worker, its rows the bots
 * themselves.
 *
 *   READY_TO_DEPLOY, join_at set ──claim (lease) at join_at − lead──▶ deploy (as POST /deploy)
 *                                       └── more than the grace after join_at ──▶ FATAL SCHEDULE_MISSED
 *
 * The claim is a conditional UPDATE of the bot row (FOR UPDATE SKIP LOCKED on PostgreSQL), and the
 * deploy's own READY_TO_DEPLOY → DEPLOYING update is conditional on that claim: however many
 * server processes run, a bot is deployed once; a PATCH of joinAt (or a deploy by hand) in the
 * meantime voids the claim. A process that dies holding a claim leaves it to run out; the next
 * claim (any process, or this one restarted) deploys the bot then, or fails it if too late.
 */

/** A claim not acted on within this long (its process died) is taken again. */
export const SCHEDULE_LEASE_MS = 60_000;

export interface ClaimedSchedule {
  id: number;
  join_at: string;
  schedule_claim_token: string;
}

/**
 * Claims up to `limit` scheduled bots whose deploy time (join_at − lead) has come and whose
 * claim, if any, ran out; the soonest first.
 */
export async function claimDueSchedules(
  db: Kysely<Database>,
  dialect: DialectName,
  opts: { now: Date; limit: number; leadMs: number; leaseMs: number },
): Promise<ClaimedSchedule[]> {
  const now = toIso(opts.now);
  // join_at is stored in toISOString's one form (join-at.ts), so the texts compare as the times do.
  const dueBy = toIso(new Date(opts.now.getTime() + opts.leadMs));
  const rows = await db
    .updateTable("bots")
    .set({
      schedule_claim_token: randomBytes(12).toString("hex"),
      schedule_lease_until: toIso(new Date(opts.now.getTime() + opts.leaseMs)),
    })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("bots as b")
        .select("b.id")
        // Checked on the row itself too: PostgreSQL re-checks it on a row another process claimed
        // or deployed since this statement's snapshot, and skips it.
        .where(
          sql<boolean>`b.status = 'READY_TO_DEPLOY' and b.join_at is not null and b.join_at <= ${dueBy}
            and (b.schedule_lease_until is null or b.schedule_lease_until <= ${now})`,
        )
        .orderBy("b.join_at")
        .limit(opts.limit)
        .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returning(["id", "join_at", "schedule_claim_token"])
    .execute();
  return (rows as ClaimedSchedule[]).sort((a, b) => a.join_at.localeCompare(b.join_at));
}

/**
 * The schedule's worker: deploys each bot it claims, or fails it SCHEDULE_MISSED when its time
 * passed more than the grace ago. The app starts it where the job worker runs; tests call runDue().
 */
export function scheduleWorker(
  ctx: ServiceContext,
  bots: BotService,
  settings: ScheduleConfig,
): PollingWorker<ClaimedSchedule> {
  return new PollingWorker({
    name: "schedule worker",
    log: ctx.log,
    claim: (limit) =>
      claimDueSchedules(ctx.db, ctx.dialect, {
        now: ctx.now(),
        limit,
        leadMs: settings.leadMs,
        leaseMs: SCHEDULE_LEASE_MS,
      }),
    run: (claimed) => deployOrMiss(ctx, bots, settings, claimed),
    // Launches are short (a process, a container request): a few at once.
    concurrency: 4,
    pollIntervalMs: settings.pollIntervalMs,
  });
}

async function deployOrMiss(
  ctx: ServiceContext,
  bots: BotService,
  settings: ScheduleConfig,
  claimed: ClaimedSchedule,
): Promise<void> {
  const botId = claimed.id;
  const lateMs = ctx.now().getTime() - new Date(claimed.join_at).getTime();
  if (lateMs > settings.graceMs) {
    const message = `the bot was to join at ${claimed.join_at}, but no server could deploy it until ${Math.round(lateMs / 1000)} s later`;
    const failed = await bots.failFromServer(botId, "SCHEDULE_MISSED", message, {
      scheduleClaim: claimed.schedule_claim_token,
    });
    if (failed) ctx.log.warn({ botId, joinAt: claimed.join_at }, "scheduled bot missed its time");
    return;
  }
  try {
    const started = await bots.deployScheduled(botId, claimed.schedule_claim_token);
    if (started) ctx.log.info({ botId, joinAt: claimed.join_at }, "scheduled bot deployed");
  } catch (err) {
    // The deploy left the bot FATAL with the reason (LAUNCH_FAILED, LOGIN_UNAVAILABLE).
    ctx.log.warn({ botId, reason: (err as Error).message }, "scheduled bot could not be deployed");
  }
}
