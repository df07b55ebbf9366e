import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { type RecordingStore, RecordingTooLargeError, type StoredSegment } from "./recordings.js";
import type { S3Bucket } from "./s3-bucket.js";

const SEGMENTS = "recordings/segments/";

/**
 * Recordings as `recordings/<botId>.mp4` objects in a bucket (the data dir's layout); segments
 * uploaded during the call as `recordings/segments/<botId>/<seq>.m4s`.
 */
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

  async remove(botId: number): Promise<void> {
    await this.removeSegments(botId);
    await this.bucket.remove(this.key(botId));
  }

  segmentKey(botId: number, seq: number): string {
    return `${SEGMENTS}${botId}/${seq}.m4s`;
  }

  saveSegment(
    botId: number,
    seq: number,
    source: Readable,
    maxBytes: number,
  ): Promise<{ sizeBytes: number }> {
    return this.bucket.put(this.segmentKey(botId, seq), source, {
      maxBytes,
      tooLarge: () => new RecordingTooLargeError(maxBytes),
      contentType: "video/mp4",
    });
  }

  async segments(botId: number): Promise<StoredSegment[]> {
    const found: StoredSegment[] = [];
    for (const key of await this.bucket.keysUnder(`${SEGMENTS}${botId}/`)) {
      const match = /\/(\d+)\.m4s$/.exec(key);
      if (!match) continue;
      const size = await this.bucket.size(key);
      if (size !== null) found.push({ seq: Number(match[1]), sizeBytes: size });
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  openSegment(botId: number, seq: number): Readable {
    return this.bucket.read(this.segmentKey(botId, seq));
  }

  async removeSegments(botId: number): Promise<void> {
    for (const key of await this.bucket.keysUnder(`${SEGMENTS}${botId}/`)) await this.bucket.remove(key);
  }

  async botsWithSegments(): Promise<number[]> {
    const ids = new Set<number>();
    for (const key of await this.bucket.keysUnder(SEGMENTS)) {
      const match = /^recordings\/segments\/(\d+)\//.exec(key);
      if (match) ids.add(Number(match[1]));
    }
    return [...ids];
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
