import { z } from "zod";

export const BOT_STATUSES = [
  "READY_TO_DEPLOY",
  "DEPLOYING",
  "JOINING_CALL",
  "IN_WAITING_ROOM",
  "IN_CALL",
  "CALL_ENDED",
  "DONE",
  "FATAL",
] as const;
export const BotStatus = z.enum(BOT_STATUSES);
export type BotStatus = z.infer<typeof BotStatus>;

export const TERMINAL_STATUSES: readonly BotStatus[] = ["DONE", "FATAL"];

/** Statuses in which a runner process may be alive. */
export const RUNNING_STATUSES: readonly BotStatus[] = [
  "DEPLOYING",
  "JOINING_CALL",
  "IN_WAITING_ROOM",
  "IN_CALL",
  "CALL_ENDED",
];

/**
 * The one transition table. The server accepts a status reported by a runner (or set by itself)
 * only when it is listed here for the current status. FATAL is reachable from every
 * non-terminal status, which the table spells out rather than special-cases.
 */
export const TRANSITIONS: Record<BotStatus, readonly BotStatus[]> = {
  READY_TO_DEPLOY: ["DEPLOYING"],
  DEPLOYING: ["JOINING_CALL", "FATAL"],
  JOINING_CALL: ["IN_WAITING_ROOM", "IN_CALL", "FATAL"],
  IN_WAITING_ROOM: ["IN_CALL", "FATAL"],
  IN_CALL: ["CALL_ENDED", "FATAL"],
  CALL_ENDED: ["DONE", "FATAL"],
  DONE: [],
  FATAL: [],
};

export function canTransition(from: BotStatus, to: BotStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isTerminal(status: BotStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * Why a bot left the call (with CALL_ENDED) or failed (with FATAL). Typed so that clients can
 * branch on them; `bot.error` webhooks carry them as `code`.
 */
export const SUB_CODES = [
  // CALL_ENDED
  "MEETING_ENDED",
  "REMOVED",
  "EVERYONE_LEFT",
  // Everyone left in the call is a bot (a notetaker, by name): automaticLeave.onlyBotsTimeout.
  "ONLY_BOTS_LEFT",
  "NO_ONE_JOINED",
  "MAX_DURATION",
  "SILENCE",
  "LEFT_ON_REQUEST",
  // FATAL
  "JOIN_FAILED",
  "ADMISSION_DENIED",
  "WAITING_ROOM_TIMEOUT",
  "MEETING_NOT_FOUND",
  "BLOCKED",
  // Signed-in bots (src/core/login.ts). SIGN_IN_REQUIRED: the meeting admits signed-in people
  // only and the bot has no login (or one in mode only_if_required that did not get it in).
  "SIGN_IN_REQUIRED",
  // The platform's bot wall ("We detected you may be a bot", a captcha): never evaded.
  "BOT_BLOCKED",
  // The login's session no longer signs in (a sign-in page, "Verify it's you"): the server marks
  // its account expired.
  "SESSION_EXPIRED",
  // Set by the server at deploy: no account of the bot's login was free (all in use, disabled
  // or expired); the runner never ran. Or by the runner: the account is already in the call and
  // the platform offers only to move that session here (Meet's "Switch here"), never taken.
  "LOGIN_UNAVAILABLE",
  "BAD_PASSCODE",
  "HOST_NOT_STARTED",
  "BROWSER_CRASHED",
  "BROWSER_LAUNCH_FAILED",
  "MEDIA_SETUP_FAILED",
  "RECORDING_FAILED",
  "UPLOAD_FAILED",
  "HEARTBEAT_TIMEOUT",
  "LAUNCH_TIMEOUT",
  "LAUNCH_FAILED",
  // The runner's container or Pod could not run (launchers other than local: src/server/launcher/).
  "IMAGE_PULL_FAILED",
  "OUT_OF_MEMORY",
  "EVICTED",
  "UNSCHEDULABLE",
  "KILLED",
  // Set by the server: a scheduled bot's joinAt passed (no server ran) longer ago than the grace.
  "SCHEDULE_MISSED",
  "INTERNAL_ERROR",
] as const;
export const SubCode = z.enum(SUB_CODES);
export type SubCode = z.infer<typeof SubCode>;
