import { toIso } from "../db/database.js";
import { ValidationError } from "../errors.js";

/** A scheduled bot's joinAt is at least this far ahead: the server needs time to start its runner. */
export const MIN_JOIN_AHEAD_MS = 30_000;
/** ...and at most this far: a schedule months away is more likely a mistake than a plan. */
export const MAX_JOIN_AHEAD_MS = 90 * 24 * 60 * 60 * 1000;

/**
 * A bot's joinAt (already an ISO 8601 UTC timestamp by its schema) checked against the server's
 * clock, as stored: the canonical toISOString form, so that the schedule's claim can compare the
 * stored texts (services/schedules.ts). A 422 at body.joinAt when too soon or too far.
 */
export function checkJoinAt(joinAt: string, now: Date): string {
  const at = new Date(joinAt).getTime();
  const ahead = at - now.getTime();
  const problem =
    ahead < MIN_JOIN_AHEAD_MS
      ? `must be at least ${MIN_JOIN_AHEAD_MS / 1000} s ahead (the server's time is ${toIso(now)})`
      : ahead > MAX_JOIN_AHEAD_MS
        ? `must be at most ${MAX_JOIN_AHEAD_MS / 86_400_000} days ahead`
        : null;
  if (problem) throw new ValidationError([{ loc: ["body", "joinAt"], msg: problem, type: "value_error" }]);
  return toIso(new Date(at));
}
