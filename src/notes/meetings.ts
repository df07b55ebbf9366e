import { type ExpressionBuilder, type Kysely, sql } from "kysely";
import type { MeetingInfo, Platform } from "../core/index.js";
import { parseJson } from "../server/db/database.js";
import type { Database, DialectName } from "../server/db/schema.js";
import { NotFoundError } from "../server/errors.js";
import type { JobState } from "../server/jobs/queue.js";
import type { Summary, Transcript } from "../server/schemas/index.js";
import { readChatMessages } from "../server/services/chat.js";
import { loadSpeakerTimeline } from "../server/services/speaker-timeline.js";
import type { SummaryService } from "../server/services/summaries.js";
import type { TranscriptService } from "../server/services/transcripts.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import type { Meeting, MeetingList, MeetingListQuery } from "./schemas.js";
import { matchesSearch } from "./search.js";

export interface MeetingServiceDeps {
  db: Kysely<Database>;
  dialect: DialectName;
  /** For the transcript and summary routes; a meeting alone (a webhook's data) needs neither. */
  content?: { transcripts: TranscriptService; summaries: SummaryService };
}

type Bots = ExpressionBuilder<Database, "bots" | "recordings">;

/** A job's state for the bot, as a subquery: null when none was asked for. */
const jobState = (eb: Bots, kind: "transcript" | "summary") =>
  eb
    .selectFrom("content_jobs")
    .select("content_jobs.state")
    .whereRef("content_jobs.bot_id", "=", "bots.id")
    .where("content_jobs.kind", "=", kind);

/**
 * A meeting's status, in SQL (it is filtered on): in the call; then failed (a transcript or summary
 * failed, or the bot failed with no recording); processing (a job on its way, or the recording not
 * uploaded yet); else completed.
 */
const meetingStatus = sql<Meeting["status"]>`case
  when bots.meeting_ended_at is null and bots.status not in ('DONE', 'FATAL') then 'in_progress'
  when exists (select 1 from content_jobs j where j.bot_id = bots.id and j.state = 'failed') then 'failed'
  when exists (select 1 from content_jobs j where j.bot_id = bots.id and j.state in ('queued', 'processing'))
    then 'processing'
  when recordings.bot_id is null and bots.status = 'FATAL' then 'failed'
  when recordings.bot_id is null and bots.status <> 'DONE' then 'processing'
  else 'completed'
end`;

/**
 * The notes interface's meetings: the user's bots that reached IN_CALL, with their participants,
 * recording, transcript and summary. Another user's meeting is the same 404 as a missing one.
 */
export class MeetingService {
  constructor(private readonly deps: MeetingServiceDeps) {}

  async list(userId: number, query: MeetingListQuery): Promise<MeetingList> {
    const { dialect } = this.deps;
    let rows = this.baseQuery(userId);
    if (query.cursor) {
      const after = decodeCursor(query.cursor);
      rows = rows.where((eb) =>
        eb.or([
          eb("bots.meeting_started_at", "<", after.startedAt),
          eb.and([eb("bots.meeting_started_at", "=", after.startedAt), eb("bots.id", "<", after.id)]),
        ]),
      );
    }
    if (query.from) rows = rows.where("bots.meeting_started_at", ">=", query.from);
    if (query.to) rows = rows.where("bots.meeting_started_at", "<", query.to);
    if (query.platform) rows = rows.where("bots.platform", "=", query.platform);
    if (query.status) rows = rows.where(meetingStatus, "=", query.status);
    if (query.q) {
      const q = query.q;
      rows = rows.where((eb) => matchesSearch(eb as ExpressionBuilder<Database, "bots">, dialect, q));
    }
    if (query.participant) {
      const name =
        dialect === "sqlite"
          ? sql`json_extract(e.data, '$.participantName')`
          : sql`(e.data::json ->> 'participantName')`;
      const pattern = `%${query.participant.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      rows = rows.where(
        sql<boolean>`exists (select 1 from bot_events e where e.bot_id = bots.id
          and e.event_type = 'PARTICIPANT_JOINED' and lower(${name}) like ${pattern} escape '\\')`,
      );
    }
    const page = await rows
      .orderBy("bots.meeting_started_at", "desc")
      .orderBy("bots.id", "desc")
      .limit(query.limit + 1)
      .execute();
    const more = page.length > query.limit;
    const shown = page.slice(0, query.limit);
    const data = await Promise.all(shown.map((row) => this.toMeeting(row)));
    const last = shown.at(-1);
    return {
      data,
      has_more: more,
      next_cursor:
        more && last ? encodeCursor({ startedAt: last.meeting_started_at as string, id: last.id }) : null,
    };
  }

  async get(userId: number, meetingId: string): Promise<Meeting> {
    return this.toMeeting(await this.require(userId, meetingId));
  }

  /** The bot API's transcript; 404 saying so while it is being made (its status is on the meeting). */
  async transcript(userId: number, meetingId: string): Promise<Transcript> {
    const row = await this.require(userId, meetingId);
    const transcript = await this.content().transcripts.find(row.id);
    if (transcript) return transcript;
    throw new NotFoundError(contentMissing("transcript", row.transcript_state));
  }

  async summary(userId: number, meetingId: string): Promise<Summary> {
    const row = await this.require(userId, meetingId);
    const summary = await this.content().summaries.find(row.id);
    if (summary) return summary;
    throw new NotFoundError(contentMissing("summary", row.summary_state));
  }

  private content() {
    if (!this.deps.content) throw new Error("MeetingService made without the content services");
    return this.deps.content;
  }

  private baseQuery(userId: number) {
    return this.deps.db
      .selectFrom("bots")
      .leftJoin("recordings", "recordings.bot_id", "bots.id")
      .select([
        "bots.id",
        "bots.meeting_id",
        "bots.meeting_title",
        "bots.platform",
        "bots.meeting_info",
        "bots.meeting_started_at",
        "bots.meeting_ended_at",
        "bots.created_at",
        "recordings.duration_ms as recording_duration_ms",
        "recordings.size_bytes as recording_size_bytes",
      ])
      .select((eb) => [
        meetingStatus.as("meeting_status"),
        jobState(eb, "transcript").as("transcript_state"),
        jobState(eb, "summary").as("summary_state"),
      ])
      .where("bots.user_id", "=", userId)
      .where("bots.meeting_started_at", "is not", null);
  }

  private async require(userId: number, meetingId: string) {
    const row = await this.baseQuery(userId).where("bots.meeting_id", "=", meetingId).executeTakeFirst();
    if (!row) throw new NotFoundError("Meeting not found");
    return row;
  }

  private async toMeeting(row: Awaited<ReturnType<MeetingService["require"]>>): Promise<Meeting> {
    const info = parseJson<MeetingInfo>(row.meeting_info);
    const startedAt = row.meeting_started_at as string;
    const endedAt = row.meeting_ended_at;
    const recordingMs = row.recording_duration_ms ?? null;
    return {
      id: row.meeting_id as string,
      botId: row.id,
      title: row.meeting_title,
      platform: row.platform as Platform,
      meetingUrl: info.meetingUrl ?? null,
      status: row.meeting_status,
      startedAt,
      endedAt,
      durationMs: endedAt ? Math.max(0, Date.parse(endedAt) - Date.parse(startedAt)) : null,
      participants: await this.participants(row.id, recordingMs),
      recording: {
        available: recordingMs !== null,
        durationMs: recordingMs,
        sizeBytes: row.recording_size_bytes === null ? null : Number(row.recording_size_bytes),
      },
      transcript: { status: (row.transcript_state ?? null) as JobState | null },
      summary: { status: (row.summary_state ?? null) as JobState | null },
      chat: await readChatMessages(this.deps.db, row.id),
      createdAt: row.created_at,
    };
  }

  /** Everyone the bot saw, first join to last leave, with their speaking time in the recording. */
  private async participants(botId: number, recordingMs: number | null): Promise<Meeting["participants"]> {
    const events = await this.deps.db
      .selectFrom("bot_events")
      .select(["event_type", "event_time", "data"])
      .where("bot_id", "=", botId)
      .where("event_type", "in", ["PARTICIPANT_JOINED", "PARTICIPANT_LEFT"])
      .orderBy("id")
      .execute();
    const speaking = new Map<string, number>();
    if (recordingMs !== null) {
      for (const turn of await loadSpeakerTimeline(this.deps.db, botId, recordingMs)) {
        speaking.set(turn.participantId, (speaking.get(turn.participantId) ?? 0) + turn.endMs - turn.startMs);
      }
    }
    const people = new Map<string, Meeting["participants"][number]>();
    for (const event of events) {
      const { participantId, participantName } = parseJson<{
        participantId: string;
        participantName: string;
      }>(event.data);
      const at = new Date(event.event_time).toISOString();
      const person = people.get(participantId) ?? {
        id: participantId,
        name: participantName,
        joinedAt: null,
        leftAt: null,
        speakingMs: speaking.get(participantId) ?? 0,
      };
      if (event.event_type === "PARTICIPANT_JOINED") {
        person.joinedAt ??= at;
        person.leftAt = null; // back again
        person.name = participantName;
      } else {
        person.leftAt = at;
      }
      people.set(participantId, person);
    }
    return [...people.values()];
  }
}

function contentMissing(kind: "transcript" | "summary", state: string | null): string {
  if (state === null) return `No ${kind} was asked for this meeting`;
  if (state === "failed") return `The ${kind} failed (see the bot API's /${kind}s/{bot_id}/status)`;
  return `The ${kind} is ${state}: it is not ready yet`;
}
