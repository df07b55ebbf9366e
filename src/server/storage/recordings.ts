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

  /**
   * Segments of a recording uploaded during the call: consecutive byte ranges of the runner's
   * fragmented MP4, numbered from 0. Saving a seq again replaces it (a retried upload).
   */
  saveSegment(botId: number, seq: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }>;
  /** The bot's stored segments, by seq. */
  segments(botId: number): Promise<StoredSegment[]>;
  openSegment(botId: number, seq: number): Readable;
  /** Deletes the bot's segments; no error when there are none. */
  removeSegments(botId: number): Promise<void>;
  /** Ids of the bots that have segments stored (a re-check at startup). */
  botsWithSegments(): Promise<number[]>;
}

export interface StoredSegment {
  seq: number;
  sizeBytes: number;
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

  /** `<dir>/segments/<botId>/<seq>.m4s`: a folder per bot, removed whole. */
  segmentDir(botId: number): string {
    return path.join(this.dir, "segments", String(botId));
  }

  saveSegment(
    botId: number,
    seq: number,
    source: Readable,
    maxBytes: number,
  ): Promise<{ sizeBytes: number }> {
    return writeStreamAtomically(
      source,
      path.join(this.segmentDir(botId), `${seq}.m4s`),
      maxBytes,
      () => new RecordingTooLargeError(maxBytes),
    );
  }

  async segments(botId: number): Promise<StoredSegment[]> {
    const dir = this.segmentDir(botId);
    const names = await readdir(dir).catch(() => [] as string[]);
    const found: StoredSegment[] = [];
    for (const name of names) {
      const match = /^(\d+)\.m4s$/.exec(name);
      if (!match) continue; // an unfinished upload (.part)
      const { size } = await stat(path.join(dir, name));
      found.push({ seq: Number(match[1]), sizeBytes: size });
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  openSegment(botId: number, seq: number): Readable {
    return createReadStream(path.join(this.segmentDir(botId), `${seq}.m4s`));
  }

  async removeSegments(botId: number): Promise<void> {
    await rm(this.segmentDir(botId), { recursive: true, force: true });
  }

  async botsWithSegments(): Promise<number[]> {
    const names = await readdir(path.join(this.dir, "segments")).catch(() => [] as string[]);
    return names.filter((name) => /^\d+$/.test(name)).map(Number);
  }

  async remove(botId: number): Promise<void> {
    await this.removeSegments(botId);
    const unfinished = `${botId}.mp4.`;
    const entries = await readdir(this.dir).catch(() => [] as string[]);
    for (const name of entries) {
      if (name.startsWith(unfinished) && name.endsWith(".part"))
        await rm(path.join(this.dir, name), { force: true });
    }
    await rm(this.file(botId), { force: true });
  }
}
