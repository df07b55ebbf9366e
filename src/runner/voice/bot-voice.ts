import type { Logger } from "pino";
import type { Page } from "playwright";
import { hostMutedNotice, microphoneOn, setMicrophone } from "../../../platforms/live-actions.js";
import { type LiveNote, type MicrophoneHooks, MutedByHost } from "../../../platforms/live.js";
import {
  type CallbackEventBody,
  type LiveTranscriptOptions,
  PlayAudioPayload,
  type PlayAudioResult,
} from "../../core/index.js";
import { CommandRefusal } from "../commands.js";

/** How often the microphone toggle is looked at while a sound plays: a host's mute cuts it within this. */
const WATCH_MS = 250;

/** The bot as a speaker: in the speaker timeline and the live transcript, its own turns. */
export const SELF_PARTICIPANT_ID = "self";

export interface BotVoiceContext {
  page: Page;
  /** The platform's microphone toggle in the call; null when the adapter has none. */
  microphone: MicrophoneHooks | null;
  /** Fetches a clip (core PlayAudioPayload.clipId) into a local WAV file; answers its path. */
  fetchClip(clipId: string): Promise<string>;
  /** Plays a WAV file into the bot's microphone; resolves when it ended or `signal` stopped it. */
  playClip(path: string, signal: AbortSignal): Promise<void>;
  /** The name the meeting shows for the bot. */
  selfName: string;
  /** Leave the microphone on after a sound (BotConfig.output.keepMicOn). */
  keepMicOn: boolean;
  /** The bot's live transcript, when it has one: a spoken text is the bot's own utterance in it. */
  liveTranscript: LiveTranscriptOptions | null;
  /** Milliseconds on the recording's clock now (0 before the recording). */
  recordingClock(): number;
  /** Whether the recording is paused now: a text said wholly while it was is not in the transcript. */
  recordingPaused?(): boolean;
  report(body: CallbackEventBody): void;
  log: Logger;
  note: LiveNote;
}

type EndReason = "finished" | "stopped" | "muted_by_host" | "call_ended";

/**
 * The bot's voice in the call: plays the clips of play_audio commands into its microphone (the
 * PulseAudio voice sink, see media-env.ts), one at a time (their command lane), unmuted on the
 * platform only while one plays. It reports each sound (output.started/ended), the bot's turn as a
 * speaker (so the recording's transcript gives the words to the bot: the platform never shows the
 * bot's own speaking indicator), and a spoken text as the bot's own utterance of a captions live
 * transcript (captions skip the bot's own lines). A stop_audio ends the sound playing and every
 * sound queued before it; the call's end ends the one playing.
 */
export class BotVoice {
  /** Sounds of commands before this id are dropped (a stop_audio's id). */
  private stoppedBefore = 0;
  private playing: { commandId: number; abort: AbortController; reason: EndReason | null } | null = null;
  private ended = false;

  constructor(private readonly ctx: BotVoiceContext) {}

  /** The play_audio command. Throws a CommandRefusal: MUTED_BY_HOST, OUTPUT_STOPPED, NOT_IN_CALL. */
  async play(commandId: number, rawPayload: Record<string, unknown>): Promise<PlayAudioResult> {
    const parsed = PlayAudioPayload.safeParse(rawPayload);
    if (!parsed.success)
      throw new CommandRefusal("COMMAND_FAILED", `a bad play_audio payload: ${parsed.error.message}`);
    const payload = parsed.data;
    this.refuseIfDropped(commandId);
    const file = await this.ctx.fetchClip(payload.clipId);
    this.refuseIfDropped(commandId);
    const { page, microphone, note, log } = this.ctx;
    if (microphone) {
      try {
        await setMicrophone(page, microphone, true, note);
      } catch (error) {
        if (error instanceof MutedByHost) throw new CommandRefusal("MUTED_BY_HOST", error.message);
        throw new CommandRefusal("COMMAND_FAILED", `could not unmute: ${(error as Error).message}`);
      }
    }
    const abort = new AbortController();
    const playing = { commandId, abort, reason: null as EndReason | null };
    this.playing = playing;
    const kind = payload.source;
    const started = Date.now();
    const startMs = this.ctx.recordingClock();
    this.ctx.report({ type: "output.started", data: { commandId, kind, durationMs: payload.durationMs } });
    this.speaking(true);
    const watching = microphone ? this.watchMicrophone(microphone, playing) : Promise.resolve();
    try {
      await this.ctx.playClip(file, abort.signal);
    } finally {
      abort.abort();
      await watching;
      this.playing = null;
    }
    const playedMs = Math.min(payload.durationMs, Date.now() - started);
    const reason: EndReason = playing.reason ?? "finished";
    this.speaking(false);
    if (microphone && reason !== "muted_by_host" && !this.ended && !this.ctx.keepMicOn) {
      await setMicrophone(page, microphone, false, note).catch((error: Error) =>
        log.warn({ err: error.message }, "could not mute the microphone again"),
      );
    }
    this.ctx.report({
      type: "output.ended",
      data: { commandId, kind, durationMs: payload.durationMs, playedMs, reason },
    });
    if (kind === "speak" && payload.text && this.ctx.liveTranscript?.source === "captions") {
      this.ownUtterance(commandId, payload.text, startMs);
    }
    log.info({ commandId, kind, playedMs, reason }, "sound played");
    if (reason === "muted_by_host")
      throw new CommandRefusal("MUTED_BY_HOST", "the host muted the bot while it spoke");
    if (reason === "stopped") throw new CommandRefusal("OUTPUT_STOPPED", "stopped by DELETE /output-audio");
    if (reason === "call_ended")
      throw new CommandRefusal("NOT_IN_CALL", "the call ended while the bot spoke");
    return { durationMs: payload.durationMs, playedMs };
  }

  /** The stop_audio command: ends the sound playing and drops those queued before it. */
  stop(commandId: number): { stopped: boolean } {
    this.stoppedBefore = Math.max(this.stoppedBefore, commandId);
    const playing = this.playing;
    if (!playing || playing.commandId > commandId) return { stopped: false };
    this.cut(playing, "stopped");
    return { stopped: true };
  }

  /** The call is over: the sound playing ends now; later ones are refused NOT_IN_CALL. */
  end(): void {
    this.ended = true;
    if (this.playing) this.cut(this.playing, "call_ended");
  }

  private refuseIfDropped(commandId: number): void {
    if (this.ended) throw new CommandRefusal("NOT_IN_CALL", "the call is over");
    if (commandId < this.stoppedBefore)
      throw new CommandRefusal("OUTPUT_STOPPED", "dropped by DELETE /output-audio before it played");
  }

  private cut(playing: NonNullable<BotVoice["playing"]>, reason: EndReason): void {
    playing.reason ??= reason;
    playing.abort.abort();
  }

  /** Cuts the sound when the toggle shows the microphone muted although the bot did not mute it. */
  private async watchMicrophone(
    hooks: MicrophoneHooks,
    playing: NonNullable<BotVoice["playing"]>,
  ): Promise<void> {
    const { page } = this.ctx;
    while (!playing.abort.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
      if (playing.abort.signal.aborted) return;
      const on = await microphoneOn(page, hooks).catch(() => null);
      if (on === false || (on === null && (await hostMutedNotice(page, hooks)))) {
        this.ctx.log.warn({ commandId: playing.commandId }, "the host muted the bot while it spoke");
        this.cut(playing, "muted_by_host");
      }
    }
  }

  private speaking(on: boolean): void {
    const participant = { participantId: SELF_PARTICIPANT_ID, participantName: this.ctx.selfName };
    this.ctx.report({ type: on ? "speaker.started" : "speaker.stopped", data: participant });
  }

  private ownUtterance(commandId: number, text: string, startMs: number): void {
    const options = this.ctx.liveTranscript;
    const endMs = Math.max(startMs, this.ctx.recordingClock());
    if (endMs === startMs && this.ctx.recordingPaused?.()) return;
    this.ctx.report({
      type: "transcript.final",
      data: {
        utteranceId: `bot-${commandId}`,
        speaker: { participantId: SELF_PARTICIPANT_ID, name: this.ctx.selfName },
        text,
        startMs,
        endMs,
        source: options?.source ?? "captions",
        language: options?.language ?? null,
      },
    });
  }
}
