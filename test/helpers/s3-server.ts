import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import S3rver from "s3rver";
import type { S3Settings } from "../../src/server/storage/settings.js";

/** s3rver's fixed credentials: it checks every request's signature against them. */
const ACCESS_KEY = "S3RVER";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface S3Server {
  endpoint: string;
  /** Every request the server got, in order, for asserting on what the client sent. */
  requests: SeenRequest[];
  /** Settings for a store on `bucket` (one of the buckets it was started with). */
  settings(bucket: string, extra?: Partial<S3Settings>): S3Settings;
  /** The MEETBOT_* variables that point a control plane at `bucket`. */
  env(bucket: string, extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

/**
 * A real S3-protocol server (s3rver, objects on disk in a temp dir) on 127.0.0.1, port 0, with
 * `buckets` created. Served through our own HTTP server so the tests can see request headers.
 */
export async function startS3Server(buckets: string[]): Promise<S3Server> {
  const directory = await mkdtemp(path.join(tmpdir(), "meetbot-s3-"));
  const s3 = new S3rver({ silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
  await s3.configureBuckets();
  const handle = s3.callback();
  const requests: SeenRequest[] = [];
  const server = createServer((request, response) => {
    requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
    handle(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    requests,
    settings: (bucket, extra = {}) => ({
      bucket,
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: ACCESS_KEY },
      forcePathStyle: true,
      checksums: "when_required",
      ...extra,
    }),
    env: (bucket, extra = {}) => ({
      MEETBOT_STORAGE: "s3",
      MEETBOT_S3_BUCKET: bucket,
      MEETBOT_S3_ENDPOINT: endpoint,
      MEETBOT_S3_ACCESS_KEY_ID: ACCESS_KEY,
      MEETBOT_S3_SECRET_ACCESS_KEY: ACCESS_KEY,
      MEETBOT_S3_FORCE_PATH_STYLE: "1",
      ...extra,
    }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      await rm(directory, { recursive: true, force: true });
    },
  };
}
