import { buildApp } from "./app.js";
import { loadServerSecret } from "./auth/tokens.js";
import { localUrl, resolveConfig, type StartServerOptions } from "./config.js";
import { openDatabase } from "./db/database.js";
import { LocalProcessLauncher, launcherOptions } from "./launcher/local-process.js";
import { prepareDataDir } from "./storage/data-dir.js";

export type { StartServerOptions } from "./config.js";
export type { Launcher } from "./launcher/launcher.js";

export interface RunningServer {
  /** The address this server listens on, e.g. http://127.0.0.1:8080 (https with a certificate). */
  url: string;
  port: number;
  /** Stops accepting requests and closes the database. Running bots keep running. */
  close(): Promise<void>;
}

/** Starts the control plane: data dir, database (migrated), secret, HTTP. */
export async function startServer(opts: StartServerOptions): Promise<RunningServer> {
  const config = resolveConfig(opts);
  const abandoned = await prepareDataDir({ dataDir: config.dataDir, ...config.paths });
  const secret = await loadServerSecret(config.dataDir, config.jwtSecret);
  const db = await openDatabase(config.database);

  let publicBaseUrl = config.publicBaseUrl;
  // A launcher handed in belongs to the caller; one made here is closed with the server.
  const ownLauncher = opts.launcher ? null : new LocalProcessLauncher(launcherOptions(config));
  const launcher = opts.launcher ?? (ownLauncher as LocalProcessLauncher);
  const app = await buildApp({
    config,
    db,
    secret,
    launcher,
    publicBaseUrl: () => {
      if (!publicBaseUrl) throw new Error("publicBaseUrl is not known before the server listens");
      return publicBaseUrl;
    },
  });
  if (abandoned.length > 0)
    app.log.info({ files: abandoned }, "removed unfinished uploads of an earlier run");

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close();
    await db.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const url = localUrl(config, port);
  publicBaseUrl ??= url;

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close: () => {
      closing ??= (async () => {
        await ownLauncher?.close();
        await app.close();
        await db.close();
      })();
      return closing;
    },
  };
}
