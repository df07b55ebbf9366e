import type { MeetingInfo } from "../../core/platform.js";
import type { BotStatus } from "../../core/status.js";

/** What the dashboard calls each platform of the API (`meetingInfo.platform`). */
export const PLATFORM_LABELS: Record<MeetingInfo["platform"], string> = {
  google: "Google Meet",
  zoom: "Zoom",
  teams: "Microsoft Teams",
};

/** Statuses in which a runner may be alive: the ones POST /v1/bots/{id}/kill accepts. */
export const RUNNING: readonly BotStatus[] = [
  "DEPLOYING",
  "JOINING_CALL",
  "IN_WAITING_ROOM",
  "IN_CALL",
  "CALL_ENDED",
];
/** Statuses DELETE /v1/bots/{id} accepts. */
export const DELETABLE: readonly BotStatus[] = ["READY_TO_DEPLOY", "DONE", "FATAL"];

/**
 * The live events that are a bot's new status (the others, RECORDING, are not): DEPLOYING is
 * never streamed, it is the answer of the deploy itself.
 */
const STATUS_EVENTS: readonly string[] = RUNNING.filter((s) => s !== "DEPLOYING").concat(["DONE", "FATAL"]);

export function isStatusEvent(eventType: string): eventType is BotStatus {
  return STATUS_EVENTS.includes(eventType);
}

/** A bot's statuses only move forward (core's transition table): the later of two is the newer. */
const ORDER: readonly BotStatus[] = ["READY_TO_DEPLOY", ...RUNNING, "DONE", "FATAL"];

export function laterStatus(a: BotStatus, b: BotStatus | undefined): BotStatus {
  return b !== undefined && ORDER.indexOf(b) > ORDER.indexOf(a) ? b : a;
}

/** Where the bot goes: the meeting link, or the ids it was given instead. */
export function MeetingPlace({ info }: { info: MeetingInfo }) {
  if (info.meetingUrl) {
    return (
      <a href={info.meetingUrl} target="_blank" rel="noreferrer noopener" class="meeting-link">
        {info.meetingUrl}
      </a>
    );
  }
  const ids = [
    ["Meeting ID", info.meetingId],
    ["Passcode", info.meetingPassword ? "••••" : undefined],
    ["Tenant", info.tenantId],
    ["Organizer", info.organizerId],
  ].filter((pair): pair is [string, string] => Boolean(pair[1]));
  return (
    <span>
      {ids.map(([name, value]) => (
        <span key={name} class="meeting-id">
          {name} <code>{value}</code>
        </span>
      ))}
    </span>
  );
}
