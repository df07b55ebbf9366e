import { isIP } from "node:net";
import { z } from "zod";
import {
  DEFAULT_CHROMIUM_PATH,
  DEFAULT_FINAL_DELIVERY_TIMEOUT_MS,
  DEFAULT_RECORDING_SEGMENT_INTERVAL_MS,
  RUNNER_LOG_LEVELS,
  type RunnerSettings,
} from "../core/index.js";
import { SUMMARY_ENGINES, TRANSCRIPTION_ENGINES } from "../intelligence/types.js";
import { DEFAULT_MODEL_DIR } from "../intelligence/pocketsphinx.js";
import { PLANS } from "../notes/plans.js";
import { SPEECH_ENGINES } from "../voice/types.js";
import { OAUTH_PROVIDERS, type OAuthProviderName } from "./auth/oauth-config.js";
import {
  type DockerEndpoint,
  DEFAULT_RUNNER_IMAGE,
  DEFAULT_RUNNER_RESOURCES,
  LAUNCHER_KINDS,
  parseByteSize,
  parseCpus,
  parseDockerHost,
} from "./launcher/settings.js";
import { S3_CHECKSUM_MODES, STORAGE_KINDS } from "./storage/settings.js";
import { parseSecretKeys, type SecretKey } from "./auth/secret-box.js";
import { StartupError } from "./startup-error.js";

/** The longest delay a Node timer takes (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A variable read as text: unset and empty are the same (the default applies), anything else must
 * parse or startup stops with `<NAME>: <message>`.
 */
function fromText<T>(fallback: T, parse: (raw: string) => T | undefined, expected: string) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined || raw.trim() === "") return fallback;
      const value = parse(raw.trim());
      if (value === undefined) {
        ctx.addIssue({ code: "custom", message: `must be ${expected} (got "${raw}")` });
        return z.NEVER;
      }
      return value;
    });
}

function wholeNumber(raw: string, min: number, max: number): number | undefined {
  if (!/^\d+$/.test(raw)) return undefined;
  const n = Number(raw);
  return n >= min && n <= max ? n : undefined;
}

const milliseconds = (fallback: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, 1, MAX_TIMER_MS), "a whole number of milliseconds, 1 or more");
const wholeFrom = (fallback: number, min: number, max: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, min, max), `a whole number from ${min} to ${max}`);
const positive = (fallback: number) =>
  fromText(
    fallback,
    (raw) => (/^\d*\.?\d+$/.test(raw) && Number(raw) > 0 ? Number(raw) : undefined),
    "a positive number",
  );
/** A request count per window; 0 switches that window's limit off. */
const perWindow = (fallback: number) =>
  fromText(fallback, (raw) => wholeNumber(raw, 0, 1_000_000_000), "a whole number (0 turns the limit off)");
const flag = (fallback: boolean) =>
  fromText(
    fallback,
    (raw) =>
      (({ "1": true, true: true, "0": false, false: false }) as Record<string, boolean>)[raw.toLowerCase()],
    "1 or 0",
  );
const httpUrl = fromText<string | undefined>(
  undefined,
  (raw) => (/^https?:$/.test(URL.parse(raw)?.protocol ?? "") ? raw.replace(/\/+$/, "") : undefined),
  "an http(s) URL",
);
/** proxy-addr's names (Fastify's trustProxy) for the loopback, link-local and unique-local ranges. */
const PROXY_RANGE_NAMES = ["loopback", "linklocal", "uniquelocal"];
function proxyList(raw: string): string[] | undefined {
  const entries = raw.split(",").map((entry) => entry.trim());
  const valid = (entry: string) => {
    if (PROXY_RANGE_NAMES.includes(entry)) return true;
    const [address = "", prefix, ...rest] = entry.split("/");
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return false;
    return prefix === undefined || wholeNumber(prefix, 0, family === 4 ? 32 : 128) !== undefined;
  };
  return entries.every(valid) ? entries : undefined;
}
const oneOf = <T extends string>(names: readonly T[], fallback: T) =>
  fromText<T>(fallback, (raw) => names.find((name) => name === raw), `one of ${names.join(", ")}`);
const optionalText = z
  .string()
  .optional()
  .transform((raw) => (raw?.trim() ? raw : undefined));

const dockerHost = fromText<DockerEndpoint | undefined>(
  undefined,
  parseDockerHost,
  "unix:///path/to/docker.sock, tcp://host:port or http://host:port",
);

const RunnerCommand = z.tuple([z.string().min(1)], z.string());

type OAuthVariable =
  | `MEETBOT_OAUTH_${Uppercase<OAuthProviderName>}_${"CLIENT_ID" | "CLIENT_SECRET" | "ISSUER"}`
  | "MEETBOT_OAUTH_REDIRECT_URL";
export const OAUTH_VARIABLES: OAuthVariable[] = [
  ...OAUTH_PROVIDERS.flatMap((name) =>
    (["CLIENT_ID", "CLIENT_SECRET", "ISSUER"] as const).map(
      (part) => `MEETBOT_OAUTH_${name.toUpperCase() as Uppercase<OAuthProviderName>}_${part}` as const,
    ),
  ),
  "MEETBOT_OAUTH_REDIRECT_URL",
];
/** Read as text here; oauthConfigFromEnv checks them together (both client halves, issuer URLs). */
const oauthVariables = Object.fromEntries(OAUTH_VARIABLES.map((name) => [name, optionalText])) as Record<
  OAuthVariable,
  typeof optionalText
>;

/**
 * Every environment variable the server reads, with its default; the README's "Environment"
 * table lists the same. Besides these, only the runner allowlist (RUNNER_ENV_ALLOWLIST: PATH,
 * HOME, locale, TMPDIR) is read, to be passed on to runners unchanged.
 */
export const ServerEnv = z.object({
  /** Checked in resolveDatabase (it may come from an option too), never echoed: it holds a password. */
  DATABASE_URL: z.string().default(""),
  MEETBOT_DATABASE_POOL_SIZE: wholeFrom(10, 1, 1000),
  /** The server's one secret, never echoed in an error. */
  MEETBOT_JWT_SECRET: optionalText.refine((value) => value === undefined || value.length >= 16, {
    message: "must be at least 16 characters",
  }),
  /**
   * The keys that encrypt secrets at rest (bot-account sessions): `<base64 of 32 bytes>`, or
   * `<id>:<base64>,<id>:<base64>` with the sealing key first (auth/secret-box.ts). Never echoed.
   */
  MEETBOT_SECRET_KEY: z
    .string()
    .optional()
    .transform((raw, ctx): SecretKey[] => {
      try {
        return parseSecretKeys(raw ?? "");
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
        return z.NEVER;
      }
    }),
  MEETBOT_ALLOWED_MEETING_HOSTS: z
    .string()
    .optional()
    .transform((raw) => parseHostList(raw ?? "")),
  MEETBOT_RATE_LIMIT_PER_MINUTE: perWindow(60),
  MEETBOT_RATE_LIMIT_PER_HOUR: perWindow(1000),
  MEETBOT_RATE_LIMIT_ENFORCE: flag(false),
  MEETBOT_DEFAULT_PLAN: oneOf(PLANS, "free"),
  MEETBOT_WATCHDOG_INTERVAL_MS: milliseconds(5_000),
  MEETBOT_LAUNCH_TIMEOUT_MS: milliseconds(120_000),
  MEETBOT_HEARTBEAT_TIMEOUT_MULTIPLE: positive(6),
  MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: flag(false),
  MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS: milliseconds(10_000),
  MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS: milliseconds(30_000),
  MEETBOT_WEBHOOK_WORKER: flag(true),
  MEETBOT_WEBHOOK_CONCURRENCY: wholeFrom(16, 1, 1000),
  MEETBOT_WEBHOOK_POLL_INTERVAL_MS: milliseconds(1000),
  MEETBOT_WEBHOOK_RETENTION_DAYS: positive(30),
  MEETBOT_NOTES_PORT: fromText<number | undefined>(
    undefined,
    (raw) => wholeNumber(raw, 0, 65_535),
    "a port number, 0 to 65535",
  ),
  MEETBOT_EVENT_STREAM_POLL_INTERVAL_MS: milliseconds(1000),
  MEETBOT_EVENT_STREAMS_PER_USER: wholeFrom(10, 1, 1000),
  MEETBOT_JOB_WORKER: flag(true),
  MEETBOT_BOT_ACCOUNT_CHECK_INTERVAL_MS: wholeFrom(86_400_000, 0, MAX_TIMER_MS),
  MEETBOT_JOB_CONCURRENCY: wholeFrom(1, 1, 64),
  MEETBOT_SCHEDULE_LEAD_MS: wholeFrom(60_000, 0, 3_600_000),
  MEETBOT_SCHEDULE_GRACE_MS: wholeFrom(300_000, 0, 86_400_000),
  /** Unset: a bot's data is kept until deleted (unless the bot has its own retention). */
  MEETBOT_RETENTION_HOURS: fromText<number | undefined>(
    undefined,
    (raw) => (/^\d*\.?\d+$/.test(raw) && Number(raw) > 0 ? Number(raw) : undefined),
    "a positive number of hours",
  ),
  MEETBOT_RETENTION_SWEEP_INTERVAL_MS: milliseconds(600_000),
  MEETBOT_CALENDAR_SYNC_INTERVAL_MS: wholeFrom(300_000, 10_000, MAX_TIMER_MS),
  MEETBOT_JOB_POLL_INTERVAL_MS: milliseconds(2000),
  MEETBOT_TRANSCRIPTION_ENGINE: oneOf(TRANSCRIPTION_ENGINES, "pocketsphinx"),
  MEETBOT_SUMMARY_ENGINE: oneOf(SUMMARY_ENGINES, "extractive"),
  MEETBOT_POCKETSPHINX_MODEL_DIR: fromText(DEFAULT_MODEL_DIR, (raw) => raw, "a path"),
  // Secrets below are never echoed in an error.
  MEETBOT_OPENAI_BASE_URL: httpUrl,
  MEETBOT_OPENAI_API_KEY: optionalText,
  MEETBOT_OPENAI_TRANSCRIPTION_MODEL: optionalText,
  MEETBOT_OPENAI_SUMMARY_BASE_URL: httpUrl,
  MEETBOT_OPENAI_SUMMARY_API_KEY: optionalText,
  MEETBOT_OPENAI_SUMMARY_MODEL: optionalText,
  MEETBOT_DEEPGRAM_BASE_URL: httpUrl,
  MEETBOT_DEEPGRAM_API_KEY: optionalText,
  MEETBOT_DEEPGRAM_MODEL: optionalText,
  MEETBOT_ASSEMBLYAI_BASE_URL: httpUrl,
  MEETBOT_ASSEMBLYAI_API_KEY: optionalText,
  /** A bot that speaks (src/voice/): checked together in config.ts (speechFromEnv). */
  MEETBOT_TTS_ENGINE: oneOf(SPEECH_ENGINES, "flite"),
  MEETBOT_TTS_BASE_URL: httpUrl,
  MEETBOT_TTS_API_KEY: optionalText,
  MEETBOT_TTS_MODEL: optionalText,
  ...oauthVariables,
  /**
   * Teams bot identification (auth/teams-bot-token.ts): all three or none, checked together in
   * config.ts; the secret is never echoed. The token URL replaces Microsoft's (tests, a proxy).
   */
  MEETBOT_TEAMS_BOT_TENANT_ID: optionalText,
  MEETBOT_TEAMS_BOT_CLIENT_ID: optionalText,
  MEETBOT_TEAMS_BOT_CLIENT_SECRET: optionalText,
  MEETBOT_TEAMS_TOKEN_URL: optionalText,
  MEETBOT_RUNNER_COMMAND: fromText<[string, ...string[]] | undefined>(
    undefined,
    (raw) => {
      try {
        return RunnerCommand.parse(JSON.parse(raw));
      } catch {
        return undefined;
      }
    },
    'a JSON array of strings, the program first (like ["node","bin/meetbot.js","run"])',
  ),
  MEETBOT_WARM_RUNNERS: wholeFrom(0, 0, 16),
  // How runners are started, and what a runner container gets (launcher/settings.ts).
  MEETBOT_LAUNCHER: oneOf(LAUNCHER_KINDS, "local"),
  MEETBOT_RUNNER_IMAGE: fromText(DEFAULT_RUNNER_IMAGE, (raw) => raw, "an image reference"),
  MEETBOT_RUNNER_CPUS: fromText(
    DEFAULT_RUNNER_RESOURCES.cpus,
    parseCpus,
    'a number of cores ("1", "0.5" or "500m")',
  ),
  MEETBOT_RUNNER_MEMORY: fromText(
    DEFAULT_RUNNER_RESOURCES.memoryBytes,
    parseByteSize,
    'a size in bytes, or with a unit ("1536Mi", "2Gi", "1G")',
  ),
  MEETBOT_RUNNER_SHM_SIZE: fromText(
    DEFAULT_RUNNER_RESOURCES.shmBytes,
    parseByteSize,
    'a size in bytes, or with a unit ("1Gi", "512Mi")',
  ),
  /** The control plane's address as runners reach it (callbacks, uploads); default the public URL. */
  MEETBOT_RUNNER_CALLBACK_URL: httpUrl,
  // Docker launcher. MEETBOT_DOCKER_HOST wins over Docker's own DOCKER_HOST.
  MEETBOT_DOCKER_HOST: dockerHost,
  DOCKER_HOST: dockerHost,
  MEETBOT_DOCKER_NETWORK: optionalText,
  /** A path to a seccomp profile (JSON), read and checked in config.ts. */
  MEETBOT_DOCKER_SECCOMP_PROFILE: optionalText,
  // These reach runners in their BotConfig (RunnerSettings), never through the environment.
  MEETBOT_CHROMIUM_PATH: fromText(DEFAULT_CHROMIUM_PATH, (raw) => raw, "a path"),
  MEETBOT_LOG_LEVEL: fromText<RunnerSettings["logLevel"]>(
    "info",
    (raw) => RUNNER_LOG_LEVELS.find((level) => level === raw),
    `one of ${RUNNER_LOG_LEVELS.join(", ")}`,
  ),
  MEETBOT_FINAL_DELIVERY_TIMEOUT_MS: fromText(
    DEFAULT_FINAL_DELIVERY_TIMEOUT_MS,
    (raw) => wholeNumber(raw, 0, 86_400_000),
    "a whole number of milliseconds, 0 to 86400000",
  ),
  MEETBOT_RECORDING_SEGMENT_INTERVAL_MS: fromText(
    DEFAULT_RECORDING_SEGMENT_INTERVAL_MS,
    (raw) => {
      const ms = wholeNumber(raw, 0, 600_000);
      return ms === 0 || (ms !== undefined && ms >= 1_000) ? ms : undefined;
    },
    "0 (no segments) or a whole number of milliseconds, 1000 to 600000",
  ),
  MEETBOT_ZOOM_WEB_BASE_URL: httpUrl,
  MEETBOT_TEAMS_WEB_BASE_URL: httpUrl,
  MEETBOT_STORAGE: oneOf(STORAGE_KINDS, "local"),
  // Checked together in config.ts (storageFromEnv): the bucket is required with MEETBOT_STORAGE=s3.
  MEETBOT_S3_BUCKET: optionalText,
  MEETBOT_S3_ENDPOINT: httpUrl,
  MEETBOT_S3_REGION: fromText("us-east-1", (raw) => raw, "a region name"),
  /** Both or neither (then the AWS SDK's own chain: env, profile, instance role); never echoed. */
  MEETBOT_S3_ACCESS_KEY_ID: optionalText,
  MEETBOT_S3_SECRET_ACCESS_KEY: optionalText,
  MEETBOT_S3_FORCE_PATH_STYLE: flag(false),
  MEETBOT_S3_CHECKSUMS: oneOf(S3_CHECKSUM_MODES, "when_required"),
  // The Kubernetes launcher (src/server/launcher/kubernetes*.ts); read only with MEETBOT_LAUNCHER=kubernetes.
  /** A kubeconfig file (its current context); unset: the Pod's service account. */
  KUBECONFIG: optionalText,
  /** Set by Kubernetes in every Pod: the service account can be used. */
  KUBERNETES_SERVICE_HOST: optionalText,
  MEETBOT_KUBE_NAMESPACE: fromText<string | undefined>(
    undefined,
    (raw) => (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(raw) ? raw : undefined),
    "a namespace name (lower-case letters, digits and '-', at most 63)",
  ),
  MEETBOT_KUBE_UNSCHEDULABLE_TIMEOUT_MS: milliseconds(120_000),
  MEETBOT_KUBE_POLL_INTERVAL_MS: milliseconds(5_000),
  MEETBOT_KUBE_JOB_TTL_SECONDS: wholeFrom(3600, 0, 31_536_000),
  MEETBOT_KUBE_SECCOMP_PROFILE: optionalText,
  /** Paths to PEM files, read and checked together in http/tls.ts (tlsFromFiles). */
  MEETBOT_TLS_CERT: optionalText,
  MEETBOT_TLS_KEY: optionalText,
  MEETBOT_TRUST_PROXY: fromText<string[]>(
    [],
    proxyList,
    `comma-separated IP addresses or CIDR ranges (or ${PROXY_RANGE_NAMES.join(", ")})`,
  ),
});
export type ServerEnv = z.infer<typeof ServerEnv>;

/** The environment, checked: a bad variable stops startup with one line per variable naming it. */
export function parseServerEnv(env: NodeJS.ProcessEnv): ServerEnv {
  const parsed = ServerEnv.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  throw new StartupError(lines.join("\n"));
}

function parseHostList(value: string): string[] {
  return value
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
}
