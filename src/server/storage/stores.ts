import { type ArtifactStore, LocalArtifactStore } from "./artifacts.js";
import { LocalRecordingStore, type RecordingStore } from "./recordings.js";
import type { StorageConfig } from "./settings.js";

// The AWS SDK is loaded only when the bucket is used: every server start (and every test that
// starts one) would otherwise pay for importing it.
const loadS3 = async () => {
  const [{ S3Bucket }, { S3RecordingStore }, { S3ArtifactStore }] = await Promise.all([
    import("./s3-bucket.js"),
    import("./s3-recordings.js"),
    import("./s3-artifacts.js"),
  ]);
  return { S3Bucket, S3RecordingStore, S3ArtifactStore };
};

/** The stores the server keeps recordings and artifacts in: the one place the choice is made. */
export interface Stores {
  recordings: RecordingStore;
  artifacts: ArtifactStore;
  /** Frees the store's connections (the S3 client's sockets). */
  close(): void;
}

export async function openStores(
  storage: StorageConfig,
  paths: { recordings: string; bots: string },
): Promise<Stores> {
  if (storage.kind === "local") {
    return {
      recordings: new LocalRecordingStore(paths.recordings),
      artifacts: new LocalArtifactStore(paths.bots),
      close: () => undefined,
    };
  }
  const { S3Bucket, S3RecordingStore, S3ArtifactStore } = await loadS3();
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
  const { S3Bucket } = await loadS3();
  const bucket = new S3Bucket(storage.s3);
  try {
    await bucket.verify();
  } finally {
    bucket.close();
  }
}
