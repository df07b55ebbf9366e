import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { type RecordingStore, RecordingTooLargeError } from "./recordings.js";
import type { S3Bucket } from "./s3-bucket.js";

/** Recordings as `recordings/<botId>.mp4` objects in a bucket (the data dir's layout). */
export class S3RecordingStore implements RecordingStore {
  constructor(readonly bucket: S3Bucket) {}

  key(botId: number): string {
    return `recordings/${botId}.mp4`;
  }

  save(botId: number, source: Readable, maxBytes: number): Promise<{ sizeBytes: number }> {
    return this.bucket.put(this.key(botId), source, {
      maxBytes,
      tooLarge: () => new RecordingTooLargeError(maxBytes),
      contentType: "video/mp4",
    });
  }

  size(botId: number): Promise<number | null> {
    return this.bucket.size(this.key(botId));
  }

  open(botId: number, range?: { start: number; end: number }): Readable {
    return this.bucket.read(this.key(botId), range);
  }

  remove(botId: number): Promise<void> {
    return this.bucket.remove(this.key(botId));
  }

  /** A copy in a temp dir of its own (TMPDIR decides where), removed after `use`. */
  async withLocalFile<T>(botId: number, use: (file: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(tmpdir(), "meetbot-recording-"));
    try {
      const file = path.join(dir, `${botId}.mp4`);
      await this.bucket.download(this.key(botId), file);
      return await use(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
