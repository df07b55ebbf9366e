import { z } from "zod";

/**
 * Commands to a running bot: the control plane stores each one (bot_commands) until the bot's
 * runner acknowledges it with its result. The runner opens the channel itself, a long poll with
 * its callback token (it may run where nothing can connect to it: a container, a Pod, behind NAT):
 *
 *   GET  /v1/bot-callbacks/{id}/commands?wait=<s>  → CommandPoll: every command not yet done
 *   POST /v1/bot-callbacks/{id}/event              ← a `command.result` event (core/events.ts)
 *
 * A command stays in every poll answer until its result is in, so a dropped answer or a server
 * restart loses none; the runner runs each id once. Its result is a report like any other: spooled
 * on disk, resent until taken, and in order, so it is in before the runner's own last status (a
 * result sent on its own could be lost to an outage, and the bot would end with the command
 * "failed" although it was done).
 */

export const COMMAND_KINDS = [
  "leave",
  "chat",
  "play_audio",
  "stop_audio",
  "screenshot",
  "show_image",
  "hide_image",
  "pause_recording",
  "resume_recording",
] as const;
export const CommandKind = z.enum(COMMAND_KINDS);
export type CommandKind = z.infer<typeof CommandKind>;

/**
 * Commands that wait their turn behind each other in the runner (one lane each): sounds play one
 * after another, while a leave, a chat message or a stop never waits for a sound to finish, and a
 * look at the page never waits for either. The camera has a lane of its own: a picture shown then
 * hidden must land in that order, and neither a sound nor a chat message (which can take seconds
 * each) holds it up, nor it them. So has the recording: a pause then a resume land in that order,
 * each within the second or so ffmpeg takes to stop or start.
 */
export const COMMAND_LANES: Record<CommandKind, "output" | "control" | "view" | "camera" | "recording"> = {
  leave: "control",
  chat: "control",
  play_audio: "output",
  stop_audio: "control",
  screenshot: "view",
  show_image: "camera",
  hide_image: "camera",
  pause_recording: "recording",
  resume_recording: "recording",
};

export const COMMAND_STATUSES = ["queued", "sent", "done", "failed"] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/**
 * How long a runner has to acknowledge a command of each kind before it fails DEADLINE_EXCEEDED.
 * A sound's deadline is this plus its own length and the length of every sound queued before it
 * (outputDeadlineMs).
 */
export const COMMAND_DEADLINE_MS: Record<CommandKind, number> = {
  // Leaving takes a click and the CALL_ENDED report; the upload comes after the acknowledgement.
  leave: 60_000,
  // Typing and sending one message, even with the chat panel to open first: a starved page (three
  // bots on two busy cores) once took 34 s, the panel's click alone 21 s, and sent it all the same.
  chat: 60_000,
  // Fetching the clip and unmuting, besides the playing itself.
  play_audio: 60_000,
  stop_audio: 30_000,
  // One screenshot and its upload; someone is waiting for it (GET /v1/bots/{id}/screenshot).
  screenshot: 15_000,
  // Fetching the picture and a click on the camera toggle (or two, the page asking for the camera again).
  show_image: 30_000,
  hide_image: 30_000,
  // Stopping ffmpeg cleanly (or starting it to its first frame): a second or two, ten on a loaded machine.
  pause_recording: 30_000,
  resume_recording: 30_000,
};

/**
 * A pause_recording or resume_recording command's result: whether the recording is paused now,
 * whether this command changed that (a second pause is done and changes nothing), and where in
 * the recording it stands (ms on the recording's clock).
 */
export const RecordingPauseResult = z.object({
  paused: z.boolean(),
  changed: z.boolean(),
  recordingMs: z.number().int().nonnegative(),
});
export type RecordingPauseResult = z.infer<typeof RecordingPauseResult>;

/**
 * A screenshot command's picture: the runner uploads it as this artifact of the bot (each one
 * replaces the one before) and answers ScreenshotResult.
 */
export const SCREENSHOT_ARTIFACT = "live-view.png";

export const ScreenshotResult = z.object({
  artifact: z.literal(SCREENSHOT_ARTIFACT),
  sizeBytes: z.number().int().positive(),
  takenAt: z.iso.datetime(),
});
export type ScreenshotResult = z.infer<typeof ScreenshotResult>;

/** A play_audio command's deadline from its queueing: its wait behind earlier sounds, its length, the margin. */
export function outputDeadlineMs(durationMs: number, queuedBeforeMs: number): number {
  return COMMAND_DEADLINE_MS.play_audio + durationMs + queuedBeforeMs;
}

/**
 * What a play_audio command carries. The server renders every sound (speech from text with its
 * voice engine, an uploaded file decoded) to one clip format before queueing it, so the runner
 * only plays clips and holds no engine key: a WAV, 48 kHz, mono, 16-bit, fetched with the
 * callback token from `GET /v1/bot-callbacks/{id}/output-clips/{clipId}` (outputClipUrl).
 */
export const PlayAudioPayload = z.object({
  clipId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
  durationMs: z.number().int().nonnegative(),
  /** `speak`: text the bot says (kept as the bot's own utterance); `upload`: a file played as is. */
  source: z.enum(["speak", "upload"]),
  text: z.string().max(4096).optional(),
});
export type PlayAudioPayload = z.infer<typeof PlayAudioPayload>;

/** A play_audio command's result: how much of the clip was heard. */
export const PlayAudioResult = z.object({
  durationMs: z.number().int().nonnegative(),
  playedMs: z.number().int().nonnegative(),
});
export type PlayAudioResult = z.infer<typeof PlayAudioResult>;

/**
 * What a show_image command carries: a picture the server made from the user's PNG or JPEG (a
 * PNG of at most OUTPUT_IMAGE_MAX_WIDTH x OUTPUT_IMAGE_MAX_HEIGHT: the runner never decodes
 * untrusted formats), fetched with the callback token from
 * `GET /v1/bot-callbacks/{id}/output-images/{imageId}` (outputImageUrl). The bot's camera shows it
 * (turned on) until hide_image or another picture.
 */
export const OutputImage = z.object({
  imageId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
});
export type OutputImage = z.infer<typeof OutputImage>;
export const ShowImagePayload = OutputImage;
export type ShowImagePayload = OutputImage;

/** The largest picture a bot's camera shows (a 720p camera): bigger ones are scaled down to fit. */
export const OUTPUT_IMAGE_MAX_WIDTH = 1280;
export const OUTPUT_IMAGE_MAX_HEIGHT = 720;

/**
 * Why a command failed. The runner's: NOT_IN_CALL (the bot left or has not joined yet when the
 * command reached it), CHAT_UNAVAILABLE (the meeting gives the bot no chat: Teams guests without
 * chat rights), MUTED_BY_HOST (a sound: the host muted the bot, or keeps it from unmuting),
 * OUTPUT_STOPPED (a sound stopped or dropped by DELETE /output-audio), CAMERA_UNAVAILABLE (the
 * call shows no camera toggle, or it does not turn on), COMMAND_FAILED (it tried
 * and the page did not do it), UNKNOWN_COMMAND (an older runner). The server's:
 * DEADLINE_EXCEEDED, BOT_ENDED (the bot ended before acknowledging).
 */
export const COMMAND_ERROR_CODES = [
  "NOT_IN_CALL",
  "CHAT_UNAVAILABLE",
  "MUTED_BY_HOST",
  "OUTPUT_STOPPED",
  "CAMERA_UNAVAILABLE",
  "COMMAND_FAILED",
  "UNKNOWN_COMMAND",
  "DEADLINE_EXCEEDED",
  "BOT_ENDED",
] as const;
export const CommandErrorCode = z.enum(COMMAND_ERROR_CODES);
export type CommandErrorCode = z.infer<typeof CommandErrorCode>;

export const CommandError = z.object({
  code: CommandErrorCode,
  message: z.string().max(2000),
});
export type CommandError = z.infer<typeof CommandError>;

/** One command as the runner receives it. */
export const PendingCommand = z.object({
  commandId: z.number().int().positive(),
  kind: z.string().max(32).describe("A kind this runner may not know: it answers UNKNOWN_COMMAND"),
  payload: z.record(z.string(), z.unknown()),
});
export type PendingCommand = z.infer<typeof PendingCommand>;

export const CommandPoll = z.object({
  commands: z.array(PendingCommand).describe("Every command not yet done, oldest first"),
});
export type CommandPoll = z.infer<typeof CommandPoll>;

/** The longest a poll may wait for a command (seconds); below any proxy's idle timeout. */
export const MAX_COMMAND_POLL_WAIT_S = 30;

/** A command's outcome as the runner reports it (the `command.result` event's data). */
export const CommandResult = z.discriminatedUnion("status", [
  z.object({
    commandId: z.number().int().positive(),
    status: z.literal("done"),
    result: z.record(z.string(), z.unknown()).optional(),
  }),
  z.object({ commandId: z.number().int().positive(), status: z.literal("failed"), error: CommandError }),
]);
export type CommandResult = z.infer<typeof CommandResult>;

export function commandsUrl(config: { botId: number; callback: { baseUrl: string } }, waitS: number): string {
  return new URL(
    `/v1/bot-callbacks/${config.botId}/commands?wait=${waitS}`,
    config.callback.baseUrl,
  ).toString();
}

export function outputClipUrl(
  config: { botId: number; callback: { baseUrl: string } },
  clipId: string,
): string {
  return new URL(
    `/v1/bot-callbacks/${config.botId}/output-clips/${clipId}`,
    config.callback.baseUrl,
  ).toString();
}

export function outputImageUrl(
  config: { botId: number; callback: { baseUrl: string } },
  imageId: string,
): string {
  return new URL(
    `/v1/bot-callbacks/${config.botId}/output-images/${imageId}`,
    config.callback.baseUrl,
  ).toString();
}
