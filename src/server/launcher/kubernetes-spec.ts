import type { V1Job, V1Pod, V1Secret } from "@kubernetes/client-node";
import type { BotConfig, SubCode } from "../../core/index.js";
import {
  BOT_ID_LABEL,
  botRunnerName,
  RUNNER_ARGS,
  RUNNER_CONFIG_DIR,
  RUNNER_CONFIG_FILE,
  RUNNER_UID,
  runnerIdentity,
  STOP_GRACE_SECONDS,
} from "./settings.js";

export { STOP_GRACE_SECONDS } from "./settings.js";
/** Scheduling, pulling the image, starting the browser and joining, before maxDuration counts. */
const START_MARGIN_SECONDS = 300;
/**
 * An account check's Job runs this long at most: the start margin, then the check itself (a page
 * load and the signed-in pre-join, about a minute; the server fails the check 3 minutes after its
 * launch anyway). Past it Kubernetes ends a Pod still pulling its image or hung, and the TTL then
 * removes the Job: nothing else deletes a check's Job.
 */
export const CHECK_ACTIVE_DEADLINE_SECONDS = START_MARGIN_SECONDS + 300;
/** Where the runner keeps its spool and recording: a volume of the Pod, not the server's data dir. */
export const RUNNER_WORK_DIR = "/work";

/**
 * What one runner Pod asks for and may use. The defaults come from `make bench` (README,
 * Benchmarks, 2026-11-28): a lone video bot's whole process tree uses 0.40–0.43 cores and
 * 569–574 MB PSS, a lone audio-only bot's 0.11 cores and ~540 MB (the same browser). PSS is the
 * figure that adds up to the pages a container's memory cgroup is charged for. In a memory cgroup
 * of 500 MB a lone video bot ran once with 0.34 cores and once thrashing (0.65 cores, a dropout);
 * at 450 MB it thrashed (1 core): the request leaves room above that.
 */
export interface RunnerResources {
  /** Requested (what the scheduler reserves) for a video bot: the measured 0.43 cores, rounded up. */
  cpuMillis: number;
  /** The ceiling: joining (browser start) briefly takes more than recording; throttling at the request would drop frames. */
  cpuLimitMillis: number;
  /** Requested: the measured 574 MB PSS (547 MiB), with room for the recording's page cache. */
  memoryMiB: number;
  /**
   * The ceiling, past which the Pod is OOMKilled: room for the join's peak, the page cache of the
   * recording being written and read back for the upload, and /dev/shm (memory-backed).
   */
  memoryLimitMiB: number;
  /** /dev/shm's size: the browser runs with --disable-dev-shm-usage and PulseAudio with --disable-shm, so little lands there. */
  shmMiB: number;
}

/**
 * What an audio-only bot (`recording.video: false`) requests instead: no screen capture and no
 * video encoder leave it 0.11 cores while recording (make bench, 2026-11-28), so reserving a
 * video bot's half core would fit a third as many on a node. Its limit stays the operator's, so
 * the join's peak is not throttled.
 */
export const AUDIO_ONLY_CPU_MILLIS = 200;

export const DEFAULT_RUNNER_RESOURCES: RunnerResources = {
  cpuMillis: 500,
  cpuLimitMillis: 1000,
  memoryMiB: 640,
  memoryLimitMiB: 1024,
  shmMiB: 128,
};

/** Limits set by the operator (MEETBOT_RUNNER_CPUS, MEETBOT_RUNNER_MEMORY); a request never exceeds its limit. */
export function runnerResources(limits: { cpus?: number; memoryBytes?: number }): RunnerResources {
  const base = DEFAULT_RUNNER_RESOURCES;
  const cpuLimitMillis = limits.cpus === undefined ? base.cpuLimitMillis : Math.ceil(limits.cpus * 1000);
  const memoryLimitMiB =
    limits.memoryBytes === undefined ? base.memoryLimitMiB : Math.ceil(limits.memoryBytes / 2 ** 20);
  return {
    ...base,
    cpuMillis: Math.min(base.cpuMillis, cpuLimitMillis),
    cpuLimitMillis,
    memoryMiB: Math.min(base.memoryMiB, memoryLimitMiB),
    memoryLimitMiB,
  };
}

export interface RunnerJobSettings {
  image: string;
  resources: RunnerResources;
  /** How long a finished Job (and its Pod's logs) stays for `kubectl logs`. */
  ttlSecondsAfterFinished: number;
  /**
   * A seccomp profile on the nodes (relative to the kubelet's seccomp dir) instead of the
   * runtime's default, which refuses the user namespaces Chromium's sandbox needs (README,
   * "Chromium's sandbox"); undefined: RuntimeDefault.
   */
  seccompLocalhostProfile: string | undefined;
}

/** The CPU a runner's Pod requests: less for an audio-only bot (AUDIO_ONLY_CPU_MILLIS). */
export function cpuRequestMillis(config: BotConfig, resources: RunnerResources): number {
  return config.recording.video ? resources.cpuMillis : Math.min(resources.cpuMillis, AUDIO_ONLY_CPU_MILLIS);
}

/** A bot's Job; an account check's is `meetbot-check-<id>` (runnerIdentity). */
export function jobName(botId: number): string {
  return botRunnerName(botId);
}

/** The Secret holding the BotConfig of the Job named `job`. */
export function secretName(job: string): string {
  return `${job}-config`;
}

/**
 * The bot a runner's Job or Pod belongs to; undefined for an object without the bot-id label,
 * such as an account check's (CHECK_ID_LABEL): the launcher's clean-up and Pod poll skip those.
 */
export function botIdOf(object: { metadata?: { labels?: Record<string, string> } }): number | undefined {
  const raw = object.metadata?.labels?.[BOT_ID_LABEL];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

/**
 * The Job may run for the whole call (maxDuration) plus the waiting room before it, the start
 * and the stop (leave, upload, last events). Past it, Kubernetes ends the Pod.
 */
export function activeDeadlineSeconds(config: BotConfig): number {
  if (config.accountCheck) return CHECK_ACTIVE_DEADLINE_SECONDS;
  const { maxDuration, waitingRoomTimeout } = config.automaticLeave;
  return Math.ceil((maxDuration + waitingRoomTimeout) / 1000) + START_MARGIN_SECONDS + STOP_GRACE_SECONDS;
}

/**
 * One runner as a Job: one Pod, never restarted (a second runner would join the call twice), its
 * BotConfig read from the Secret of the same bot (secretManifest) and never in the plain env. An
 * account check's Job is the same but for its name, labels and deadline (runnerIdentity).
 */
export function jobManifest(config: BotConfig, settings: RunnerJobSettings): V1Job {
  const { name, labels } = runnerIdentity(config);
  const { resources } = settings;
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, labels },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: activeDeadlineSeconds(config),
      ttlSecondsAfterFinished: settings.ttlSecondsAfterFinished,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: STOP_GRACE_SECONDS,
          // The runner talks to the control plane, never to the cluster: no token for a page to steal.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUNNER_UID,
            runAsGroup: RUNNER_UID,
            fsGroup: RUNNER_UID,
            seccompProfile: settings.seccompLocalhostProfile
              ? { type: "Localhost", localhostProfile: settings.seccompLocalhostProfile }
              : { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "runner",
              image: settings.image,
              args: RUNNER_ARGS,
              resources: {
                requests: {
                  cpu: `${cpuRequestMillis(config, resources)}m`,
                  memory: `${resources.memoryMiB}Mi`,
                },
                limits: { cpu: `${resources.cpuLimitMillis}m`, memory: `${resources.memoryLimitMiB}Mi` },
              },
              securityContext: {
                runAsNonRoot: true,
                runAsUser: RUNNER_UID,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"] },
              },
              volumeMounts: [
                { name: "dshm", mountPath: "/dev/shm" },
                { name: "work", mountPath: RUNNER_WORK_DIR },
                { name: "config", mountPath: RUNNER_CONFIG_DIR, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: `${resources.shmMiB}Mi` } },
            { name: "work", emptyDir: {} },
            // The bot's Secret as a file, readable by root and the runner's group (fsGroup) only.
            { name: "config", secret: { secretName: secretName(name), defaultMode: 0o440 } },
          ],
        },
      },
    },
  };
}

/**
 * The bot's config, owned by its Job: deleting the Job (kill, clean-up, TTL) deletes it too. No
 * blockOwnerDeletion, which would need update rights on jobs/finalizers.
 */
export function secretManifest(config: BotConfig, job: { name: string; uid: string }): V1Secret {
  const { name, labels } = runnerIdentity(config);
  // The server's workDir is a path on its own disk; in the Pod the runner works in its volume.
  const podConfig: BotConfig = { ...config, workDir: RUNNER_WORK_DIR };
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: secretName(name),
      labels,
      ownerReferences: [
        { apiVersion: "batch/v1", kind: "Job", name: job.name, uid: job.uid, controller: true },
      ],
    },
    type: "Opaque",
    immutable: true,
    stringData: { [RUNNER_CONFIG_FILE]: JSON.stringify(podConfig) },
  };
}

export interface PodFailure {
  subCode: SubCode;
  message: string;
}

const IMAGE_PULL_REASONS = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]);

/**
 * Why this runner Pod cannot run, or undefined while it can (pending, running, or ended on its
 * own: the runner reports its own end). `unschedulableSince` is when the Pod was first seen
 * unschedulable, for a condition without a transition time.
 */
export function podFailure(
  pod: V1Pod,
  now: number,
  unschedulableTimeoutMs: number,
  unschedulableSince?: number,
): PodFailure | undefined {
  const status = pod.status ?? {};
  if (status.reason === "Evicted")
    return {
      subCode: "EVICTED",
      message: `the runner's Pod was evicted: ${status.message ?? "no reason given"}`,
    };
  for (const container of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    const waiting = container.state?.waiting;
    if (waiting?.reason && IMAGE_PULL_REASONS.has(waiting.reason))
      return {
        subCode: "IMAGE_PULL_FAILED",
        message: `the runner's image ${container.image} could not be pulled (${waiting.reason}: ${waiting.message ?? ""})`,
      };
    const terminated = container.state?.terminated ?? container.lastState?.terminated;
    if (terminated?.reason === "OOMKilled")
      return {
        subCode: "OUT_OF_MEMORY",
        message: `the runner ran out of memory (OOMKilled; its limit is ${memoryLimit(pod)})`,
      };
  }
  const scheduled = status.conditions?.find((condition) => condition.type === "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    const since = scheduled.lastTransitionTime
      ? new Date(scheduled.lastTransitionTime).getTime()
      : unschedulableSince;
    if (since !== undefined && now - since >= unschedulableTimeoutMs)
      return {
        subCode: "UNSCHEDULABLE",
        message: `the runner's Pod could not be scheduled for ${Math.round((now - since) / 1000)} s: ${scheduled.message ?? "no reason given"}`,
      };
  }
  return undefined;
}

function memoryLimit(pod: V1Pod): string {
  return String(pod.spec?.containers.find((c) => c.name === "runner")?.resources?.limits?.memory ?? "?");
}
