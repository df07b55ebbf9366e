import Docker from "dockerode";
import type { BotConfig } from "../../core/index.js";
import { StartupError } from "../startup-error.js";
import type { Launcher, LauncherHost, LauncherLog } from "./launcher.js";
import { configArchive } from "./config-archive.js";
import {
  BOT_ID_LABEL,
  CHECK_ID_LABEL,
  type DockerSettings,
  RUNNER_ARGS,
  RUNNER_CONFIG_DIR,
  RUNNER_CONFIG_FILE,
  type RunnerResources,
  RUNNER_SELECTOR,
  RUNNER_UID,
  runnerIdentity,
  STOP_GRACE_SECONDS,
} from "./settings.js";

export interface DockerLauncherOptions extends DockerSettings {
  image: string;
  resources: RunnerResources;
  /** Seconds between SIGTERM and SIGKILL when a runner is stopped; default STOP_GRACE_SECONDS. */
  stopGraceSeconds?: number;
  /** Seconds before the event watch reconnects after the engine closed it. Default 1. */
  reconnectSeconds?: number;
  /** How long an account check's launch waits for the image's pull. Default CHECK_PULL_WAIT_MS. */
  checkPullWaitMs?: number;
}

/**
 * An account check waits this long for its image: the server fails a check 3 minutes after its
 * launch anyway, and a pull that hangs must not hold up the check worker (it launches one check
 * after another). The pull itself goes on, for the next launch.
 */
export const CHECK_PULL_WAIT_MS = 180_000;

interface EngineError {
  statusCode?: number;
}
const statusOf = (err: unknown) => (err as EngineError | null)?.statusCode;
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Docker's event as /events streams it (one JSON object a line). */
interface EngineEvent {
  Type?: string;
  Action?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
}

/**
 * One container per bot through the Docker Engine API. The BotConfig is a file copied into the
 * container before it starts (RUNNER_CONFIG_DIR, readable by the image's user alone), never its
 * environment, which `docker inspect` shows to anyone who may list containers. Containers carry the
 * runner labels, remove themselves when they exit, and outlive the server: after a restart
 * `attach` re-adopts those of running bots and stops those of bots that ended.
 *
 * An account check runs in a container of its own name and label (runnerIdentity): stop, the
 * clean-up at attach and the event watch go by the bot-id label, and never reach it.
 */
export class DockerLauncher implements Launcher {
  private readonly docker: Docker;
  private readonly grace: number;
  private host: LauncherHost | undefined;
  private log: LauncherLog | undefined;
  /** One pull per image at a time; launches waiting for it share it. */
  private pulling: Promise<void> | undefined;
  private events: NodeJS.ReadableStream | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  /** Seconds since the epoch of the last event seen: a reconnected watch resumes from there. */
  private since = Math.floor(Date.now() / 1000);
  private closed = false;

  constructor(private readonly options: DockerLauncherOptions) {
    this.docker = new Docker(options.endpoint);
    this.grace = options.stopGraceSeconds ?? STOP_GRACE_SECONDS;
  }

  /** The container the engine is asked to create for this bot (or account check). */
  containerSpec(config: BotConfig): Docker.ContainerCreateOptions {
    const { cpus, memoryBytes, shmBytes } = this.options.resources;
    const { name, labels } = runnerIdentity(config);
    return {
      name,
      Image: this.options.image,
      Cmd: RUNNER_ARGS,
      Labels: labels,
      // `docker stop` by hand (or `docker compose down`) gives the runner the same time to wrap up.
      StopSignal: "SIGTERM",
      StopTimeout: this.grace,
      HostConfig: {
        AutoRemove: true,
        NanoCpus: Math.round(cpus * 1e9),
        Memory: memoryBytes,
        // No swap: a runner past its memory is killed (and reported), not slowed to a crawl.
        MemorySwap: memoryBytes,
        ShmSize: shmBytes,
        ...(this.options.network ? { NetworkMode: this.options.network } : {}),
        ...(this.options.seccompProfile ? { SecurityOpt: [`seccomp=${this.options.seccompProfile}`] } : {}),
      },
    };
  }

  /**
   * Starts the bot's container. An image the engine lacks is pulled first, in the background:
   * the deploy answers at once, and a pull that fails makes the bot FATAL IMAGE_PULL_FAILED (a
   * slow one is bounded by the launch timeout, as any slow start is).
   *
   * An account check waits for the pull here instead: its launch comes from the check worker, not
   * from a request, and a launch that rejects fails the check with the reason. In the background
   * the failure would have no check to reach (runnerFailed knows bots only, and a check's id may be
   * a bot's).
   */
  async launch(config: BotConfig): Promise<void> {
    const spec = this.containerSpec(config);
    // The server's data dir means nothing inside the container: the runner works in its own tmp.
    const archive = configArchive(
      RUNNER_CONFIG_DIR.slice(RUNNER_CONFIG_DIR.lastIndexOf("/") + 1),
      RUNNER_CONFIG_FILE,
      JSON.stringify({ ...config, workDir: undefined } satisfies BotConfig),
      RUNNER_UID,
    );
    if (await this.hasImage()) {
      await this.start(spec, archive);
      return;
    }
    if (config.accountCheck) {
      await this.pullForCheck();
      await this.start(spec, archive);
      return;
    }
    const host = this.host;
    if (!host)
      throw new Error(`image ${this.options.image} is not on the Docker host (attach first to pull it)`);
    void this.pullThenStart(config.botId, spec, archive, host);
  }

  /**
   * Asks the engine to stop the bot's container: SIGTERM, then SIGKILL after the grace period.
   * Resolves once the container is found, without waiting the grace period out (a kill or the
   * watchdog must not hang on it); the container then removes itself.
   */
  async stop(botId: number): Promise<void> {
    const containers = await this.docker.listContainers({
      filters: { label: [RUNNER_SELECTOR, `${BOT_ID_LABEL}=${botId}`], status: ["running"] },
    });
    for (const container of containers) this.stopContainer(container.Id, botId);
  }

  /**
   * Goes through the runner containers that are there: those of running bots are kept (stop
   * finds them by label), those of bots that ended are stopped (a runner may still be uploading:
   * it gets the grace period) or removed. Account checks' containers are no bots' (checkLeftover).
   * Then follows the engine's events until close.
   */
  async attach(host: LauncherHost): Promise<void> {
    this.host = host;
    this.log = host.log;
    const running = new Set(await host.runningBotIds());
    const containers = await this.docker
      .listContainers({ all: true, filters: { label: [RUNNER_SELECTOR] } })
      .catch((err: unknown) => {
        const where = JSON.stringify(this.options.endpoint);
        throw new StartupError(`the Docker engine (${where}) is out of reach: ${(err as Error).message}`);
      });
    // From the time this launcher was made: the engine replays what happened since the listing.
    await this.watch();
    let adopted = 0;
    for (const container of containers) {
      if (container.Labels[CHECK_ID_LABEL] !== undefined) {
        await this.checkLeftover(container);
        continue;
      }
      const botId = Number(container.Labels[BOT_ID_LABEL]);
      if (running.has(botId)) {
        adopted += 1;
      } else if (container.State === "running") {
        this.stopContainer(container.Id, botId);
      } else {
        await this.docker
          .getContainer(container.Id)
          .remove({ force: true })
          .catch((err: unknown) =>
            this.ignoreGone(err, botId, "could not remove a finished bot's container"),
          );
      }
    }
    if (adopted > 0)
      this.log?.info({ containers: adopted }, "re-adopted the running bots' runner containers");
  }

  /**
   * An account check's container found at attach. A running one is left to finish: its check is
   * still running in the database until its deadline, its runner reports to whichever server
   * answers and exits within a few minutes (page load and sign-in checks are bounded), and the
   * container then removes itself (AutoRemove). One that is not running was created by a server
   * that stopped before starting it: nothing will start it now, and it holds the check's config
   * (the account's session) on the engine's disk, so it is removed; its check fails at its deadline.
   */
  private async checkLeftover(container: Docker.ContainerInfo): Promise<void> {
    if (container.State === "running") return;
    await this.docker
      .getContainer(container.Id)
      .remove({ force: true })
      .catch((err: unknown) => {
        if (statusOf(err) === 404) return;
        this.log?.error(
          { err, checkId: container.Labels[CHECK_ID_LABEL] },
          "could not remove an account check's container",
        );
      });
  }

  /** Stops watching; running containers are left alone. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnect);
    const events = this.events as (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;
    events?.destroy?.();
  }

  private async hasImage(): Promise<boolean> {
    try {
      await this.docker.getImage(this.options.image).inspect();
      return true;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw err;
    }
  }

  /** Creates the container, copies its config in (`archive`: RUNNER_CONFIG_DIR's parent), starts it. */
  private async start(spec: Docker.ContainerCreateOptions, archive: Buffer): Promise<void> {
    // dockerode would copy every field into the query string too, where the engine's request log
    // shows it: the name alone goes there.
    const { name, ...body } = spec;
    const request = { _query: { name }, _body: body } as unknown as Docker.ContainerCreateOptions;
    const container = await this.docker.createContainer(request);
    try {
      await container.putArchive(archive, {
        path: RUNNER_CONFIG_DIR.slice(0, RUNNER_CONFIG_DIR.lastIndexOf("/")),
      });
      await container.start();
    } catch (err) {
      // Created but not running: it would never remove itself.
      await container.remove({ force: true }).catch(() => {});
      throw err;
    }
  }

  private async pullThenStart(
    botId: number,
    spec: Docker.ContainerCreateOptions,
    archive: Buffer,
    host: LauncherHost,
  ): Promise<void> {
    try {
      try {
        await this.pullShared();
      } catch (err) {
        await host.runnerFailed(
          botId,
          "IMAGE_PULL_FAILED",
          `image ${this.options.image} could not be pulled: ${messageOf(err)}`,
        );
        return;
      }
      const stillRunning = async () => (await host.runningBotIds()).includes(botId);
      // Killed, or timed out, while the image was coming.
      if (!(await stillRunning())) return;
      try {
        await this.start(spec, archive);
      } catch (err) {
        await host.runnerFailed(botId, "LAUNCH_FAILED", messageOf(err));
        return;
      }
      // A kill that landed while the container was being created found nothing to stop.
      if (!(await stillRunning())) await this.stop(botId);
    } catch (err) {
      this.log?.error({ err, botId }, "could not start the runner after pulling its image");
    }
  }

  /** The shared pull, for at most checkPullWaitMs; rejects saying why the image is not there. */
  private async pullForCheck(): Promise<void> {
    const waitMs = this.options.checkPullWaitMs ?? CHECK_PULL_WAIT_MS;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still pulling after ${waitMs / 1000} s`)), waitMs);
    });
    try {
      await Promise.race([this.pullShared(), gaveUp]);
    } catch (err) {
      throw new Error(`image ${this.options.image} could not be pulled: ${messageOf(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  /** The pull under way, or a new one: one pull per image at a time. */
  private pullShared(): Promise<void> {
    this.pulling ??= this.pull().finally(() => (this.pulling = undefined));
    return this.pulling;
  }

  /** Pulls the image; an error the engine reports in the middle of the stream fails it too. */
  private async pull(): Promise<void> {
    const stream = await this.docker.pull(this.options.image);
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        (progress: { error?: string }) => {
          if (progress.error) reject(new Error(progress.error));
        },
      );
    });
  }

  private stopContainer(id: string, botId: number): void {
    void this.docker
      .getContainer(id)
      .stop({ t: this.grace })
      .catch((err: unknown) => this.ignoreGone(err, botId, "could not stop the runner's container"));
  }

  /** 304 (stopped already) and 404 (removed already) are what was wanted. */
  private ignoreGone(err: unknown, botId: number, what: string): void {
    if (statusOf(err) === 304 || statusOf(err) === 404) return;
    this.log?.error({ err, botId }, what);
  }

  /**
   * Follows the bots' runner containers' `oom` and `die` events until close, reconnecting if cut.
   * Only those with a bot id: an account check's container has none, and its check fails on its
   * own (the runner's report, or the check's deadline).
   */
  private async watch(): Promise<void> {
    const stream = await this.docker.getEvents({
      since: this.since,
      filters: { type: ["container"], event: ["oom", "die"], label: [RUNNER_SELECTOR, BOT_ID_LABEL] },
    });
    this.events = stream;
    let buffered = "";
    stream.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line) void this.onEvent(line);
      }
    });
    const again = () => {
      if (this.closed || this.events !== stream) return;
      this.events = undefined;
      this.reconnect = setTimeout(
        () => {
          this.watch().catch((err: unknown) => {
            this.log?.warn({ err }, "the Docker engine's events are out of reach; trying again");
            again();
          });
        },
        (this.options.reconnectSeconds ?? 1) * 1000,
      );
    };
    stream.on("end", again);
    stream.on("error", again);
  }

  /**
   * A runner killed by the kernel for its memory makes its bot FATAL OUT_OF_MEMORY. A runner that
   * exits otherwise has reported its own end before (it does so before exiting); one that died
   * without a word is left to the watchdog's HEARTBEAT_TIMEOUT, the one path that ends silent
   * runners under every launcher.
   */
  private async onEvent(line: string): Promise<void> {
    let event: EngineEvent;
    try {
      event = JSON.parse(line) as EngineEvent;
    } catch {
      this.log?.warn({ line }, "the Docker engine sent an event that is not JSON");
      return;
    }
    if (event.time) this.since = Math.max(this.since, event.time);
    const attributes = event.Actor?.Attributes ?? {};
    const botId = Number(attributes[BOT_ID_LABEL]);
    if (!Number.isInteger(botId) || !this.host) return;
    try {
      if (event.Action === "oom") {
        const mib = Math.round(this.options.resources.memoryBytes / 1024 ** 2);
        const message = `the runner's container ran out of memory (limit ${mib} MiB)`;
        // The kernel may have killed only Chromium or ffmpeg: the runner is told to wrap up.
        if (await this.host.runnerFailed(botId, "OUT_OF_MEMORY", message)) await this.stop(botId);
      } else if (event.Action === "die" && attributes.exitCode !== "0") {
        if ((await this.host.runningBotIds()).includes(botId))
          this.log?.warn(
            { botId, exitCode: attributes.exitCode },
            "the runner's container exited before its bot ended; the watchdog ends the bot when its heartbeats stop",
          );
      }
    } catch (err) {
      this.log?.error({ err, botId }, "could not act on the runner container's event");
    }
  }
}
