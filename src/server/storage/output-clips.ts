import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";

/** A clip's (or picture's) id: random, 16 bytes as base64url (22 characters), within PlayAudioPayload's pattern. */
export const CLIP_ID = /^[A-Za-z0-9_-]{8,64}$/;

export function newClipId(): string {
  return randomBytes(16).toString("base64url");
}

/** What a bot is given to send: a clip to play (a WAV), or a picture its camera shows (a PNG). */
export type OutputFileKind = "wav" | "png";

/**
 * The clips bots play (src/voice/clip.ts) and the pictures their cameras show (media/picture.ts),
 * on this server's disk: `<outputs>/<botId>/<clipId>.wav`, `<outputs>/<botId>/<imageId>.png`.
 * A folder per bot, apart from the bot's other files, so that finding the bots that still hold
 * clips reads one small directory (sweepable); a bot's folder goes when the bot ends or is deleted.
 */
export class OutputClipStore {
  constructor(readonly dir: string) {}

  file(botId: number, clipId: string, kind: OutputFileKind = "wav"): string {
    if (!CLIP_ID.test(clipId)) throw new Error(`bad clip id ${clipId}`);
    return path.join(this.dir, String(botId), `${clipId}.${kind}`);
  }

  /**
   * Makes a clip: `produce` writes it at the path it is given (a `.part` file), which becomes the
   * clip only once `produce` has succeeded, so a runner never fetches half a clip; when it fails,
   * nothing is left. Answers what `produce` answered.
   */
  async write<T>(
    botId: number,
    clipId: string,
    produce: (part: string) => Promise<T>,
    kind: OutputFileKind = "wav",
  ): Promise<T> {
    const final = this.file(botId, clipId, kind);
    await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
    const part = `${final}.${randomBytes(6).toString("hex")}.part`;
    try {
      const result = await produce(part);
      await rename(part, final);
      return result;
    } catch (err) {
      await rm(part, { force: true });
      throw err;
    }
  }

  /** Null when the bot has no such clip. */
  async open(
    botId: number,
    clipId: string,
    kind: OutputFileKind = "wav",
  ): Promise<{ stream: Readable; size: number } | null> {
    const file = this.file(botId, clipId, kind);
    try {
      const { size } = await stat(file);
      return { stream: createReadStream(file), size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async remove(botId: number, clipId: string, kind: OutputFileKind = "wav"): Promise<void> {
    await rm(this.file(botId, clipId, kind), { force: true });
  }

  /** Every clip of the bot; no error when it has none. */
  async removeAll(botId: number): Promise<void> {
    await rm(path.join(this.dir, String(botId)), { recursive: true, force: true });
  }

  /** The bots that hold clips (or an unfinished one) on this disk. */
  async botIds(): Promise<number[]> {
    const names = await readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return [] as string[];
      throw err;
    });
    return names.filter((name) => /^[1-9][0-9]*$/.test(name)).map(Number);
  }
}
