import { deployedBot, type TestServer, type TestUser } from "./server-harness.js";

/** Someone in the call: when they joined (no `participant.joined` when left out) and when they spoke. */
export interface MeetingParticipant {
  participantId: string;
  participantName: string;
  joinedMs?: number;
  /** Speaking intervals, [start, stop] in ms after the call started. */
  spoke: [number, number][];
}

export interface RecordMeetingOptions {
  /** Fields of the POST /v1/bots body (meetingInfo, transcription, summary…). */
  body?: Record<string, unknown>;
  title?: string;
  /** When the runner joined the call, on the runner's clock; a minute ago by default. */
  startedAt?: string;
  participants?: MeetingParticipant[];
  recording: Uint8Array;
  /** The duration the runner reports with its upload. */
  recordingMs?: number;
  /** When the call ends (or the runner fails), in ms after the start. */
  endsAtMs?: number;
  /** `in_call`: the bot is still in the call; `fatal_without_recording`: it failed before any upload. */
  end?: "done" | "in_call" | "fatal_without_recording";
  /** More of what the runner reports during the call (chat messages, transcript events), at their time. */
  events?: TimedEvent[];
}

export interface TimedEvent {
  type: string;
  data: Record<string, unknown>;
  ms: number;
}

/**
 * A bot of `user` that joined a call and recorded it, reported as a runner reports it: every
 * event stamped with its own time in the call (so meeting times and speaking intervals are the
 * test's), then, unless it ends otherwise, CALL_ENDED, the upload and DONE. Returns the bot's id.
 */
export async function recordMeeting(
  server: TestServer,
  user: TestUser,
  opts: RecordMeetingOptions,
): Promise<number> {
  const body = { ...(opts.title ? { meetingTitle: opts.title } : {}), ...opts.body };
  const { botId, runner } = await deployedBot(server, user, body);
  const t0 = opts.startedAt ? Date.parse(opts.startedAt) : Date.now() - 60_000;
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  let seq = 0;
  const send = async ({ type, data, ms }: TimedEvent) => {
    const res = await runner.sendRaw({ seq: ++seq, type, eventTime: at(ms), data });
    if (res.status !== 200) throw new Error(`${type} at ${ms} ms: ${res.status} ${JSON.stringify(res.body)}`);
  };

  const inCall: TimedEvent[] = [];
  for (const { joinedMs, spoke, ...who } of opts.participants ?? []) {
    if (joinedMs !== undefined) inCall.push({ type: "participant.joined", data: who, ms: joinedMs });
    for (const [start, stop] of spoke) {
      inCall.push({ type: "speaker.started", data: who, ms: start });
      inCall.push({ type: "speaker.stopped", data: who, ms: stop });
    }
  }
  inCall.push(...(opts.events ?? []));
  // A runner reports in the order things happen (the sort is stable: ties keep their order).
  inCall.sort((x, y) => x.ms - y.ms);
  const endsAt = opts.endsAtMs ?? 1800;

  await send({ type: "status", data: { status: "JOINING_CALL" }, ms: 0 });
  await send({ type: "status", data: { status: "IN_CALL" }, ms: 0 });
  await send({
    type: "recording.started",
    data: { width: 1280, height: 720, frameRate: 25, startedAt: at(0) },
    ms: 0,
  });
  for (const event of inCall) await send(event);
  if (opts.end === "in_call") return botId;
  if (opts.end === "fatal_without_recording") {
    await send({
      type: "status",
      data: { status: "FATAL", subCode: "INTERNAL_ERROR", message: "crashed" },
      ms: endsAt,
    });
    return botId;
  }
  await send({ type: "status", data: { status: "CALL_ENDED", subCode: "MEETING_ENDED" }, ms: endsAt });
  const uploaded = await runner.upload(opts.recording, opts.recordingMs ?? 2000);
  if (uploaded.status !== 201) throw new Error(`upload: ${uploaded.status} ${JSON.stringify(uploaded.body)}`);
  await send({ type: "status", data: { status: "DONE" }, ms: endsAt + 100 });
  return botId;
}
