import { createReadStream } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { writeStreamAtomically } from "./files.js";

/** Where recording files live: the data dir, or an S3-compatible bucket (s3-recordings.ts). */
export interface RecordingStore {
  /** Streams `source` into the bot's recording, replacing any previous one; never buffers it whole. */
  save(botId: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }>;
  /** Size in bytes, or null when there is no file. */
  size(botId: number): Promise<number | null>;
  /** Bytes `start..end` (inclusive) of the recording. */
  open(botId: number, range?: { start: number; end: number }): Readable;
  /** Deletes the bot's recording (and an unfinished upload of it); no error when there is none. */
  remove(botId: number): Promise<void>;
  /**
   * Runs `use` with a path of the recording on this machine (ffmpeg reads files): the file itself
   * for local storage; a store elsewhere would fetch a copy first and remove it afterwards.
   */
  withLocalFile<T>(botId: number, use: (file: string) => Promise<T>): Promise<T>;
}

export class RecordingTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`recording exceeds ${maxBytes} bytes`);
  }
}

export class LocalRecordingStore implements RecordingStore {
  constructor(readonly dir: string) {}

  file(botId: number): string {
    return path.join(this.dir, `${botId}.mp4`);
  }

  withLocalFile<T>(botId: number, use: (file: string) => Promise<T>): Promise<T> {
    return use(this.file(botId));
  }

  save(botId: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }> {
    return writeStreamAtomically(
      source,
      this.file(botId),
      maxBytes,
      () => new RecordingTooLargeError(maxBytes),
    );
  }

  async size(botId: number): Promise<number | null> {
    try {
      return (await stat(this.file(botId))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  open(botId: number, range?: { start: number; end: number }): Readable {
    return createReadStream(this.file(botId), range ? { start: range.start, end: range.end } : {});
  }

  async remove(botId: number): Promise<void> {
    const unfinished = `${botId}.mp4.`;
    const entries = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of entries) {
      if (name.startsWith(unfinished) && name.endsWith(".part"))
        await rm(path.join(this.dir, name), { force: true });
    }
    await rm(this.file(botId), { force: true });
  }
}
