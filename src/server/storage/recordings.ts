import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

/** Where recording files live. Local directory now; S3-compatible storage implements the same port. */
export interface RecordingStore {
  /** Streams `source` into the bot's recording, replacing any previous one; never buffers it whole. */
  save(botId: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }>;
  /** Size in bytes, or null when there is no file. */
  size(botId: number): Promise<number | null>;
  /** Bytes `start..end` (inclusive) of the recording. */
  open(botId: number, range?: { start: number; end: number }): Readable;
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

  async save(botId: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }> {
    await mkdir(this.dir, { recursive: true });
    const final = this.file(botId);
    const part = `${final}.part`;
    let sizeBytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        sizeBytes += chunk.length;
        if (sizeBytes > maxBytes) callback(new RecordingTooLargeError(maxBytes));
        else callback(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, createWriteStream(part, { mode: 0o600 }));
      await rename(part, final);
    } catch (err) {
      await rm(part, { force: true });
      throw err;
    }
    return { sizeBytes };
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
}
