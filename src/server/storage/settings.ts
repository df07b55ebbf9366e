/** Where recordings and failure artifacts are kept (env MEETBOT_STORAGE, default local). */
export const STORAGE_KINDS = ["local", "s3"] as const;

/**
 * When the AWS SDK adds checksums to requests (and checks them on answers). The SDK's own default
 * since 3.729, when_supported, sends CRC32 checksums (in headers or in aws-chunked trailers) that
 * several S3-compatible stores refuse or store wrongly (aws-sdk-js-v3 #6810); when_required sends
 * them only where the S3 API demands one, which AWS and the others accept alike.
 */
export const S3_CHECKSUM_MODES = ["when_required", "when_supported"] as const;
export type S3ChecksumMode = (typeof S3_CHECKSUM_MODES)[number];

export interface S3Settings {
  bucket: string;
  /** An S3-compatible store's URL (MinIO, Ceph, R2, ...); undefined: AWS for the region. */
  endpoint: string | undefined;
  region: string;
  /** Undefined: the SDK's default chain (AWS_* env, profile, instance or pod role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint>/<key>`: most self-hosted stores need it. */
  forcePathStyle: boolean;
  checksums: S3ChecksumMode;
}

export type StorageConfig = { kind: "local" } | { kind: "s3"; s3: S3Settings };
