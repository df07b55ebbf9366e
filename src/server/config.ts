import { readFileSync } from "node:fs";
import path from "node:path";
import { allowlistedEnv, type RunnerSettings } from "../core/index.js";
import type { Plan } from "../notes/plans.js";
import { type OAuthConfig, oauthConfigFromEnv } from "./auth/oauth-config.js";
import type { SecretKey } from "./auth/secret-box.js";
import { type TeamsBotIdentityConfig, teamsBotIdentityFromEnv } from "./auth/teams-bot-token.js";
import type { DatabaseOptions } from "./db/database.js";
import { OAUTH_VARIABLES, parseServerEnv, type ServerEnv } from "./env.js";
import { checkedTlsOption, type TlsConfig, tlsFromFiles } from "./http/tls.js";
import { Engines, type EnginesConfig } from "./jobs/engines.js";
import type { KubernetesConfig } from "./launcher/kubernetes-config.js";
import type { Launcher } from "./launcher/launcher.js";
import { DEFAULT_DOCKER_ENDPOINT, type LauncherConfig } from "./launcher/settings.js";
import { StartupError } from "./startup-error.js";
import type { StorageConfig } from "./storage/settings.js";
import { DEFAULT_OPENAI_SPEECH_MODEL, DEFAULT_OPENAI_SPEECH_URL, type SpeechConfig } from "../voice/index.js";

/**
 * What `meetbot serve` (or a test, or the demo) asks for. Every field left out comes from the
 * environment (ServerEnv in env.ts), then from its default.
 */
export interface StartServerOptions {
  /** Where settings not given here come from; default process.env (the only reader of it). */
  env?: NodeJS.ProcessEnv;
  /** 0 = a free port; default 8080. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The SQLite file, the server secret, recordings and per-bot runner logs live here. */
  dataDir: string;
  /**
   * postgres:// or postgresql:// selects PostgreSQL; "" means SQLite in dataDir.
   * Default: env DATABASE_URL (unset = SQLite).
   */
  databaseUrl?: string;
  /** How runners and download links reach this server; default http(s)://<host>:<port>. */
  publicBaseUrl?: string;
  /**
   * Serve HTTPS with this certificate and key (PEM, checked as the files are); default from env
   * MEETBOT_TLS_CERT and MEETBOT_TLS_KEY, unset: plain HTTP.
   */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Default: the one env MEETBOT_LAUNCHER names (createLauncher), LocalProcessLauncher unless set. */
  launcher?: Launcher;
  /** Meeting hosts accepted besides the real platforms' ("host" or "host:port"); default from env. */
  allowedMeetingHosts?: string[];
  /** The server's pino level; default "info". */
  logLevel?: string;
  /** Where the server's log lines (JSON) go; default stdout. */
  logStream?: LogStream;
  /** When the server gives up on silent bots; defaults from env (see WatchdogConfig). */
  watchdog?: Partial<WatchdogConfig>;
  /** Requests counted per credential, and whether that is enforced; defaults from env (see RateLimitConfig). */
  rateLimit?: Partial<RateLimitConfig>;
  /** OAuth sign-in providers; default from env (see oauthConfigFromEnv). */
  oauth?: OAuthConfig;
  /** Outbound webhook requests; defaults from env (see OutboundConfig). */
  outbound?: Partial<OutboundConfig>;
  /** The webhook delivery worker; defaults from env (see WebhooksConfig). */
  webhooks?: Partial<WebhooksConfig>;
  /** The transcript and summary jobs; defaults from env (see JobsConfig). */
  jobs?: Partial<JobsConfig>;
  /** Bot account checks; defaults from env (see AccountChecksConfig). */
  accountChecks?: Partial<AccountChecksConfig>;
  /** Scheduled bots (joinAt); defaults from env (see ScheduleConfig). */
  schedule?: Partial<ScheduleConfig>;
  /** Deleting meeting data after a while; defaults from env (see RetentionConfig). */
  retention?: Partial<RetentionConfig>;
  /** Calendar feeds' syncs; defaults from env (see CalendarConfig). */
  calendars?: Partial<CalendarConfig>;
  /** The meeting-notes interface; defaults from env (see NotesConfig). */
  notes?: Partial<NotesConfig>;
  /** GET /v1/events/stream; defaults from env (see EventStreamConfig). */
  eventStream?: Partial<EventStreamConfig>;
}

/** Live events (GET /v1/events/stream, src/server/services/event-stream.ts). */
export interface EventStreamConfig {
  /**
   * How often an open stream looks for new events besides being woken by this process's own
   * (other processes' events are found this way). Env MEETBOT_EVENT_STREAM_POLL_INTERVAL_MS, default 1000.
   */
  pollIntervalMs: number;
  /** Open streams per user in this process; one more is a 429. Env MEETBOT_EVENT_STREAMS_PER_USER, default 10. */
  perUser: number;
  /** A `: ping` comment this often keeps proxies from closing a quiet stream; default 15000. */
  heartbeatMs: number;
  /** A client that takes nothing for this long while its stream is full is disconnected; default 60000. */
  stallTimeoutMs: number;
}

/** The meeting-notes interface (src/notes/). */
export interface NotesConfig {
  /** Serve it on this port too (0: a free one). Env MEETBOT_NOTES_PORT; unset: not served. */
  port: number | undefined;
  /** The plan of every user not given one (`meetbot users set-plan`). Env MEETBOT_DEFAULT_PLAN, default free. */
  defaultPlan: Plan;
}

/** The content jobs (transcripts, summaries) and their worker (src/server/jobs/). */
export interface JobsConfig {
  /** Run a job worker in this process. Env MEETBOT_JOB_WORKER, default 1. */
  worker: boolean;
  /**
   * Jobs run at once per process. Env MEETBOT_JOB_CONCURRENCY, default 1: the embedded engine
   * keeps about one core busy, and bots recording on the same machine need the others.
   */
  concurrency: number;
  /** How often the worker looks for due jobs when nothing woke it. Env MEETBOT_JOB_POLL_INTERVAL_MS, default 2000. */
  pollIntervalMs: number;
  /** Waits before the 2nd..5th try after a retryable failure; default JOB_RETRY_DELAYS_MS. */
  retryDelaysMs?: readonly number[];
  engines: EnginesConfig;
}

/** Bot account checks (services/account-checks.ts). */
export interface AccountChecksConfig {
  /**
   * Every active or unchecked account (not disabled) is checked this often.
   * Env MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS, default 86400000 (24 h); 0: no scheduled checks.
   */
  intervalMs: number;
  /** How often this process looks for due checks; default 5000. */
  pollIntervalMs: number;
  /** A check's runner that has not reported this long after its launch fails the check; default 180000. */
  deadlineMs: number;
  /** Run the checks' worker in this process: with the job worker (MEETBOT_JOB_WORKER). */
  worker: boolean;
}

/** Scheduled bots: deployed by the server before their joinAt (services/schedules.ts). */
export interface ScheduleConfig {
  /**
   * A scheduled bot is deployed this long before its joinAt, so that it is in the meeting when the
   * meeting starts (a cold start takes seconds). Env MEETBOT_SCHEDULE_LEAD_MS, default 60000.
   */
  leadMs: number;
  /**
   * A bot whose joinAt passed while no server ran is still deployed up to this long after it;
   * later it is FATAL SCHEDULE_MISSED. Env MEETBOT_SCHEDULE_GRACE_MS, default 300000 (5 min).
   */
  graceMs: number;
  /** How often this process looks for bots due; default 1000. */
  pollIntervalMs: number;
  /** Run the schedule's worker in this process: with the job worker (MEETBOT_JOB_WORKER). */
  worker: boolean;
}

/** Deleting a bot's meeting data some hours after it ended (services/retention.ts). */
export interface RetentionConfig {
  /**
   * For bots created without `retention`: their data is deleted this many hours after they
   * ended. Env MEETBOT_RETENTION_HOURS; undefined (unset): kept until deleted.
   */
  hours: number | undefined;
  /** How often this process looks for data due for deletion. Env MEETBOT_RETENTION_SWEEP_INTERVAL_MS, default 600000. */
  sweepIntervalMs: number;
  /** Run the sweeper in this process: with the job worker (MEETBOT_JOB_WORKER). */
  worker: boolean;
}

/** Calendar feeds (services/calendar-sync.ts). */
export interface CalendarConfig {
  /** Each feed is synced this often. Env MEETBOT_CALENDAR_SYNC_INTERVAL_MS, default 300000 (5 min). */
  syncIntervalMs: number;
  /** How often this process looks for feeds due; default 5000. */
  pollIntervalMs: number;
  /** A feed larger than this fails its sync. Default 10 MiB. */
  maxFeedBytes: number;
  /** Run the sync worker in this process: with the job worker (MEETBOT_JOB_WORKER). */
  worker: boolean;
}

/** The outbox worker that sends webhook and callbackUrl deliveries (src/server/webhooks/worker.ts). */
export interface WebhooksConfig {
  /**
   * Run a delivery worker in this process. Env MEETBOT_WEBHOOK_WORKER, default 1; 0 makes an
   * API-only process (another process's worker sends the deliveries it queues).
   */
  worker: boolean;
  /** Deliveries in flight at once per process, each to a different endpoint. Env MEETBOT_WEBHOOK_CONCURRENCY, default 16. */
  concurrency: number;
  /**
   * How often the worker looks for due deliveries besides being woken by this process's own
   * events (retries coming due, other processes' rows). Env MEETBOT_WEBHOOK_POLL_INTERVAL_MS, default 1000.
   */
  pollIntervalMs: number;
  /**
   * Finished deliveries (succeeded or failed) and their attempts are deleted this many days after
   * their last attempt. Env MEETBOT_WEBHOOK_RETENTION_DAYS, default 30.
   */
  retentionDays: number;
}

/** How webhook and callback deliveries reach user-chosen URLs (src/server/webhooks/outbound.ts). */
export interface OutboundConfig {
  /**
   * Allow loopback, private (RFC 1918, fc00::/7) and shared (100.64.0.0/10) targets: local
   * development, the demo and tests. Env MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1, default off.
   */
  allowPrivateTargets: boolean;
  /** Env MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS, default 10000 (spec). */
  connectTimeoutMs: number;
  /** Env MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS, default 30000 (spec). */
  responseTimeoutMs: number;
}

/**
 * Fixed clock windows, counted per credential (and per client address on the public routes) in
 * this server process. 0 = no window of that length.
 */
export interface RateLimitConfig {
  /** Env MEETBOT_RATE_LIMIT_PER_MINUTE, default 60 (the spec's planned limit). */
  perMinute: number;
  /** Env MEETBOT_RATE_LIMIT_PER_HOUR, default 1000 (the spec's planned limit). */
  perHour: number;
  /**
   * Env MEETBOT_RATE_LIMIT_ENFORCE, default false: a credential's requests are counted and shown in
   * the X-RateLimit-* headers, but refused (429) only when set, as the spec plans its limit and
   * does not enforce it. The per-address budgets of sign-in and share links are enforced always:
   * they guard passwords and tokens, not API usage.
   */
  enforce: boolean;
}

export interface WatchdogConfig {
  /** How often running bots are checked. Env MEETBOT_WATCHDOG_INTERVAL_MS, default 5000. */
  intervalMs: number;
  /** A bot still DEPLOYING this long is FATAL LAUNCH_TIMEOUT. Env MEETBOT_LAUNCH_TIMEOUT_MS, default 120000. */
  launchTimeoutMs: number;
  /**
   * A running bot silent for this many heartbeat intervals is FATAL HEARTBEAT_TIMEOUT.
   * Env MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE, default 6.
   */
  heartbeatTimeoutMultiple: number;
}

/** Runners: what the operator sets for every bot, and how the local launcher starts them. */
export interface RunnerConfig {
  /** Copied into every BotConfig (browser, platform URLs, log level, final delivery timeout). */
  settings: RunnerSettings;
  /** argv of a runner (env MEETBOT_RUNNER_COMMAND, a JSON array); undefined: `node bin/meetbot.js run`. */
  command: [string, ...string[]] | undefined;
  /** Runners kept started and waiting for a bot. Env MEETBOT_WARM_RUNNERS, default 0. */
  warmRunners: number;
  /** A runner's whole environment besides its config: the allowlisted variables of the server's. */
  env: Record<string, string>;
  /**
   * The control plane's address as runners reach it, for their callbacks and uploads (a runner in
   * a container may need another name than users do). Env MEETBOT_RUNNER_CALLBACK_URL;
   * undefined: the public base URL.
   */
  callbackBaseUrl: string | undefined;
}

/** A destination for log lines, as pino takes it. */
export interface LogStream {
  write(line: string): void;
}

export interface ServerConfig {
  host: string;
  port: number;
  dataDir: string;
  /** Undefined until known when it defaults to the listening address (port 0). */
  publicBaseUrl: string | undefined;
  /** HTTPS on every port this server listens on; undefined: plain HTTP. */
  tls: TlsConfig | undefined;
  /**
   * The reverse proxies (addresses, CIDR ranges) whose X-Forwarded-For names the client, for
   * per-address rate limits and request logs. Env MEETBOT_TRUST_PROXY, default none.
   */
  trustProxy: string[];
  allowedMeetingHosts: string[];
  logLevel: string;
  /** Undefined: stdout. */
  logStream: LogStream | undefined;
  watchdog: WatchdogConfig;
  rateLimit: RateLimitConfig;
  oauth: OAuthConfig;
  outbound: OutboundConfig;
  webhooks: WebhooksConfig;
  jobs: JobsConfig;
  accountChecks: AccountChecksConfig;
  schedule: ScheduleConfig;
  retention: RetentionConfig;
  calendars: CalendarConfig;
  notes: NotesConfig;
  eventStream: EventStreamConfig;
  /** `outputs`: the clips bots play (<dataDir>/outputs/<botId>/<clipId>.wav), kept until the bot ends. */
  paths: { database: string; recordings: string; bots: string; outputs: string };
  /** What renders a bot's speech: flite, or an OpenAI-compatible server (env MEETBOT_TTS_*). */
  speech: SpeechConfig;
  /** Recordings and failure artifacts: the data dir, or an S3-compatible bucket (env MEETBOT_STORAGE). */
  storage: StorageConfig;
  database: DatabaseOptions;
  /** Env MEETBOT_JWT_SECRET; undefined: the secret generated once into the data dir. */
  jwtSecret: string | undefined;
  /**
   * The keys secrets at rest (bot-account sessions) are encrypted with, the sealing one first
   * (auth/secret-box.ts). Env MEETBOT_SECRET_KEY; empty: none, and no bot accounts can be stored.
   */
  secretKeys: SecretKey[];
  /**
   * The Entra ID app whose client-credentials token identifies Teams bots (every Teams bot's
   * BotConfig gets it as `teamsBotToken`). Env MEETBOT_TEAMS_BOT_TENANT_ID, _CLIENT_ID,
   * _CLIENT_SECRET (all three or none) and MEETBOT_TEAMS_TOKEN_URL; undefined: bots join unidentified.
   */
  teamsBotIdentity: TeamsBotIdentityConfig | undefined;
  runner: RunnerConfig;
  /** How runners are started: local processes, Docker containers or Kubernetes Jobs. */
  launcher: LauncherConfig;
  /** The Kubernetes launcher's settings (env KUBECONFIG, MEETBOT_KUBE_*). */
  kubernetes: KubernetesConfig;
}

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";

export function resolveConfig(opts: StartServerOptions): ServerConfig {
  const raw = opts.env ?? process.env;
  const env = parseServerEnv(raw);
  const dataDir = path.resolve(opts.dataDir);
  const port = opts.port ?? DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`invalid port ${port}`);
  const databaseUrl = opts.databaseUrl ?? env.DATABASE_URL;
  return {
    host: opts.host ?? DEFAULT_HOST,
    port,
    dataDir,
    publicBaseUrl: opts.publicBaseUrl === undefined ? undefined : normalizeBaseUrl(opts.publicBaseUrl),
    tls: opts.tls ? checkedTlsOption(opts.tls) : tlsFromFiles(env.MEETBOT_TLS_CERT, env.MEETBOT_TLS_KEY),
    trustProxy: env.MEETBOT_TRUST_PROXY,
    allowedMeetingHosts: (opts.allowedMeetingHosts ?? env.MEETBOT_ALLOWED_MEETING_HOSTS).map((h) =>
      h.trim().toLowerCase(),
    ),
    logLevel: opts.logLevel ?? "info",
    logStream: opts.logStream,
    watchdog: {
      intervalMs: opts.watchdog?.intervalMs ?? env.MEETBOT_WATCHDOG_INTERVAL_MS,
      launchTimeoutMs: opts.watchdog?.launchTimeoutMs ?? env.MEETBOT_LAUNCH_TIMEOUT_MS,
      heartbeatTimeoutMultiple:
        opts.watchdog?.heartbeatTimeoutMultiple ?? env.MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE,
    },
    rateLimit: {
      perMinute: opts.rateLimit?.perMinute ?? env.MEETBOT_RATE_LIMIT_PER_MINUTE,
      perHour: opts.rateLimit?.perHour ?? env.MEETBOT_RATE_LIMIT_PER_HOUR,
      enforce: opts.rateLimit?.enforce ?? env.MEETBOT_RATE_LIMIT_ENFORCE,
    },
    oauth:
      opts.oauth ?? oauthConfigFromEnv(Object.fromEntries(OAUTH_VARIABLES.map((name) => [name, env[name]]))),
    outbound: {
      allowPrivateTargets: opts.outbound?.allowPrivateTargets ?? env.MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS,
      connectTimeoutMs: opts.outbound?.connectTimeoutMs ?? env.MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: opts.outbound?.responseTimeoutMs ?? env.MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS,
    },
    webhooks: {
      worker: opts.webhooks?.worker ?? env.MEETBOT_WEBHOOK_WORKER,
      concurrency: opts.webhooks?.concurrency ?? env.MEETBOT_WEBHOOK_CONCURRENCY,
      pollIntervalMs: opts.webhooks?.pollIntervalMs ?? env.MEETBOT_WEBHOOK_POLL_INTERVAL_MS,
      retentionDays: opts.webhooks?.retentionDays ?? env.MEETBOT_WEBHOOK_RETENTION_DAYS,
    },
    jobs: {
      worker: opts.jobs?.worker ?? env.MEETBOT_JOB_WORKER,
      concurrency: opts.jobs?.concurrency ?? env.MEETBOT_JOB_CONCURRENCY,
      pollIntervalMs: opts.jobs?.pollIntervalMs ?? env.MEETBOT_JOB_POLL_INTERVAL_MS,
      ...(opts.jobs?.retryDelaysMs ? { retryDelaysMs: opts.jobs.retryDelaysMs } : {}),
      engines: checkDefaultEngines(opts.jobs?.engines ?? enginesFromEnv(env)),
    },
    accountChecks: {
      intervalMs: opts.accountChecks?.intervalMs ?? env.MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS,
      pollIntervalMs: opts.accountChecks?.pollIntervalMs ?? 5_000,
      deadlineMs: opts.accountChecks?.deadlineMs ?? 180_000,
      worker: opts.accountChecks?.worker ?? opts.jobs?.worker ?? env.MEETBOT_JOB_WORKER,
    },
    schedule: {
      leadMs: opts.schedule?.leadMs ?? env.MEETBOT_SCHEDULE_LEAD_MS,
      graceMs: opts.schedule?.graceMs ?? env.MEETBOT_SCHEDULE_GRACE_MS,
      pollIntervalMs: opts.schedule?.pollIntervalMs ?? 1_000,
      worker: opts.schedule?.worker ?? opts.jobs?.worker ?? env.MEETBOT_JOB_WORKER,
    },
    retention: {
      hours: opts.retention && "hours" in opts.retention ? opts.retention.hours : env.MEETBOT_RETENTION_HOURS,
      sweepIntervalMs: opts.retention?.sweepIntervalMs ?? env.MEETBOT_RETENTION_SWEEP_INTERVAL_MS,
      worker: opts.retention?.worker ?? opts.jobs?.worker ?? env.MEETBOT_JOB_WORKER,
    },
    calendars: {
      syncIntervalMs: opts.calendars?.syncIntervalMs ?? env.MEETBOT_CALENDAR_SYNC_INTERVAL_MS,
      pollIntervalMs: opts.calendars?.pollIntervalMs ?? 5_000,
      maxFeedBytes: opts.calendars?.maxFeedBytes ?? 10 * 1024 * 1024,
      worker: opts.calendars?.worker ?? opts.jobs?.worker ?? env.MEETBOT_JOB_WORKER,
    },
    notes: {
      port: opts.notes?.port ?? env.MEETBOT_NOTES_PORT,
      defaultPlan: opts.notes?.defaultPlan ?? env.MEETBOT_DEFAULT_PLAN,
    },
    eventStream: {
      pollIntervalMs: opts.eventStream?.pollIntervalMs ?? env.MEETBOT_EVENT_STREAM_POLL_INTERVAL_MS,
      perUser: opts.eventStream?.perUser ?? env.MEETBOT_EVENT_STREAMS_PER_USER,
      heartbeatMs: opts.eventStream?.heartbeatMs ?? 15_000,
      stallTimeoutMs: opts.eventStream?.stallTimeoutMs ?? 60_000,
    },
    paths: {
      database: path.join(dataDir, "meetbot.sqlite"),
      recordings: path.join(dataDir, "recordings"),
      bots: path.join(dataDir, "bots"),
      outputs: path.join(dataDir, "outputs"),
    },
    speech: speechFromEnv(env),
    storage: storageFromEnv(env),
    database: resolveDatabase(databaseUrl, dataDir, env.MEETBOT_DATABASE_POOL_SIZE),
    jwtSecret: env.MEETBOT_JWT_SECRET,
    secretKeys: env.MEETBOT_SECRET_KEY,
    teamsBotIdentity: teamsBotIdentityFromEnv(env),
    runner: {
      settings: {
        browser: { executablePath: env.MEETBOT_CHROMIUM_PATH },
        platformUrls: {
          ...(env.MEETBOT_ZOOM_WEB_BASE_URL ? { zoomWeb: env.MEETBOT_ZOOM_WEB_BASE_URL } : {}),
          ...(env.MEETBOT_TEAMS_WEB_BASE_URL ? { teamsWeb: env.MEETBOT_TEAMS_WEB_BASE_URL } : {}),
        },
        logLevel: env.MEETBOT_LOG_LEVEL,
        finalDeliveryTimeout: env.MEETBOT_FINAL_DELIVERY_TIMEOUT_MS,
        recordingSegmentInterval: env.MEETBOT_RECORDING_SEGMENT_INTERVAL_MS,
      },
      command: env.MEETBOT_RUNNER_COMMAND,
      warmRunners: env.MEETBOT_WARM_RUNNERS,
      env: allowlistedEnv(raw),
      callbackBaseUrl: env.MEETBOT_RUNNER_CALLBACK_URL,
    },
    launcher: launcherFromEnv(env),
    kubernetes: {
      kubeconfig: env.KUBECONFIG,
      inCluster: env.KUBERNETES_SERVICE_HOST !== undefined,
      namespace: env.MEETBOT_KUBE_NAMESPACE,
      unschedulableTimeoutMs: env.MEETBOT_KUBE_UNSCHEDULABLE_TIMEOUT_MS,
      pollIntervalMs: env.MEETBOT_KUBE_POLL_INTERVAL_MS,
      jobTtlSeconds: env.MEETBOT_KUBE_JOB_TTL_SECONDS,
      seccompProfile: env.MEETBOT_KUBE_SECCOMP_PROFILE,
    },
  };
}

function launcherFromEnv(env: ServerEnv): LauncherConfig {
  return {
    kind: env.MEETBOT_LAUNCHER,
    image: env.MEETBOT_RUNNER_IMAGE,
    resources: {
      cpus: env.MEETBOT_RUNNER_CPUS,
      memoryBytes: env.MEETBOT_RUNNER_MEMORY,
      shmBytes: env.MEETBOT_RUNNER_SHM_SIZE,
    },
    docker: {
      endpoint: env.MEETBOT_DOCKER_HOST ?? env.DOCKER_HOST ?? DEFAULT_DOCKER_ENDPOINT,
      network: env.MEETBOT_DOCKER_NETWORK,
      seccompProfile: readSeccompProfile(env.MEETBOT_DOCKER_SECCOMP_PROFILE),
    },
  };
}

/** The profile's text, checked to be JSON: the Engine API takes the profile itself, not a path. */
function readSeccompProfile(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new StartupError(`MEETBOT_DOCKER_SECCOMP_PROFILE: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    JSON.parse(text);
  } catch {
    throw new StartupError(`MEETBOT_DOCKER_SECCOMP_PROFILE: ${file} is not JSON`);
  }
  return text;
}

/**
 * A provider engine is configured by its key (or, for OpenAI-compatible servers, which often take
 * no key, by its base URL); the summary may use its own OpenAI-compatible server (Ollama beside a
 * faster-whisper server) or share the transcription's.
 */
function enginesFromEnv(env: ServerEnv): EnginesConfig {
  const openaiBase = env.MEETBOT_OPENAI_BASE_URL;
  const openaiKey = env.MEETBOT_OPENAI_API_KEY;
  const summaryBase = env.MEETBOT_OPENAI_SUMMARY_BASE_URL ?? openaiBase;
  const summaryKey = env.MEETBOT_OPENAI_SUMMARY_API_KEY ?? openaiKey;
  const some = <T extends object>(settings: T): T =>
    Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as T;
  return {
    defaultTranscription: env.MEETBOT_TRANSCRIPTION_ENGINE,
    defaultSummary: env.MEETBOT_SUMMARY_ENGINE,
    pocketsphinxModelDir: env.MEETBOT_POCKETSPHINX_MODEL_DIR,
    ...(openaiBase || openaiKey
      ? {
          openaiTranscription: some({
            baseUrl: openaiBase,
            apiKey: openaiKey,
            model: env.MEETBOT_OPENAI_TRANSCRIPTION_MODEL,
          }),
        }
      : {}),
    ...(env.MEETBOT_DEEPGRAM_API_KEY
      ? {
          deepgram: some({
            baseUrl: env.MEETBOT_DEEPGRAM_BASE_URL,
            apiKey: env.MEETBOT_DEEPGRAM_API_KEY,
            model: env.MEETBOT_DEEPGRAM_MODEL,
          }),
        }
      : {}),
    ...(env.MEETBOT_ASSEMBLYAI_API_KEY
      ? {
          assemblyai: some({
            baseUrl: env.MEETBOT_ASSEMBLYAI_BASE_URL,
            apiKey: env.MEETBOT_ASSEMBLYAI_API_KEY,
          }),
        }
      : {}),
    ...(summaryBase || summaryKey
      ? {
          openaiSummary: some({
            baseUrl: summaryBase,
            apiKey: summaryKey,
            model: env.MEETBOT_OPENAI_SUMMARY_MODEL,
          }),
        }
      : {}),
  };
}

/** The default engines must be usable: a bot's automatic transcript would fail otherwise. */
function checkDefaultEngines(config: EnginesConfig): EnginesConfig {
  const engines = new Engines(config);
  const why =
    engines.transcriptionUnavailable(config.defaultTranscription) ??
    engines.summaryUnavailable(config.defaultSummary);
  if (why)
    throw new StartupError(`MEETBOT_TRANSCRIPTION_ENGINE / MEETBOT_SUMMARY_ENGINE: the default ${why}`);
  return config;
}

/**
 * MEETBOT_STORAGE=s3 needs a bucket; a bucket without it is refused too, as recordings would
 * quietly stay on this machine's disk.
 */
function storageFromEnv(env: ServerEnv): StorageConfig {
  const bucket = env.MEETBOT_S3_BUCKET?.trim();
  if (env.MEETBOT_STORAGE === "local") {
    if (bucket)
      throw new StartupError(
        "MEETBOT_S3_BUCKET is set but MEETBOT_STORAGE is local: set MEETBOT_STORAGE=s3 to use the bucket",
      );
    return { kind: "local" };
  }
  if (!bucket) throw new StartupError("MEETBOT_S3_BUCKET: required when MEETBOT_STORAGE=s3");
  const accessKeyId = env.MEETBOT_S3_ACCESS_KEY_ID;
  const secretAccessKey = env.MEETBOT_S3_SECRET_ACCESS_KEY;
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined))
    throw new StartupError(
      "MEETBOT_S3_ACCESS_KEY_ID and MEETBOT_S3_SECRET_ACCESS_KEY: set both, or neither (the AWS SDK's own credentials)",
    );
  return {
    kind: "s3",
    s3: {
      bucket,
      endpoint: env.MEETBOT_S3_ENDPOINT,
      region: env.MEETBOT_S3_REGION,
      credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
      forcePathStyle: env.MEETBOT_S3_FORCE_PATH_STYLE,
      checksums: env.MEETBOT_S3_CHECKSUMS,
    },
  };
}

/**
 * MEETBOT_TTS_ENGINE=openai needs a key (OpenAI) or a base URL (a compatible server that takes
 * none); its settings without it are refused, as bots would quietly speak with flite instead.
 */
function speechFromEnv(env: ServerEnv): SpeechConfig {
  const openaiSettings = (
    ["MEETBOT_TTS_BASE_URL", "MEETBOT_TTS_API_KEY", "MEETBOT_TTS_MODEL"] as const
  ).filter((name) => env[name] !== undefined);
  if (env.MEETBOT_TTS_ENGINE === "flite") {
    if (openaiSettings.length > 0)
      throw new StartupError(
        `${openaiSettings.join(", ")} set but MEETBOT_TTS_ENGINE is flite: set MEETBOT_TTS_ENGINE=openai to use ${openaiSettings.length > 1 ? "them" : "it"}`,
      );
    return { engine: "flite" };
  }
  if (env.MEETBOT_TTS_BASE_URL === undefined && env.MEETBOT_TTS_API_KEY === undefined)
    throw new StartupError(
      "MEETBOT_TTS_ENGINE=openai: set MEETBOT_TTS_API_KEY (OpenAI) or MEETBOT_TTS_BASE_URL (an OpenAI-compatible server)",
    );
  return {
    engine: "openai",
    openai: {
      baseUrl: env.MEETBOT_TTS_BASE_URL ?? DEFAULT_OPENAI_SPEECH_URL,
      apiKey: env.MEETBOT_TTS_API_KEY,
      model: env.MEETBOT_TTS_MODEL ?? DEFAULT_OPENAI_SPEECH_MODEL,
    },
  };
}

/** postgres:// or postgresql:// selects PostgreSQL; empty, SQLite in dataDir. */
function resolveDatabase(url: string, dataDir: string, poolSize: number): DatabaseOptions {
  if (url.trim() === "") return { kind: "sqlite", file: path.join(dataDir, "meetbot.sqlite") };
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new StartupError("DATABASE_URL must start with postgres:// or postgresql:// (unset it for SQLite)");
  }
  return { kind: "postgres", url, poolSize };
}

export function normalizeBaseUrl(value: string): string {
  const url = new URL(value);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`publicBaseUrl must be http(s): ${value}`);
  }
  return url.toString().replace(/\/+$/, "");
}

/**
 * The address a local client uses for a port of this server (wildcards become loopback): https
 * when the server has a certificate.
 */
export function localUrl(config: Pick<ServerConfig, "host" | "tls">, port: number): string {
  const { host } = config;
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  const scheme = config.tls ? "https" : "http";
  return `${scheme}://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
