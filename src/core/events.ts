import { z } from "zod";
import { CommandResult } from "./commands.js";
import type { BotAccountStatus } from "./login.js";
import { type PauseSpan, recordingMsAt } from "./recording-clock.js";
import { BotStatus, SubCode } from "./status.js";
import { EXPLICIT_ONLY_WEBHOOK_EVENTS, WEBHOOK_EVENT_NAMES } from "./webhook-event-names.js";

/**
 * What a runner reports: one envelope per event, `seq` counting from 1 per bot so the server can
 * apply each exactly once however often the runner resends it.
 */
const envelope = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({
    // At most 2^31 - 1: the server keeps seq in an integer column.
    seq: z.number().int().positive().max(2_147_483_647),
    type: z.literal(type),
    eventTime: z.iso.datetime({ offset: true }),
    data,
  });

/** The longest participant name kept, in UTF-16 code units: a longer one is cut to it, never refused. */
export const PARTICIPANT_NAME_MAX = 300;
/** The longest participant id kept: a longer one is shortened by boundParticipantId, never refused. */
export const PARTICIPANT_ID_MAX = 200;

/**
 * A display name cut to `max` code units, the cut marked with "…" and never splitting a surrogate
 * pair. Names come from the meeting page, so anyone in the call picks them: an over-long one is
 * kept shortened rather than dropped with its event (which would leave that person out of the
 * participants and the speaker timeline).
 */
export function truncateName(name: string, max = PARTICIPANT_NAME_MAX): string {
  if (name.length <= max) return name;
  return `${cutAt(name, max - 1)}…`;
}

/**
 * A participant id of at most PARTICIPANT_ID_MAX code units. Ids are keys (an adapter may derive
 * them from names, as Zoom's `name:<name>` are), so a longer one keeps its start and ends with a
 * hash of the whole id: two long ids that differ anywhere stay two ids, and the same id always
 * comes out the same, so its joined, left and speaking events still match.
 */
export function boundParticipantId(id: string): string {
  if (id.length <= PARTICIPANT_ID_MAX) return id;
  const hash = fnv1a64(id);
  return `${cutAt(id, PARTICIPANT_ID_MAX - hash.length - 1)}~${hash}`;
}

/** The first `length` code units of `text`, one fewer when the last would be half a surrogate pair. */
function cutAt(text: string, length: number): string {
  const last = text.charCodeAt(length - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
}

/** FNV-1a, 64 bits, over UTF-16 code units: 16 hex digits (a key's fingerprint, not a secret). */
function fnv1a64(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

const Participant = z.object({
  participantId: z
    .string()
    .min(1)
    .overwrite(boundParticipantId)
    .describe(`The page's id for this person; one over ${PARTICIPANT_ID_MAX} characters is shortened`),
  participantName: z
    .string()
    .overwrite((name) => truncateName(name))
    .describe(`The display name; one over ${PARTICIPANT_NAME_MAX} characters is cut to that, not refused`),
});

export const LOG_LEVELS = ["info", "warn", "error"] as const;
export const LogLevel = z.enum(LOG_LEVELS);
export type LogLevel = z.infer<typeof LogLevel>;

export const StatusChangeEvent = envelope(
  "status",
  z.object({
    status: BotStatus,
    subCode: SubCode.optional(),
    message: z.string().max(2000).optional(),
    /** Where debugging artifacts (screenshot, page HTML) were kept, when the runner saved some. */
    artifacts: z.array(z.string().max(500)).max(20).optional(),
    /**
     * With IN_CALL: the name the bot joined under, as the meeting shows it: its display name, or
     * a signed-in account's own name (which the platform shows instead).
     */
    joinedAs: z.string().max(300).optional(),
  }),
);
export const ParticipantJoinedEvent = envelope("participant.joined", Participant);
export const ParticipantLeftEvent = envelope("participant.left", Participant);
export const RecordingStartedEvent = envelope(
  "recording.started",
  z.object({
    width: z.number().int(),
    height: z.number().int(),
    frameRate: z.number().int(),
    /** The wall-clock instant that is 0 s in the recording: speaker times are relative to it (less the pauses). */
    startedAt: z.iso.datetime({ offset: true }).optional(),
  }),
);
export const RecordingStoppedEvent = envelope(
  "recording.stopped",
  z.object({
    durationMs: z.number().int().nonnegative(),
    sizeBytes: z.number().int().nonnegative(),
    /** ffmpeg's own counters, summed over segments: frames written, dropped and duplicated. */
    frames: z.number().int().nonnegative().optional(),
    droppedFrames: z.number().int().nonnegative().optional(),
    duplicatedFrames: z.number().int().nonnegative().optional(),
  }),
);
/**
 * The recording paused (a pause_recording command): nothing is recorded until it resumes, and the
 * paused time is not in the file. `recordingMs`: where in the recording it paused (on the recording's
 * clock); `pausedAt`: the wall-clock instant (the server maps the runner's wall times through the
 * pauses: core/recording-clock.ts).
 */
export const RecordingPausedEvent = envelope(
  "recording.paused",
  z.object({
    recordingMs: z.number().int().nonnegative(),
    pausedAt: z.iso.datetime({ offset: true }),
  }),
);
/** The recording resumed at `recordingMs` (the same place it paused) after `pausedMs` of wall time. */
export const RecordingResumedEvent = envelope(
  "recording.resumed",
  z.object({
    recordingMs: z.number().int().nonnegative(),
    resumedAt: z.iso.datetime({ offset: true }),
    pausedMs: z.number().int().nonnegative(),
  }),
);
/** Someone starts or stops speaking, as the platform's own speaking indicator shows it. */
export const SpeakerStartedEvent = envelope("speaker.started", Participant);
export const SpeakerStoppedEvent = envelope("speaker.stopped", Participant);

// ---- The live meeting: transcripts while people talk, chat -----------------------------------------

export const LIVE_TRANSCRIPT_SOURCES = ["captions", "pocketsphinx"] as const;
export const LiveTranscriptSource = z.enum(LIVE_TRANSCRIPT_SOURCES);
export type LiveTranscriptSource = z.infer<typeof LiveTranscriptSource>;

/** Who said or wrote something, as the page named them; null when the page did not say. */
const Speaker = z
  .object({
    participantId: z.string().min(1).overwrite(boundParticipantId),
    name: z.string().overwrite((name) => truncateName(name)),
  })
  .nullable();

/** The longest utterance or chat message kept (a caption block grew to 1,363 characters in 90 s). */
export const LIVE_TEXT_MAX = 20_000;

const Utterance = z.object({
  /** Stable while the utterance grows: each partial replaces the last one of this id. */
  utteranceId: z.string().min(1).max(100),
  speaker: Speaker,
  text: z.string().max(LIVE_TEXT_MAX),
  /** On the recording's clock (0 = its first frame); before the recording starts, 0. */
  startMs: z.number().int().nonnegative(),
  endMs: z.number().int().nonnegative(),
  source: LiveTranscriptSource,
  language: z.string().max(35).nullable(),
});
export type Utterance = z.infer<typeof Utterance>;

/** The whole text of an utterance so far, while the person is still talking. */
export const TranscriptPartialEvent = envelope("transcript.partial", Utterance);
/** The utterance as it settled: sent once per utteranceId, after its partials. */
export const TranscriptFinalEvent = envelope("transcript.final", Utterance);
/**
 * The live transcript's source changed: `active` (it runs), `unavailable` (captions cannot be
 * turned on: the host or tenant switched them off, the control is missing), `fallback` (captions
 * were unavailable and the bot switched to pocketsphinx, as its `fallback` option asked).
 */
export const TranscriptSourceEvent = envelope(
  "transcript.source",
  z.object({
    source: LiveTranscriptSource,
    state: z.enum(["active", "unavailable", "fallback"]),
    reason: z.string().max(2000).optional(),
  }),
);
/** One chat message, reported once however often the chat panel re-renders it. */
export const ChatMessageEvent = envelope(
  "chat.message",
  z.object({
    /** The platform's id when the page shows one, else the runner's (sender, text and order). */
    messageId: z.string().min(1).max(300),
    sender: Speaker,
    text: z.string().max(LIVE_TEXT_MAX),
    sentAt: z.iso.datetime({ offset: true }),
    /** The bot's own message (sent with POST /v1/bots/{id}/chat or chat.onJoin). */
    fromBot: z.boolean(),
  }),
);
export type ChatMessage = z.infer<typeof ChatMessageEvent>["data"];

/** What the bot plays into the meeting (a play_audio command): `speak` says text, `upload` plays a file. */
const OutputKind = z.enum(["speak", "upload"]);
/** The bot began playing a sound into the meeting (its microphone unmuted). */
export const OutputStartedEvent = envelope(
  "output.started",
  z.object({
    commandId: z.number().int().positive(),
    kind: OutputKind,
    durationMs: z.number().int().nonnegative(),
  }),
);
/**
 * The sound ended: played to its end (`finished`), stopped by DELETE /output-audio (`stopped`),
 * cut by the host muting the bot (`muted_by_host`), or by the call's end (`call_ended`).
 */
export const OutputEndedEvent = envelope(
  "output.ended",
  z.object({
    commandId: z.number().int().positive(),
    kind: OutputKind,
    durationMs: z.number().int().nonnegative(),
    playedMs: z.number().int().nonnegative(),
    reason: z.enum(["finished", "stopped", "muted_by_host", "call_ended"]),
  }),
);

/** What came of a command the runner took from its poll (core/commands.ts). */
export const CommandResultEvent = envelope("command.result", CommandResult);

export const LogEvent = envelope("log", z.object({ level: LogLevel, message: z.string().max(4000) }));
export const HeartbeatEvent = envelope("heartbeat", z.object({}));

export const CallbackEvent = z.discriminatedUnion("type", [
  StatusChangeEvent,
  ParticipantJoinedEvent,
  ParticipantLeftEvent,
  RecordingStartedEvent,
  RecordingStoppedEvent,
  RecordingPausedEvent,
  RecordingResumedEvent,
  SpeakerStartedEvent,
  SpeakerStoppedEvent,
  TranscriptPartialEvent,
  TranscriptFinalEvent,
  TranscriptSourceEvent,
  ChatMessageEvent,
  OutputStartedEvent,
  OutputEndedEvent,
  CommandResultEvent,
  LogEvent,
  HeartbeatEvent,
]);
export type CallbackEvent = z.infer<typeof CallbackEvent>;
export type CallbackEventType = CallbackEvent["type"];
/** An event before the reporter numbers and stamps it. */
export type CallbackEventBody = CallbackEvent extends infer E
  ? E extends CallbackEvent
    ? Omit<E, "seq" | "eventTime">
    : never
  : never;

// ---- What the server makes of a reported event -------------------------------------------------

export const BOT_EVENT_TYPES = [
  "BOT_JOINED",
  "BOT_LEFT",
  "RECORDING_STARTED",
  "RECORDING_STOPPED",
  "RECORDING_PAUSED",
  "RECORDING_RESUMED",
  "PARTICIPANT_JOINED",
  "PARTICIPANT_LEFT",
  "BOT_OUTPUT_STARTED",
  "BOT_OUTPUT_ENDED",
  "ERROR",
] as const;
export const BotEventType = z.enum(BOT_EVENT_TYPES);
export type BotEventType = z.infer<typeof BotEventType>;

export const AGGREGATED_EVENT_TYPES = [
  "JOINING_CALL",
  "IN_WAITING_ROOM",
  "IN_CALL",
  "CALL_ENDED",
  "DONE",
  "FATAL",
  "RECORDING",
] as const;
export const AggregatedEventType = z.enum(AGGREGATED_EVENT_TYPES);
export type AggregatedEventType = z.infer<typeof AggregatedEventType>;

export interface DerivedEvent<T> {
  eventType: T;
  data: Record<string, unknown>;
}

export interface DerivedEvents {
  botEvents: DerivedEvent<BotEventType>[];
  aggregatedEvents: DerivedEvent<AggregatedEventType>[];
}

const AGGREGATED_STATUSES: ReadonlySet<string> = new Set(AGGREGATED_EVENT_TYPES);

/**
 * The one mapping from a reported event to the spec's per-bot events (GET /bots/{id}/events)
 * and aggregated events (GET /events). `context` carries what the aggregated list shows with
 * each event. Logs and heartbeats map to nothing here; the server stores them elsewhere.
 */
export function deriveEvents(
  event: CallbackEvent,
  context: { meetingTitle: string; platform: string },
): DerivedEvents {
  const botEvents: DerivedEvent<BotEventType>[] = [];
  const aggregatedEvents: DerivedEvent<AggregatedEventType>[] = [];
  switch (event.type) {
    case "status": {
      const { status, subCode, message, joinedAs } = event.data;
      const detail = { ...(subCode ? { subCode } : {}), ...(message ? { message } : {}) };
      if (status === "IN_CALL") {
        botEvents.push({ eventType: "BOT_JOINED", data: { ...context, ...(joinedAs ? { joinedAs } : {}) } });
      }
      if (status === "CALL_ENDED") botEvents.push({ eventType: "BOT_LEFT", data: detail });
      if (status === "FATAL") {
        botEvents.push({
          eventType: "ERROR",
          data: { code: subCode ?? "INTERNAL_ERROR", error: message ?? subCode ?? "unknown error" },
        });
      }
      if (AGGREGATED_STATUSES.has(status)) {
        aggregatedEvents.push({
          eventType: status as AggregatedEventType,
          data: { ...context, ...detail },
        });
      }
      break;
    }
    case "participant.joined":
      botEvents.push({ eventType: "PARTICIPANT_JOINED", data: { ...event.data } });
      break;
    case "participant.left":
      botEvents.push({ eventType: "PARTICIPANT_LEFT", data: { ...event.data } });
      break;
    case "recording.started":
      botEvents.push({ eventType: "RECORDING_STARTED", data: { ...event.data } });
      aggregatedEvents.push({ eventType: "RECORDING", data: { ...context, ...event.data } });
      break;
    case "recording.stopped":
      botEvents.push({ eventType: "RECORDING_STOPPED", data: { ...event.data } });
      break;
    case "recording.paused":
      botEvents.push({ eventType: "RECORDING_PAUSED", data: { ...event.data } });
      break;
    case "recording.resumed":
      botEvents.push({ eventType: "RECORDING_RESUMED", data: { ...event.data } });
      break;
    case "output.started":
      botEvents.push({ eventType: "BOT_OUTPUT_STARTED", data: { ...event.data } });
      break;
    case "output.ended":
      botEvents.push({ eventType: "BOT_OUTPUT_ENDED", data: { ...event.data } });
      break;
    // Speaker changes feed the recording's speaker timeline (see speakerTimeline), not the
    // spec's event lists, which have no type for them; the live meeting's events go to the bot's
    // live stream and its transcript and chat, not to the spec's lists either.
    case "speaker.started":
    case "speaker.stopped":
    case "transcript.partial":
    case "transcript.final":
    case "transcript.source":
    case "chat.message":
    case "log":
    case "heartbeat":
      break;
  }
  return { botEvents, aggregatedEvents };
}

// ---- Who spoke when ------------------------------------------------------------------------------

export interface SpeakerSegment {
  participantId: string;
  name: string;
  /** Milliseconds from the recording's start. */
  startMs: number;
  endMs: number;
}

export interface SpeakerChange {
  type: "speaker.started" | "speaker.stopped";
  participantId: string;
  participantName: string;
  eventTime: string;
}

/**
 * The speaker timeline of a recording from the speaker events, in event order: each start opens
 * a segment for that participant and the next stop closes it; a segment still open when the
 * recording ends closes at its end. Times before the recording started are clipped to 0; times
 * go through the recording's pauses (speaking while it was paused is not in the file: it shrinks
 * to nothing and is left out).
 */
export function speakerTimeline(
  changes: readonly SpeakerChange[],
  recording: { startedAt: string; durationMs: number; pauses?: readonly PauseSpan[] },
): SpeakerSegment[] {
  const origin = Date.parse(recording.startedAt);
  const pauses = recording.pauses ?? [];
  const at = (time: string) =>
    Math.min(recording.durationMs, recordingMsAt(Date.parse(time), origin, pauses));
  const open = new Map<string, { name: string; startMs: number }>();
  const segments: SpeakerSegment[] = [];
  for (const change of changes) {
    const current = open.get(change.participantId);
    if (change.type === "speaker.started") {
      if (!current)
        open.set(change.participantId, { name: change.participantName, startMs: at(change.eventTime) });
      continue;
    }
    if (!current) continue;
    open.delete(change.participantId);
    segments.push({
      participantId: change.participantId,
      name: current.name,
      startMs: current.startMs,
      endMs: at(change.eventTime),
    });
  }
  for (const [participantId, current] of open) {
    segments.push({
      participantId,
      name: current.name,
      startMs: current.startMs,
      endMs: recording.durationMs,
    });
  }
  return segments
    .filter((s) => s.endMs > s.startMs)
    .sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
}

// ---- What webhooks deliver -----------------------------------------------------------------------

export { EXPLICIT_ONLY_WEBHOOK_EVENTS, WEBHOOK_EVENT_NAMES };
export const WebhookEventName = z.enum(WEBHOOK_EVENT_NAMES);
export type WebhookEventName = z.infer<typeof WebhookEventName>;

export interface WebhookEventData {
  event: WebhookEventName;
  data: Record<string, unknown>;
}

/**
 * The one mapping from a reported event (or a status change the server makes itself: DEPLOYING
 * on deploy, FATAL on kill and timeouts) to the webhook events it causes, in the order they are
 * delivered. Logs, heartbeats and speaker changes cause none.
 */
export function webhookEventsFor(
  event: CallbackEvent,
  context: { meetingTitle: string; platform: string },
): WebhookEventData[] {
  switch (event.type) {
    case "status": {
      const { status, subCode, message } = event.data;
      switch (status) {
        case "DEPLOYING":
          return [{ event: "bot.deploying", data: { ...context } }];
        case "JOINING_CALL":
          return [{ event: "bot.joining", data: { ...context } }];
        case "IN_WAITING_ROOM":
          return [{ event: "bot.in_waiting_room", data: { ...context } }];
        case "IN_CALL":
          return [{ event: "bot.joined", data: { ...context } }];
        case "CALL_ENDED":
          return [
            {
              event: "bot.left",
              data: { ...(subCode ? { code: subCode } : {}), ...(message ? { message } : {}) },
            },
          ];
        case "DONE":
          return [{ event: "bot.ended", data: { status } }];
        case "FATAL": {
          const code = subCode ?? "INTERNAL_ERROR";
          return [
            { event: "bot.error", data: { error: message ?? code, code } },
            { event: "bot.ended", data: { status, code } },
          ];
        }
        case "READY_TO_DEPLOY":
          return [];
      }
      return [];
    }
    case "command.result":
      return [];
    case "participant.joined":
    case "participant.left":
      return [
        {
          event: event.type,
          data: { participantId: event.data.participantId, participantName: event.data.participantName },
        },
      ];
    case "recording.started":
      return [{ event: "recording.started", data: { ...event.data } }];
    case "recording.stopped":
      return [{ event: "recording.stopped", data: recordingFigures(event.data) }];
    case "recording.paused":
    case "recording.resumed":
      return [{ event: event.type, data: { ...event.data } }];
    case "transcript.partial":
    case "transcript.final":
    case "chat.message":
      return [{ event: event.type, data: { ...event.data } }];
    case "transcript.source":
      return [{ event: "transcript.source", data: { ...event.data } }];
    case "output.started":
      return [{ event: "bot.output_started", data: { ...event.data } }];
    case "output.ended":
      return [{ event: "bot.output_ended", data: { ...event.data } }];
    case "speaker.started":
    case "speaker.stopped":
    case "log":
    case "heartbeat":
      return [];
  }
}

/** `recording.ready`: the recording was uploaded and can be downloaded. */
export function recordingReadyWebhookEvent(recording: {
  durationMs: number;
  sizeBytes: number;
}): WebhookEventData {
  return { event: "recording.ready", data: { ...recordingFigures(recording), format: "mp4" } };
}

/** Why a bot's meeting data was deleted: its retention ran out, or its owner asked. */
export type DataDeletionReason = "retention" | "request";

/** `recording.deleted`: the bot's recording and all its meeting content are gone for good. */
export function recordingDeletedWebhookEvent(botId: number, reason: DataDeletionReason): WebhookEventData {
  return { event: "recording.deleted", data: { botId, reason } };
}

/**
 * `transcript.ready`: the transcript can be read at GET /v1/transcripts/{bot_id}. `utterances` is
 * how many there are (the transcript itself may be megabytes: it is fetched, not delivered).
 */
export function transcriptReadyWebhookEvent(transcript: {
  engine: string;
  language: string;
  durationMs: number;
  utterances: number;
}): WebhookEventData {
  return { event: "transcript.ready", data: { ...transcript } };
}

/** `summary.ready`: the summary, small enough to deliver whole but for its key points. */
export function summaryReadyWebhookEvent(summary: {
  engine: string;
  overview: string;
  actionItems: unknown[];
  decisions: string[];
}): WebhookEventData {
  return { event: "summary.ready", data: { ...summary } };
}

/** `transcript.failed` and `summary.failed`: the job failed for good, with its `{code, message}`. */
export function contentFailedWebhookEvent(
  kind: "transcript" | "summary",
  error: { code: string; message: string },
): WebhookEventData {
  return { event: `${kind}.failed`, data: { code: error.code, message: error.message } };
}

/**
 * `bot_account.checked` (a check signed in with the account, or found it expired) and
 * `bot_account.expired` (the account's session stopped signing in: a bot reported
 * SESSION_EXPIRED). Never the session: only which account, and where it stands now.
 */
export function botAccountWebhookEvent(
  event: "bot_account.checked" | "bot_account.expired",
  account: { accountId: number; status: BotAccountStatus },
): WebhookEventData {
  return { event, data: { accountId: account.accountId, status: account.status } };
}

/** Spec §6: durationSeconds is an integer (rounded), fileSizeBytes the file's size. */
function recordingFigures(recording: { durationMs: number; sizeBytes: number }) {
  return { durationSeconds: Math.round(recording.durationMs / 1000), fileSizeBytes: recording.sizeBytes };
}
