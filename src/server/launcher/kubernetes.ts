import { ApiException, BatchV1Api, CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import pino, { type Logger } from "pino";
import type { BotConfig } from "../../core/index.js";
import { StartupError } from "../startup-error.js";
import {
  botIdOf,
  jobManifest,
  jobName,
  podFailure,
  type RunnerJobSettings,
  STOP_GRACE_SECONDS,
  secretManifest,
} from "./kubernetes-spec.js";
import { RUNNER_SELECTOR, runnerIdentity } from "./settings.js";
import type { Launcher, LauncherHost } from "./launcher.js";

export interface KubernetesLauncherOptions extends RunnerJobSettings {
  /** The cluster and the credentials (in-cluster service account or a kubeconfig: kubernetes-config.ts). */
  kubeConfig: KubeConfig;
  namespace: string;
  /** How often the runner Pods are listed to find those that cannot run. */
  pollIntervalMs: number;
  /** A Pod unschedulable this long fails its bot (UNSCHEDULABLE). */
  unschedulableTimeoutMs: number;
  log?: Logger;
}

/**
 * One `batch/v1` Job per bot (kubernetes-spec.ts), its BotConfig in a Secret the Job owns. Jobs
 * outlive the server: attach() re-adopts them by label, and a poll of the runner Pods fails the
 * bots whose Pod cannot run.
 *
 * Polling rather than the watch API: a list every few seconds is a handful of small requests a
 * minute, needs no reconnect or resourceVersion bookkeeping, and catches up by itself after an
 * API server outage.
 *
 * An account check runs as a Job of its own name and label (runnerIdentity), which stop, the
 * clean-up at attach and the Pod poll never take for a bot's (botIdOf). Nothing deletes it: it
 * ends with its runner, or at its activeDeadlineSeconds, and goes after ttlSecondsAfterFinished.
 * A check whose Pod cannot run fails at the check's own deadline.
 */
export class KubernetesLauncher implements Launcher {
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly log: Logger;
  private host: LauncherHost | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private closed = false;
  /** Pods whose failure was already handled (by uid), until they are gone. */
  private readonly handled = new Set<string>();
  /** When a Pod without a transition time was first seen unschedulable (by uid). */
  private readonly unschedulableSince = new Map<string, number>();

  constructor(private readonly options: KubernetesLauncherOptions) {
    this.batch = options.kubeConfig.makeApiClient(BatchV1Api);
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.log = options.log ?? pino({ level: "silent" });
  }

  /** The Job first, then its Secret owned by the Job's uid; the Pod waits for the Secret to appear. */
  async launch(config: BotConfig): Promise<void> {
    const { namespace } = this.options;
    const { name } = runnerIdentity(config);
    const job = await this.batch
      .createNamespacedJob({ namespace, body: jobManifest(config, this.options) })
      .catch(refused(`create Job ${name} in namespace ${namespace}`));
    const uid = job.metadata?.uid;
    try {
      if (!uid) throw new Error(`the Kubernetes API returned Job ${name} without a uid`);
      const body = secretManifest(config, { name, uid });
      await this.core
        .createNamespacedSecret({ namespace, body })
        .catch(refused(`create Secret ${body.metadata?.name} in namespace ${namespace}`));
    } catch (err) {
      await this.deleteJob(name).catch(() => {});
      throw err;
    }
  }

  /**
   * Foreground deletion: the Job stays (being deleted) until its Pod is gone, so a runner still
   * leaving and uploading keeps its Job, and its name, visible; the Pod gets the grace period.
   */
  async stop(botId: number): Promise<void> {
    await this.deleteJob(jobName(botId));
  }

  async attach(host: LauncherHost): Promise<void> {
    this.host = host;
    const { namespace } = this.options;
    // Jobs first: a bot ended by the time the running ids are read had its Job listed already.
    // Without its cluster the server could launch nothing: it does not start, and says why.
    const jobs = await this.batch
      .listNamespacedJob({ namespace, labelSelector: RUNNER_SELECTOR })
      .catch((err: unknown) => {
        throw new StartupError(
          `MEETBOT_LAUNCHER=kubernetes: ${refusal(err, `list Jobs in namespace ${namespace}`).message}`,
        );
      });
    const running = new Set(await host.runningBotIds());
    // Account checks' Jobs have no bot id: left to end and expire on their own.
    const botIds = jobs.items.map(botIdOf).filter((botId) => botId !== undefined);
    const ended = botIds.filter((botId) => !running.has(botId));
    for (const botId of ended) await this.deleteJob(jobName(botId));
    this.log.info(
      { adopted: botIds.length - ended.length, removed: ended.length },
      "kubernetes launcher: runner Jobs of running bots adopted, of ended bots removed",
    );
    this.schedulePoll();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.polling;
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.polling = this.poll()
        .catch((err: unknown) => this.log.warn({ err }, "kubernetes launcher: listing runner Pods failed"))
        .finally(() => this.schedulePoll());
    }, this.options.pollIntervalMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const pods = await this.core.listNamespacedPod({
      namespace: this.options.namespace,
      labelSelector: RUNNER_SELECTOR,
    });
    const seen = new Set<string>();
    for (const pod of pods.items) {
      const uid = pod.metadata?.uid ?? "";
      seen.add(uid);
      const botId = botIdOf(pod); // undefined for an account check's Pod
      if (botId === undefined || this.handled.has(uid)) continue;
      const failure = podFailure(
        pod,
        Date.now(),
        this.options.unschedulableTimeoutMs,
        this.firstUnschedulable(pod),
      );
      if (!failure) continue;
      const failed = await this.host?.runnerFailed(botId, failure.subCode, failure.message);
      this.log.warn({ botId, ...failure, failed }, "kubernetes launcher: a runner Pod cannot run");
      await this.deleteJob(jobName(botId));
      // Only now: after an error on the way, the next poll tries again (a bot failed twice is a no-op).
      this.handled.add(uid);
    }
    for (const uid of this.handled) if (!seen.has(uid)) this.handled.delete(uid);
    for (const uid of this.unschedulableSince.keys()) if (!seen.has(uid)) this.unschedulableSince.delete(uid);
  }

  private firstUnschedulable(pod: V1Pod): number | undefined {
    const uid = pod.metadata?.uid ?? "";
    const unschedulable = pod.status?.conditions?.some(
      (condition) => condition.type === "PodScheduled" && condition.reason === "Unschedulable",
    );
    if (!unschedulable) return undefined;
    if (!this.unschedulableSince.has(uid)) this.unschedulableSince.set(uid, Date.now());
    return this.unschedulableSince.get(uid);
  }

  /** Deletes the Job, its Pod (after the grace period) and, as their owner, its Secret; gone already is fine. */
  private async deleteJob(name: string): Promise<void> {
    try {
      await this.batch.deleteNamespacedJob({
        name,
        namespace: this.options.namespace,
        gracePeriodSeconds: STOP_GRACE_SECONDS,
        propagationPolicy: "Foreground",
      });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return;
      throw err;
    }
  }
}

const refused =
  (doing: string) =>
  (err: unknown): never => {
    throw refusal(err, doing);
  };

/**
 * The API server's own words for a refusal ("jobs.batch is forbidden: ..."), without the client's
 * dump of the response headers: this becomes the bot's deploymentError message.
 */
function refusal(err: unknown, doing: string): Error {
  if (!(err instanceof ApiException))
    return new Error(`cannot ${doing}: ${err instanceof Error ? err.message : String(err)}`);
  let reason = "";
  try {
    const status = (typeof err.body === "string" ? JSON.parse(err.body) : err.body) as { message?: string };
    reason = status.message ?? "";
  } catch {
    // not a Status object: the code alone
  }
  return new Error(`Kubernetes refused to ${doing} (HTTP ${err.code})${reason ? `: ${reason}` : ""}`);
}
