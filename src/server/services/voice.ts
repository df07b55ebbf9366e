import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import type { Kysely } from "kysely";
import { type BotStatus, isTerminal, outputDeadlineMs, PlayAudioPayload } from "../../core/index.js";
import {
  decodeToClip,
  type InputFormat,
  type SpeechEngine,
  SpeechEngineError,
  UndecodableAudioError,
} from "../../voice/index.js";
import { parseJson } from "../db/database.js";
import type { Database } from "../db/schema.js";
import {
  BadGatewayError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PayloadTooLargeError,
  ValidationError,
} from "../errors.js";
import type { Command } from "../schemas/index.js";
import { writeStreamAtomically } from "../storage/files.js";
import { CLIP_ID, newClipId, type OutputClipStore } from "../storage/output-clips.js";
import type { BotService } from "./bots.js";
import { OPEN_COMMAND_STATES } from "./command-rows.js";
import type { CommandService } from "./commands.js";
import type { ServiceContext } from "./context.js";

/** A file to play: at most 20 MiB (20 minutes of 128 kbit/s MP3, under 2 of 48 kHz stereo WAV). */
export const MAX_OUTPUT_AUDIO_BYTES = 20 * 1024 ** 2;

/** The content types a file to play may be sent as, and the one format each is read as. */
export const OUTPUT_AUDIO_TYPES: Readonly<Record<string, InputFormat>> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/ogg": "ogg",
  "application/ogg": "ogg",
};

/** A bot plays sounds only in its call, as it sends chat messages. */
const IN_CALL: readonly BotStatus[] = ["IN_CALL"];

/**
 * A bot that speaks: every sound (speech rendered from text, a file a user sent) is turned into a
 * clip here (src/voice/clip.ts: WAV, 48 kHz, mono, 16-bit) and queued as a `play_audio` command;
 * the runner fetches the clip with its callback token and plays it. The server renders, not the
 * runner: engine keys stay here, and the runner needs one player and no decoder for every format.
 *
 * A bot's clips stay until it ends (the watchdog sweeps them, sweepEnded) or is deleted.
 */
export class VoiceService {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly bots: BotService,
    private readonly commands: CommandService,
    private readonly engine: SpeechEngine,
    private readonly clips: OutputClipStore,
  ) {}

  /** POST /v1/bots/{id}/speak: the text rendered by the engine, then queued to be played. */
  async speak(userId: number, botId: number, text: string, voice?: string): Promise<Command> {
    const chosen = voice ?? this.engine.defaultVoice;
    const problem = this.engine.voiceProblem(chosen);
    if (problem) throw new ValidationError([{ loc: ["body", "voice"], msg: problem, type: "value_error" }]);
    // Before the work of rendering: refused at once, as the queueing would refuse it after.
    await this.requireInCall(userId, botId);
    const clipId = newClipId();
    const durationMs = await this.clips.write(botId, clipId, (part) =>
      this.synthesize(botId, text, chosen, part),
    );
    return this.queueClip(userId, botId, { clipId, durationMs, source: "speak", text });
  }

  /**
   * POST /v1/bots/{id}/output-audio: the body (a WAV, MP3 or OGG file, as its content type says)
   * decoded into a clip and queued. Read to a temporary file first (at most
   * MAX_OUTPUT_AUDIO_BYTES); what cannot be played is a 422, and nothing of it is kept.
   */
  async playUpload(userId: number, botId: number, format: InputFormat, body: Readable): Promise<Command> {
    await this.requireInCall(userId, botId);
    const dir = await mkdtemp(path.join(tmpdir(), "meetbot-output-"));
    try {
      const upload = path.join(dir, `upload.${format}`);
      const { sizeBytes } = await this.receive(botId, body, upload);
      if (sizeBytes === 0) throw unplayable("The upload is empty");
      const clipId = newClipId();
      const durationMs = await this.clips
        .write(botId, clipId, (part) => decodeToClip(upload, format, part))
        .catch((err: unknown) => {
          throw err instanceof UndecodableAudioError
            ? unplayable(`Cannot play this file: ${err.message}`)
            : err;
        });
      return await this.queueClip(userId, botId, { clipId, durationMs, source: "upload" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** DELETE /v1/bots/{id}/output-audio: the runner stops the sound playing and drops those queued. */
  async stop(userId: number, botId: number): Promise<Command> {
    return this.commands.queue(userId, botId, "stop_audio", {}, IN_CALL, { reuseOpen: false });
  }

  /** GET /v1/bot-callbacks/{id}/output-clips/{clipId} (the runner's): 404 unless it is this bot's. */
  async openClip(botId: number, clipId: string): Promise<{ stream: Readable; size: number }> {
    const clip = CLIP_ID.test(clipId) ? await this.clips.open(botId, clipId) : null;
    if (!clip) throw new NotFoundError("Clip not found");
    return clip;
  }

  /**
   * Removes the clips of bots that have ended (or are gone): no runner will fetch them again. Only
   * bots holding clips on this disk are looked up. Answers how many bots' clips went.
   */
  async sweepEnded(): Promise<number> {
    const holding = await this.clips.botIds();
    if (holding.length === 0) return 0;
    const live = await this.ctx.db
      .selectFrom("bots")
      .select(["id", "status"])
      .where("id", "in", holding)
      .execute();
    const running = new Set(live.filter((bot) => !isTerminal(bot.status as BotStatus)).map((bot) => bot.id));
    const ended = holding.filter((botId) => !running.has(botId));
    for (const botId of ended) await this.clips.removeAll(botId);
    return ended.length;
  }

  private async requireInCall(userId: number, botId: number): Promise<void> {
    const bot = await this.bots.requireOwned(userId, botId);
    if (!IN_CALL.includes(bot.status as BotStatus)) {
      throw new ConflictError(`Bot is not in a call (status is ${bot.status})`);
    }
  }

  /** The engine's failure is a 502 saying what failed; the engine's own answer goes to the log. */
  private async synthesize(botId: number, text: string, voice: string, part: string): Promise<number> {
    let durationMs: number;
    try {
      durationMs = await this.engine.synthesize(text, voice, part);
    } catch (err) {
      if (!(err instanceof SpeechEngineError)) throw err;
      this.ctx.log.warn({ botId, engine: this.engine.name, answer: err.logDetail }, err.message);
      throw new BadGatewayError(err.message);
    }
    if (durationMs === 0) {
      throw new ValidationError([
        { loc: ["body", "text"], msg: "Nothing to say: the engine rendered no sound", type: "value_error" },
      ]);
    }
    return durationMs;
  }

  /** Streams the upload to `file`, cut off past the limit (one that declared more never gets here). */
  private async receive(botId: number, body: Readable, file: string): Promise<{ sizeBytes: number }> {
    const tooLarge = () => new PayloadTooLargeError(`Upload exceeds ${MAX_OUTPUT_AUDIO_BYTES} bytes`, true);
    try {
      return await writeStreamAtomically(body, file, MAX_OUTPUT_AUDIO_BYTES, tooLarge);
    } catch (err) {
      if (err instanceof PayloadTooLargeError) throw err;
      this.ctx.log.warn({ err, botId }, "output audio upload failed");
      throw new BadRequestError("Upload was interrupted");
    }
  }

  /**
   * Queues the clip behind the bot's other sounds: its deadline is its own length, theirs, and the
   * margin (outputDeadlineMs). A bot that left its call meanwhile is a 409, and the clip goes.
   */
  private async queueClip(userId: number, botId: number, payload: PlayAudioPayload): Promise<Command> {
    try {
      return await this.commands.queue(userId, botId, "play_audio", payload, IN_CALL, {
        reuseOpen: false,
        deadlineMs: async (trx) => outputDeadlineMs(payload.durationMs, await queuedOutputMs(trx, botId)),
      });
    } catch (err) {
      await this.clips.remove(botId, payload.clipId);
      throw err;
    }
  }
}

/** The length of every sound of the bot not played yet (its open play_audio commands), in ms. */
async function queuedOutputMs(db: Kysely<Database>, botId: number): Promise<number> {
  const open = await db
    .selectFrom("bot_commands")
    .select("payload")
    .where("bot_id", "=", botId)
    .where("kind", "=", "play_audio")
    .where("state", "in", [...OPEN_COMMAND_STATES])
    .execute();
  return open.reduce(
    (total, row) => total + (PlayAudioPayload.safeParse(parseJson(row.payload)).data?.durationMs ?? 0),
    0,
  );
}

/** 422 at the body: a file that cannot be played, saying why. */
function unplayable(msg: string): ValidationError {
  return new ValidationError([{ loc: ["body"], msg, type: "value_error" }]);
}
