import type { Logger } from "pino";
import type { Page } from "playwright";
import pRetry from "p-retry";
import type { WebSocket } from "undici";
import { microphoneOn, setMicrophone } from "../../../platforms/live-actions.js";
import { type LiveNote, type MicrophoneHooks, MutedByHost } from "../../../platforms/live.js";
import type { BotConfig, CallbackEventBody } from "../../core/index.js";
import { SELF_PARTICIPANT_ID } from "../voice/bot-voice.js";
import { openAgentSocket, shownUrl } from "./connection.js";
import { eventFrame, type Participant, parseAgentMessage, startFrame } from "./frames.js";

/** Reconnect backoff: 0.25 s, doubling, at most 10 s between tries; forever while in the call. */
const RETRY = { minTimeout: 250, factor: 2, maxTimeout: 10_000 };
/**
 * The most sound the bot lets wait in the socket's send buffer (a slow agent, a slow network):
 * beyond it frames are dropped, not queued without bound (a late frame is worth nothing to a
 * live agent).
 */
const MAX_SEND_BACKLOG_MS = 1_000;
/** The most of the agent's sound queued ahead of what is heard: an agent sending faster is cut. */
const MAX_PLAY_BACKLOG_MS = 30_000;
/** After the agent's queued sound has played, this long without more ends the bot's speaker turn. */
const TURN_HANGOVER_MS = 300;

/** What the agent stream works with: its side of the sound card, and the call's page. */
export interface AgentAudioPort {
  /** Starts reading the meeting's sound (without the bot's voice) as frames; runs until stopped. */
  listen(
    sampleRate: number,
    onFrame: (frame: Buffer) => void,
    onLost: (why: string) => void,
  ): {
    stop(): Promise<void>;
  };
  /** A player of PCM into the bot's microphone. */
  player(sampleRate: number): { write(pcm: Buffer): void; clear(): void; close(): Promise<void> };
}

export interface AgentStreamContext {
  botId: number;
  options: NonNullable<BotConfig["audioStream"]>;
  audio: AgentAudioPort;
  page: Page;
  /** The platform's microphone toggle in the call; null when the adapter has none. */
  microphone: MicrophoneHooks | null;
  selfName: string;
  /** Reports an event (the bot's own speaker turns, the connection's log lines). */
  report(body: CallbackEventBody): void;
  log: Logger;
  note: LiveNote;
}

/**
 * The bot's live audio channel to an agent (BotConfig.audioStream; frames.ts has the protocol).
 * Once in the call it connects, and reconnects with backoff whenever the socket closes, until the
 * call ends; the meeting's sound during an outage is dropped, not kept for later. The microphone is
 * turned on at the start and stays on (unmuting per phrase would add a click's latency to every
 * answer; the microphone carries only what the bot plays, digital silence otherwise). The agent's
 * sound makes speaker turns of the bot's own (participantId "self"), as BotVoice's sounds do.
 * Connects, closes and refusals are reported as log events, with the URL's origin only; the token
 * is never logged.
 */
export class AgentStream {
  private readonly stopping = new AbortController();
  private socket: WebSocket | null = null;
  private closeSocket: (() => Promise<void>) | null = null;
  private listener: { stop(): Promise<void> } | null = null;
  private readonly player;
  private readonly roster = new Map<string, Participant>();
  private readonly frameMsPerByte: number;
  /** Wall-clock ms when the agent's sound queued so far will have played. */
  private playEnd = 0;
  private speaking = false;
  private turnTimer: NodeJS.Timeout | null = null;
  private odd: Buffer | null = null;
  private dropped = { sent: 0, played: 0 };
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: AgentStreamContext) {
    this.player = ctx.audio.player(ctx.options.sampleRate);
    this.frameMsPerByte = 1000 / (ctx.options.sampleRate * 2);
  }

  start(): void {
    const { options, audio, log } = this.ctx;
    void this.unmute();
    this.listener = audio.listen(
      options.sampleRate,
      (frame) => this.send(frame),
      (why) => {
        log.warn({ why }, "the meeting's sound for the audio stream stopped");
        this.announce("warn", `audio stream: the meeting's sound stopped (${why})`);
      },
    );
    this.running = this.run();
  }

  /** A reported event: the roster is kept, and speaker and participant events go to the agent. */
  noteEvent(body: CallbackEventBody): void {
    if (body.type === "participant.joined") this.roster.set(body.data.participantId, body.data);
    if (body.type === "participant.left") this.roster.delete(body.data.participantId);
    const frame = eventFrame(body);
    if (frame) this.sendJson(frame);
  }

  /** The call ended: the agent is told, the socket closed, the sound stopped. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.endTurn();
    // The last frame the agent gets: nothing is sent after it.
    this.sendJson({ type: "end" });
    this.stopping.abort();
    await this.closeSocket?.();
    await this.running;
    await this.listener?.stop();
    await this.player.close();
    if (this.dropped.sent + this.dropped.played > 0)
      this.ctx.log.info({ dropped: this.dropped }, "audio stream frames dropped over the call");
  }

  private async run(): Promise<void> {
    const { options, log } = this.ctx;
    const where = shownUrl(options.url);
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      let failures = 0;
      const connection = await pRetry(
        () =>
          openAgentSocket({
            url: options.url,
            ...(options.token ? { token: options.token } : {}),
            allowPrivateTargets: options.allowPrivateTargets,
          }).catch((error: unknown) => {
            // p-retry gives up on a TypeError, which is what a refused connection can surface as:
            // every failure here is worth another try while the call lasts.
            throw new Error(describe(error));
          }),
        {
          ...RETRY,
          retries: Number.POSITIVE_INFINITY,
          signal,
          onFailedAttempt: ({ error, attemptNumber }) => {
            failures++;
            log.warn(
              { attempt: attemptNumber, err: error.message, url: where },
              "audio stream: connect failed",
            );
            // The first failure of a run of them, then every tenth: the owner sees it, the log is not flooded.
            if (failures % 10 === 1)
              this.announce("warn", `audio stream: cannot connect to ${where}: ${error.message}; retrying`);
          },
        },
      ).catch(() => null);
      if (!connection) return; // stopped while connecting
      if (signal.aborted) {
        await connection.close();
        return;
      }
      await this.serve(connection.socket, connection.close, where);
    }
  }

  /** One open connection: the start frame, the roster, then frames both ways until it closes. */
  private async serve(socket: WebSocket, close: () => Promise<void>, where: string): Promise<void> {
    this.socket = socket;
    this.closeSocket = close;
    const { botId, options } = this.ctx;
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
    });
    socket.addEventListener("message", (event) => this.received(event.data));
    socket.send(JSON.stringify(startFrame(botId, options.sampleRate)));
    socket.send(JSON.stringify({ type: "participants", participants: [...this.roster.values()] }));
    this.announce("info", `audio stream connected to ${where}`);
    const { code, reason } = await closed;
    this.socket = null;
    this.closeSocket = null;
    await close();
    if (this.stopping.signal.aborted) return;
    this.announce(
      "warn",
      `audio stream to ${where} closed (code ${code}${reason ? `: ${reason.slice(0, 200)}` : ""}); reconnecting`,
    );
  }

  private send(frame: Buffer): void {
    const socket = this.socket;
    // Not connected (or the call is over): the sound is dropped.
    if (!socket || socket.readyState !== 1 || this.stopping.signal.aborted) return;
    if (socket.bufferedAmount * this.frameMsPerByte > MAX_SEND_BACKLOG_MS) {
      this.dropped.sent++;
      return;
    }
    socket.send(frame);
  }

  private sendJson(frame: Record<string, unknown>): void {
    const socket = this.socket;
    if (socket && socket.readyState === 1 && !this.stopping.signal.aborted)
      socket.send(JSON.stringify(frame));
  }

  private received(data: unknown): void {
    if (typeof data === "string") {
      if (parseAgentMessage(data)?.type === "clear") this.clear();
      return;
    }
    if (!(data instanceof ArrayBuffer)) return;
    let pcm = Buffer.from(data);
    // Whole samples only: an odd byte waits for the next frame.
    if (this.odd) pcm = Buffer.concat([this.odd, pcm]);
    const whole = pcm.length & ~1;
    this.odd = whole < pcm.length ? Buffer.from(pcm.subarray(whole)) : null;
    if (whole === 0) return;
    const now = Date.now();
    if (this.playEnd - now > MAX_PLAY_BACKLOG_MS) {
      this.dropped.played++;
      return;
    }
    this.player.write(pcm.subarray(0, whole));
    this.playEnd = Math.max(this.playEnd, now) + whole * this.frameMsPerByte;
    this.startTurn();
    this.scheduleTurnEnd();
  }

  /** Barge-in: what the agent queued and the meeting has not heard yet is dropped. */
  private clear(): void {
    this.player.clear();
    this.odd = null;
    this.playEnd = Date.now();
    this.scheduleTurnEnd();
  }

  private startTurn(): void {
    if (this.speaking) return;
    this.speaking = true;
    this.reportTurn("speaker.started");
    // A host may have muted the bot since: try again, beside the sound (it is already playing).
    void this.unmute();
  }

  private scheduleTurnEnd(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    const wait = Math.max(0, this.playEnd - Date.now()) + TURN_HANGOVER_MS;
    this.turnTimer = setTimeout(() => this.endTurn(), wait);
  }

  private endTurn(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = null;
    if (!this.speaking) return;
    this.speaking = false;
    this.reportTurn("speaker.stopped");
  }

  private reportTurn(type: "speaker.started" | "speaker.stopped"): void {
    this.ctx.report({
      type,
      data: { participantId: SELF_PARTICIPANT_ID, participantName: this.ctx.selfName },
    });
  }

  /** Turns the microphone on when it is off; a host's mute is logged, not fought. */
  private async unmute(): Promise<void> {
    const { page, microphone, note, log } = this.ctx;
    if (!microphone || this.stopping.signal.aborted) return;
    try {
      if ((await microphoneOn(page, microphone).catch(() => null)) === true) return;
      await setMicrophone(page, microphone, true, note);
    } catch (error) {
      const muted = error instanceof MutedByHost;
      log.warn({ err: (error as Error).message, muted }, "audio stream: could not turn the microphone on");
      if (muted)
        this.announce("warn", "audio stream: the host muted the bot; the meeting does not hear the agent");
    }
  }

  private announce(level: "info" | "warn", message: string): void {
    this.ctx.log[level](message);
    this.ctx.report({ type: "log", data: { level, message: message.slice(0, 4000) } });
  }
}

/** A connect failure in words: an error's message, else its code or its cause's (ECONNREFUSED). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { code } = error as { code?: unknown };
  const cause = error.cause instanceof Error ? describe(error.cause) : "";
  return error.message || (typeof code === "string" ? code : "") || cause || error.name;
}
