import type { BotConfig } from "../../core/index.js";

/** How the control plane starts runners (env MEETBOT_LAUNCHER, default local). */
export const LAUNCHER_KINDS = ["local", "docker", "kubernetes"] as const;
export type LauncherKind = (typeof LAUNCHER_KINDS)[number];

/** The labels every runner container (or Job and Pod) carries: how a launcher finds its own. */
export const RUNNER_NAME_LABEL = "app.kubernetes.io/name";
export const RUNNER_NAME = "meetbot-runner";
export const BOT_ID_LABEL = "meetbot.dev/bot-id";
/**
 * An account check's runner carries this label instead of BOT_ID_LABEL. A check's id is counted
 * apart from bots' ids and is often a running bot's too: found as that bot's runner, a check's
 * would be stopped with the bot, fail it, or be reaped as its leftover.
 */
export const CHECK_ID_LABEL = "meetbot.dev/check-id";
/** The label selector (Kubernetes) and label filter (Docker) that finds every runner. */
export const RUNNER_SELECTOR = `${RUNNER_NAME_LABEL}=${RUNNER_NAME}`;

/** A runner container's (Docker) or Job's (Kubernetes) name and labels. */
export interface RunnerIdentity {
  /** One per bot or check: a second launch of the same one is refused by the engine or the API. */
  name: string;
  labels: Record<string, string>;
}

export function botRunnerName(botId: number): string {
  return `meetbot-bot-${botId}`;
}

/** A bot's runner, or an account check's: each under its own name and id label. */
export function runnerIdentity(config: BotConfig): RunnerIdentity {
  const check = config.accountCheck;
  if (check)
    return {
      name: `meetbot-check-${check.checkId}`,
      labels: { [RUNNER_NAME_LABEL]: RUNNER_NAME, [CHECK_ID_LABEL]: String(check.checkId) },
    };
  return {
    name: botRunnerName(config.botId),
    labels: { [RUNNER_NAME_LABEL]: RUNNER_NAME, [BOT_ID_LABEL]: String(config.botId) },
  };
}

/** The image's user (Dockerfile: `useradd --uid 10001 meetbot`). */
export const RUNNER_UID = 10001;

/**
 * Where a runner container finds its BotConfig: a file the launcher puts there (a mounted Secret,
 * an archive copied into the container before it starts), never an environment variable, which
 * `docker inspect`, a Pod's spec and /proc show to more eyes than the config's secrets (the
 * callback token, a login's session) should meet. The image's user reads it; nobody else.
 */
export const RUNNER_CONFIG_DIR = "/run/meetbot";
export const RUNNER_CONFIG_FILE = "bot-config.json";
/** The container's command: the image's entrypoint is `meetbot`. */
export const RUNNER_ARGS = ["run", "--config", `${RUNNER_CONFIG_DIR}/${RUNNER_CONFIG_FILE}`];

/**
 * From SIGTERM to SIGKILL when a runner container or Pod is stopped: the runner leaves and
 * finalizes the recording (under a minute), retries its upload for about ten minutes, then its
 * last events for two more (MEETBOT_FINAL_DELIVERY_TIMEOUT_MS' default). Killing it sooner loses
 * the recording with the container.
 */
export const STOP_GRACE_SECONDS = 900;

/**
 * The default image of a runner container: the repository's Dockerfile built under this tag (as
 * docker-compose.yml does).
 */
export const DEFAULT_RUNNER_IMAGE = "meetbot:latest";

/**
 * What one runner container may use. The defaults come from `make bench` (README, Benchmarks):
 * a recording runner's whole process tree uses 0.44-0.47 cores and 636-644 MB PSS at 1280x720@25.
 */
export interface RunnerResources {
  /**
   * A cap, in cores. Default 1: about twice the measured mean, because the join, page loads and
   * the encoder's start burst above it and a tight cap drops frames.
   */
  cpus: number;
  /**
   * A hard limit, in bytes; past it the kernel kills the runner (FATAL OUT_OF_MEMORY). Default
   * 1 GiB, the Kubernetes launcher's limit too: the measured PSS plus the join's peak and the
   * page cache of the recording, which count against the same limit.
   */
  memoryBytes: number;
  /**
   * /dev/shm's size. Default 128 MiB, twice Docker's: Chromium runs with --disable-dev-shm-usage
   * and PulseAudio with --disable-shm, so little lands there (a tmpfs costs only what it holds).
   */
  shmBytes: number;
}

const MIB = 1024 * 1024;
export const DEFAULT_RUNNER_RESOURCES: RunnerResources = {
  cpus: 1,
  memoryBytes: 1024 * MIB,
  shmBytes: 128 * MIB,
};

/** Where the Docker Engine API is: a unix socket, or plain HTTP (`tcp://` or `http://`). */
export type DockerEndpoint = { socketPath: string } | { host: string; port: number; protocol: "http" };

export const DEFAULT_DOCKER_ENDPOINT: DockerEndpoint = { socketPath: "/var/run/docker.sock" };

export interface DockerSettings {
  endpoint: DockerEndpoint;
  /** The network runner containers join (NetworkMode); undefined: Docker's default bridge. */
  network: string | undefined;
  /**
   * A seccomp profile (its JSON text) for runner containers: Chromium's sandbox needs user
   * namespaces, which Docker's default profile refuses. Undefined: the engine's default.
   */
  seccompProfile: string | undefined;
}

/** Runner containers, whatever starts them. */
export interface LauncherConfig {
  kind: LauncherKind;
  /** Env MEETBOT_RUNNER_IMAGE, default DEFAULT_RUNNER_IMAGE. */
  image: string;
  resources: RunnerResources;
  docker: DockerSettings;
}

/**
 * A Docker host as DOCKER_HOST spells it: `unix:///path`, `tcp://host:port` or `http://host:port`
 * (no TLS), or a socket's absolute path. Undefined if it is none of these.
 */
export function parseDockerHost(raw: string): DockerEndpoint | undefined {
  if (raw.startsWith("/")) return { socketPath: raw };
  if (raw.startsWith("unix://")) {
    const socketPath = raw.slice("unix://".length);
    return socketPath.startsWith("/") ? { socketPath } : undefined;
  }
  const url = URL.parse(raw.replace(/^tcp:\/\//, "http://"));
  if (url?.protocol !== "http:" || !url.hostname || url.pathname.replace(/\/+$/, "") !== "") return undefined;
  const port = url.port ? Number(url.port) : 2375;
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port, protocol: "http" };
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
};

/** A byte size as Kubernetes writes quantities (`1536Mi`, `2Gi`, `1G`, `1073741824`); undefined if not one. */
export function parseByteSize(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(raw);
  if (!match) return undefined;
  const bytes = Math.round(Number(match[1]) * (SIZE_UNITS[match[2] ?? ""] as number));
  return bytes > 0 ? bytes : undefined;
}

/** Cores as a number (`1`, `0.5`) or Kubernetes millicores (`500m`); undefined if not positive. */
export function parseCpus(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?|\.\d+)(m)?$/.exec(raw);
  if (!match) return undefined;
  const cpus = Number(match[1]) / (match[2] ? 1000 : 1);
  return cpus > 0 ? cpus : undefined;
}
