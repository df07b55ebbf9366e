import { type ArtifactStore, LocalArtifactStore } from "./artifacts.js";
import { LocalRecordingStore, type RecordingStore } from "./recordings.js";
import { S3ArtifactStore } from "./s3-artifacts.js";
import { S3Bucket } from "./s3-bucket.js";
import { S3RecordingStore } from "./s3-recordings.js";
import type { StorageConfig } from "./settings.js";

/** The stores the server keeps recordings and artifacts in: the one place the choice is made. */
export interface Stores {
  recordings: RecordingStore;
  artifacts: ArtifactStore;
  /** Frees the store's connections (the S3 client's sockets). */
  close(): void;
}

export function openStores(storage: StorageConfig, paths: { recordings: string; bots: string }): Stores {
  if (storage.kind === "local") {
    return {
      recordings: new LocalRecordingStore(paths.recordings),
      artifacts: new LocalArtifactStore(paths.bots),
      close: () => undefined,
    };
  }
  const bucket = new S3Bucket(storage.s3);
  return {
    recordings: new S3RecordingStore(bucket),
    artifacts: new S3ArtifactStore(bucket),
    close: () => bucket.close(),
  };
}

/** At startup, before anything is served: a bucket that is missing or refuses us is a StartupError. */
export async function verifyStorage(storage: StorageConfig): Promise<void> {
  if (storage.kind === "local") return;
  const bucket = new S3Bucket(storage.s3);
  try {
    await bucket.verify();
  } finally {
    bucket.close();
  }
}
