import type { Readable } from "node:stream";
import { ARTIFACT_NAME, ArtifactTooLargeError, type ArtifactStore, MAX_ARTIFACT_BYTES } from "./artifacts.js";
import type { S3Bucket } from "./s3-bucket.js";

/** Failure artifacts as `bots/<botId>/artifacts/<name>` objects in a bucket (the data dir's layout). */
export class S3ArtifactStore implements ArtifactStore {
  constructor(readonly bucket: S3Bucket) {}

  folder(botId: number): string {
    return `bots/${botId}/artifacts/`;
  }

  key(botId: number, name: string): string {
    if (!ARTIFACT_NAME.test(name)) throw new Error(`bad artifact name ${name}`);
    return this.folder(botId) + name;
  }

  save(botId: number, name: string, source: Readable): Promise<{ sizeBytes: number }> {
    return this.bucket.put(this.key(botId, name), source, {
      maxBytes: MAX_ARTIFACT_BYTES,
      tooLarge: () => new ArtifactTooLargeError(),
      contentType: "application/octet-stream",
    });
  }

  async open(botId: number, name: string): Promise<{ stream: Readable; size: number } | null> {
    const key = this.key(botId, name);
    const size = await this.bucket.size(key);
    return size === null ? null : { stream: this.bucket.read(key), size };
  }

  async removeAll(botId: number): Promise<void> {
    for (const key of await this.bucket.keysUnder(this.folder(botId))) await this.bucket.remove(key);
  }
}
