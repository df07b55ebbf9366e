import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { StartupError } from "../startup-error.js";
import type { KubernetesLauncherOptions } from "./kubernetes.js";
import { runnerResources } from "./kubernetes-spec.js";

/** The Kubernetes launcher's own settings (env MEETBOT_KUBE_*, KUBECONFIG: see env.ts). */
export interface KubernetesConfig {
  /** Env KUBECONFIG: a kubeconfig file (its current context); unset: the Pod's service account. */
  kubeconfig: string | undefined;
  /** Set by Kubernetes in every Pod: whether the service account can be used. */
  inCluster: boolean;
  /** Env MEETBOT_KUBE_NAMESPACE; unset: the context's namespace (in a Pod, its service account's), else "default". */
  namespace: string | undefined;
  /** Env MEETBOT_KUBE_UNSCHEDULABLE_TIMEOUT_MS, default 120000. */
  unschedulableTimeoutMs: number;
  /** Env MEETBOT_KUBE_POLL_INTERVAL_MS, default 5000. */
  pollIntervalMs: number;
  /** Env MEETBOT_KUBE_JOB_TTL_SECONDS, default 3600. */
  jobTtlSeconds: number;
  /** Env MEETBOT_KUBE_SECCOMP_PROFILE: a Localhost seccomp profile for runner Pods; unset: RuntimeDefault. */
  seccompProfile: string | undefined;
}

/** The settings every launcher shares (MEETBOT_RUNNER_IMAGE, MEETBOT_RUNNER_CPUS, MEETBOT_RUNNER_MEMORY). */
export interface RunnerImageSettings {
  image: string;
  cpus?: number;
  memoryBytes?: number;
}

/** The cluster's address and credentials: the kubeconfig file if one is named, else the service account. */
export function loadKubeConfig(config: Pick<KubernetesConfig, "kubeconfig" | "inCluster">): KubeConfig {
  const kc = new KubeConfig();
  if (config.kubeconfig) {
    try {
      kc.loadFromFile(config.kubeconfig);
    } catch (err) {
      throw new StartupError(`KUBECONFIG: cannot read ${config.kubeconfig}: ${(err as Error).message}`);
    }
    if (!kc.getCurrentCluster())
      throw new StartupError(`KUBECONFIG: ${config.kubeconfig} has no current context with a cluster`);
    return kc;
  }
  if (!config.inCluster)
    throw new StartupError(
      "MEETBOT_LAUNCHER=kubernetes: no cluster to reach: set KUBECONFIG, or run the server in a Pod (its service account)",
    );
  kc.loadFromCluster();
  return kc;
}

/** What `meetbot serve` gives the Kubernetes launcher. */
export function kubernetesLauncherOptions(
  config: KubernetesConfig,
  runner: RunnerImageSettings,
  log?: Logger,
): KubernetesLauncherOptions {
  const kubeConfig = loadKubeConfig(config);
  const contextNamespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
  return {
    kubeConfig,
    namespace: config.namespace ?? (contextNamespace?.trim() || "default"),
    image: runner.image,
    resources: runnerResources(runner),
    ttlSecondsAfterFinished: config.jobTtlSeconds,
    seccompLocalhostProfile: config.seccompProfile,
    pollIntervalMs: config.pollIntervalMs,
    unschedulableTimeoutMs: config.unschedulableTimeoutMs,
    ...(log ? { log } : {}),
  };
}
