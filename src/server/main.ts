import type { FastifyInstance } from "fastify";
import { buildNotesApp } from "../notes/app.js";
import { buildApp } from "./app.js";
import { SecretBox } from "./auth/secret-box.js";
import { loadServerSecret } from "./auth/tokens.js";
import { localUrl, resolveConfig, type StartServerOptions } from "./config.js";
import { type Core, createCore } from "./core.js";
import { openDatabase } from "./db/database.js";
import type { Launcher } from "./launcher/launcher.js";
import { createLauncher } from "./launcher/index.js";
import { createLogger } from "./http/api-server.js";
import { prepareAudioStreamTokens } from "./services/audio-stream.js";
import { prepareSessionKeys } from "./services/bot-accounts.js";
import { prepareCalendarUrls } from "./services/calendar-sync.js";
import { prepareDataDir } from "./storage/data-dir.js";
import { verifyStorage } from "./storage/stores.js";

export type { StartServerOptions } from "./config.js";
export type { Launcher } from "./launcher/launcher.js";

export interface RunningServer {
  /** The address this server listens on, e.g. http://127.0.0.1:8080 (https with a certificate). */
  url: string;
  port: number;
  /** The meeting-notes interface's address, when it is served (--notes-port). */
  notesUrl: string | undefined;
  /** Stops accepting requests and closes the database. Running bots keep running. */
  close(): Promise<void>;
}

/** Starts the control plane: data dir, database (migrated), secret, HTTP. */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  const config = resolveConfig(opts);
  await verifyStorage(config.storage);
  const abandoned = await prepareDataDir({ dataDir: config.dataDir, ...config.paths });
  const secret = await loadServerSecret(config.dataDir, config.jwtSecret);
  const db = await openDatabase(config.database);
  let resealed: number;
  try {
    // Stored secrets need their keys: refuse to start without them, rewrap under the current one.
    const box = new SecretBox(config.secretKeys);
    resealed =
      (await prepareSessionKeys(db.kysely, box)) +
      (await prepareAudioStreamTokens(db.kysely, box)) +
      (await prepareCalendarUrls(db.kysely, box));
  } catch (err) {
    await db.close();
    throw err;
  }

  let publicBaseUrl = config.publicBaseUrl;
  const botApiUrl = () => {
    if (!publicBaseUrl) throw new Error("publicBaseUrl is not known before the server listens");
    return publicBaseUrl;
  };
  let notesPublicUrl: string | undefined = undefined;
  const log = createLogger(config);
  // A launcher handed in belongs to the caller; one made here is closed with the server.
  let ownLauncher: Launcher | null = null;
  let core: Core | null = null;
  let app: FastifyInstance | null = null;
  let notesApp: FastifyInstance | null = null;

  /** The shutdown order: the launcher, the interfaces (long requests answered first), the workers, the database. */
  const shutDown = async () => {
    await ownLauncher?.close?.();
    await core?.releaseRequests();
    await notesApp?.close();
    await app?.close();
    await core?.stop();
    await db.close();
  };

  try {
    ownLauncher = opts.launcher ? null : await createLauncher(config);
    core = await createCore({
      config,
      db,
      secret,
      launcher: opts.launcher ?? (ownLauncher as Launcher),
      publicBaseUrl: botApiUrl,
      log,
    });
    app = await buildApp(core, botApiUrl);
    if (config.notes.port !== undefined) notesApp = await buildNotesApp(core, () => notesPublicUrl as string);
    await app.listen({ port: config.port, host: config.host });
    if (notesApp) await notesApp.listen({ port: config.notes.port as number, host: config.host });
  } catch (err) {
    // E.g. a container engine out of reach when the launcher attaches, a port taken.
    await shutDown();
    throw err;
  }
  if (resealed > 0)
    log.info(
      { resealed, keyId: config.secretKeys[0]?.id },
      "bot account sessions and audio-stream tokens re-encrypted with the current key",
    );
  if (abandoned.length > 0) log.info({ files: abandoned }, "removed unfinished uploads of an earlier run");

  const url = localUrl(config, listeningPort(app, config.port));
  publicBaseUrl ??= url;
  const notesUrl = notesApp
    ? localUrl(config, listeningPort(notesApp, config.notes.port as number))
    : undefined;
  notesPublicUrl = notesUrl;
  core.start();

  let closing: Promise<void> | undefined;
  return {
    url,
    port: listeningPort(app, config.port),
    notesUrl,
    close: () => {
      closing ??= shutDown();
      return closing;
    },
  };
}

function listeningPort(app: FastifyInstance, fallback: number): number {
  const address = app.server.address();
  return typeof address === "object" && address ? address.port : fallback;
}
