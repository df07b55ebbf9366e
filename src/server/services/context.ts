import type { FastifyBaseLogger } from "fastify";
import type { Kysely } from "kysely";
import type { DownloadSigner } from "../auth/signed-urls.js";
import type { JwtIssuer } from "../auth/tokens.js";
import type { ServerConfig } from "../config.js";
import type { Database, DialectName } from "../db/schema.js";
import type { Launcher } from "../launcher/launcher.js";
import type { ArtifactStore } from "../storage/artifacts.js";
import type { RecordingStore } from "../storage/recordings.js";
import type { WakeSignal } from "../wake-signal.js";

/** What services depend on. No Fastify request in here: services are callable from anywhere. */
export interface ServiceContext {
  db: Kysely<Database>;
  dialect: DialectName;
  config: ServerConfig;
  launcher: Launcher;
  jwt: JwtIssuer;
  signer: DownloadSigner;
  store: RecordingStore;
  artifactStore: ArtifactStore;
  /** The base URL runners and download links use; known once the server listens. */
  publicBaseUrl(): string;
  now(): Date;
  log: FastifyBaseLogger;
  /** Notified after a transaction that queued webhook deliveries commits: wakes the worker. */
  outbox: WakeSignal;
  /** Notified after a transaction that queued a transcript or summary job commits: wakes the job worker. */
  jobs: WakeSignal;
}
