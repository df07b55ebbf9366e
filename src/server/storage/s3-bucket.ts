import { createWriteStream } from "node:fs";
import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  type CompletedPart,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { StartupError } from "../startup-error.js";
import type { S3Settings } from "./settings.js";
import { StorageUnavailableError } from "./unavailable.js";

/**
 * Upload part size. S3 wants 5 MiB or more for every part but the last and at most 10,000 parts:
 * 8 MiB parts carry up to 78 GiB, and one part is all the memory an upload holds.
 */
export const PART_BYTES = 8 * 1024 ** 2;

/**
 * One bucket of an S3-compatible store, through the calls every such store implements. No
 * DeleteObjects: it must carry a checksum, and since 3.729 the SDK sends a CRC32 where several
 * stores still demand a Content-MD5.
 */
export class S3Bucket {
  readonly client: S3Client;
  readonly name: string;

  constructor(readonly settings: S3Settings) {
    const checksums = settings.checksums === "when_required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED";
    this.client = new S3Client({
      region: settings.region,
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      forcePathStyle: settings.forcePathStyle,
      ...(settings.credentials ? { credentials: settings.credentials } : {}),
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
      // A store that stops answering fails the call (a 503, retried) instead of holding an upload
      // or a player's request open for ever; the timeout is of silence, not of a whole transfer.
      requestHandler: { connectionTimeout: 10_000, requestTimeout: 60_000 },
    });
    this.name = settings.bucket;
  }

  /** At startup: the bucket exists and these credentials may use it, or a StartupError says why not. */
  async verify(): Promise<void> {
    const where = this.settings.endpoint ?? `AWS region ${this.settings.region}`;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.name }));
    } catch (err) {
      const status = httpStatus(err);
      if (status === 404)
        throw new StartupError(`MEETBOT_S3_BUCKET: bucket "${this.name}" does not exist at ${where}`);
      if (status === 403)
        throw new StartupError(
          `MEETBOT_S3_BUCKET: access to bucket "${this.name}" at ${where} denied (check MEETBOT_S3_ACCESS_KEY_ID and MEETBOT_S3_SECRET_ACCESS_KEY)`,
        );
      throw new StartupError(
        `MEETBOT_S3_ENDPOINT: could not reach bucket "${this.name}" at ${where}: ${describe(err)}`,
      );
    }
  }

  /**
   * Streams `source` into `key`, past `maxBytes` rejecting with `tooLarge()`. Up to one part it is
   * one PutObject; beyond, a multipart upload, part by part (reading pauses while a part is sent).
   * Either way S3 shows the object only once it is whole, and a failed multipart upload is
   * aborted: readers see the previous object or none, never half of one.
   */
  async put(
    key: string,
    source: Readable,
    opts: { maxBytes: number; tooLarge: () => Error; contentType: string },
  ): Promise<{ sizeBytes: number }> {
    let sizeBytes = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let upload: { id: string; parts: CompletedPart[] } | undefined;
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        sizeBytes += chunk.length;
        if (sizeBytes > opts.maxBytes) throw opts.tooLarge();
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= PART_BYTES) {
          upload ??= { id: await this.startMultipart(key, opts.contentType), parts: [] };
          await this.uploadPart(key, upload, Buffer.concat(pending));
          pending = [];
          pendingBytes = 0;
        }
      }
      const rest = Buffer.concat(pending);
      if (!upload) {
        await this.attempt(() =>
          this.client.send(
            new PutObjectCommand({
              Bucket: this.name,
              Key: key,
              Body: rest,
              ContentLength: rest.length,
              ContentType: opts.contentType,
            }),
          ),
        );
      } else {
        const started = upload;
        if (rest.length > 0) await this.uploadPart(key, started, rest);
        await this.attempt(() =>
          this.client.send(
            new CompleteMultipartUploadCommand({
              Bucket: this.name,
              Key: key,
              UploadId: started.id,
              MultipartUpload: { Parts: started.parts },
            }),
          ),
        );
      }
    } catch (err) {
      if (upload) await this.abortMultipart(key, upload.id);
      throw err;
    }
    return { sizeBytes };
  }

  /** The object's size, or null when there is none. */
  async size(key: string): Promise<number | null> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.name, Key: key }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (httpStatus(err) === 404) return null;
      throw unavailable(err);
    }
  }

  /**
   * Bytes `start..end` (inclusive) of the object, or all of it. The stream is returned at once and
   * filled when S3 answers; destroying it aborts the request.
   */
  read(key: string, range?: { start: number; end: number }): Readable {
    const out = new PassThrough();
    const controller = new AbortController();
    out.once("close", () => controller.abort());
    this.client
      .send(
        new GetObjectCommand({
          Bucket: this.name,
          Key: key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
        { abortSignal: controller.signal },
      )
      .then((answer) => pipeline(answer.Body as Readable, out))
      .catch((err: unknown) => out.destroy(unavailable(err)));
    return out;
  }

  /** Copies the object into `file` on this machine. */
  async download(key: string, file: string): Promise<void> {
    await pipeline(this.read(key), createWriteStream(file, { mode: 0o600 }));
  }

  /** No error when there is no such object (S3 answers a delete of a missing key with 204). */
  async remove(key: string): Promise<void> {
    await this.attempt(() => this.client.send(new DeleteObjectCommand({ Bucket: this.name, Key: key })));
  }

  async keysUnder(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.attempt(() =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.name,
            Prefix: prefix,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        ),
      );
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  close(): void {
    this.client.destroy();
  }

  private async startMultipart(key: string, contentType: string): Promise<string> {
    const started = await this.attempt(() =>
      this.client.send(
        new CreateMultipartUploadCommand({ Bucket: this.name, Key: key, ContentType: contentType }),
      ),
    );
    if (!started.UploadId) throw new StorageUnavailableError("the store started no multipart upload");
    return started.UploadId;
  }

  private async uploadPart(key: string, upload: { id: string; parts: CompletedPart[] }, body: Buffer) {
    const PartNumber = upload.parts.length + 1;
    const sent = await this.attempt(() =>
      this.client.send(
        new UploadPartCommand({
          Bucket: this.name,
          Key: key,
          UploadId: upload.id,
          PartNumber,
          Body: body,
          ContentLength: body.length,
        }),
      ),
    );
    // With checksums on, CompleteMultipartUpload must repeat each part's.
    upload.parts.push({
      PartNumber,
      ETag: sent.ETag,
      ...(sent.ChecksumCRC32 ? { ChecksumCRC32: sent.ChecksumCRC32 } : {}),
      ...(sent.ChecksumCRC32C ? { ChecksumCRC32C: sent.ChecksumCRC32C } : {}),
      ...(sent.ChecksumCRC64NVME ? { ChecksumCRC64NVME: sent.ChecksumCRC64NVME } : {}),
      ...(sent.ChecksumSHA1 ? { ChecksumSHA1: sent.ChecksumSHA1 } : {}),
      ...(sent.ChecksumSHA256 ? { ChecksumSHA256: sent.ChecksumSHA256 } : {}),
    });
  }

  /**
   * Best effort: the parts of an upload that is never completed are invisible, but billed until
   * aborted. Some stores (s3rver) cannot abort; a bucket lifecycle rule
   * (AbortIncompleteMultipartUpload) sweeps what is left either way (README "Storage").
   */
  private async abortMultipart(key: string, uploadId: string): Promise<void> {
    await this.client
      .send(new AbortMultipartUploadCommand({ Bucket: this.name, Key: key, UploadId: uploadId }))
      .catch(() => undefined);
  }

  /** A call whose failure is the store's, not the caller's. */
  private async attempt<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw unavailable(err);
    }
  }
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

function describe(err: unknown): string {
  const { name, message } = err as Error;
  return message && message !== name ? `${name}: ${message}` : String(name);
}

function unavailable(err: unknown): Error {
  if (err instanceof StorageUnavailableError) return err;
  return new StorageUnavailableError(`S3: ${describe(err)}`, { cause: err });
}
