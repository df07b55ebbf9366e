import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod, V1PodStatus } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { BotConfig } from "../../src/core/index.js";
import { resolveConfig } from "../../src/server/config.js";
import { kubernetesLauncherOptions } from "../../src/server/launcher/kubernetes-config.js";
import {
  activeDeadlineSeconds,
  jobManifest,
  podFailure,
  runnerResources,
} from "../../src/server/launcher/kubernetes-spec.js";
import { StartupError } from "../../src/server/startup-error.js";

/**
 * The Kubernetes launcher's pure parts: how a Pod's status is read, the resources and the
 * deadline, and where its settings come from. The launcher against an API server is
 * test/integration/launcher-kubernetes.test.ts.
 */

const pod = (status: V1PodStatus): V1Pod => ({
  spec: { containers: [{ name: "runner", resources: { limits: { memory: "1024Mi" } } }] },
  status,
});
const runner = (state: NonNullable<V1PodStatus["containerStatuses"]>[number]["state"]) =>
  pod({
    containerStatuses: [
      { name: "runner", image: "meetbot:1", imageID: "", ready: false, restartCount: 0, state },
    ],
  });
const NOW = Date.parse("2026-11-23T12:00:00Z");

describe("podFailure", () => {
  it("leaves alone a Pod that can still run or ended on its own", () => {
    // The Secret is created after the Job: the kubelet waits for it.
    expect(
      podFailure(runner({ waiting: { reason: "CreateContainerConfigError" } }), NOW, 120_000),
    ).toBeUndefined();
    expect(podFailure(runner({ waiting: { reason: "ContainerCreating" } }), NOW, 120_000)).toBeUndefined();
    expect(podFailure(runner({ running: {} }), NOW, 120_000)).toBeUndefined();
    expect(
      podFailure(runner({ terminated: { exitCode: 1, reason: "Error" } }), NOW, 120_000),
    ).toBeUndefined();
    expect(podFailure(pod({ phase: "Succeeded" }), NOW, 120_000)).toBeUndefined();
    expect(podFailure({}, NOW, 120_000)).toBeUndefined();
  });

  it("reads each image pull failure, in an init container too", () => {
    for (const reason of ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"])
      expect(podFailure(runner({ waiting: { reason, message: "no such image" } }), NOW, 1)).toEqual({
        subCode: "IMAGE_PULL_FAILED",
        message: `the runner's image meetbot:1 could not be pulled (${reason}: no such image)`,
      });
    const init = pod({
      initContainerStatuses: [
        {
          name: "init",
          image: "x:1",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "ErrImagePull" } },
        },
      ],
    });
    expect(podFailure(init, NOW, 1)?.subCode).toBe("IMAGE_PULL_FAILED");
  });

  it("reads an OOM kill from the container's last state as well", () => {
    const restarted = pod({
      containerStatuses: [
        {
          name: "runner",
          image: "meetbot:1",
          imageID: "",
          ready: false,
          restartCount: 1,
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: { terminated: { exitCode: 137, reason: "OOMKilled" } },
        },
      ],
    });
    expect(podFailure(restarted, NOW, 1)).toEqual({
      subCode: "OUT_OF_MEMORY",
      message: "the runner ran out of memory (OOMKilled; its limit is 1024Mi)",
    });
  });

  it("fails an unschedulable Pod only past the timeout, from the condition's time or else the first sighting", () => {
    const unschedulable = (lastTransitionTime?: Date) =>
      pod({
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "no nodes",
            ...(lastTransitionTime ? { lastTransitionTime } : {}),
          },
        ],
      });
    expect(podFailure(unschedulable(new Date(NOW - 119_000)), NOW, 120_000)).toBeUndefined();
    expect(podFailure(unschedulable(new Date(NOW - 120_000)), NOW, 120_000)).toEqual({
      subCode: "UNSCHEDULABLE",
      message: "the runner's Pod could not be scheduled for 120 s: no nodes",
    });
    expect(podFailure(unschedulable(), NOW, 120_000, NOW - 60_000)).toBeUndefined();
    expect(podFailure(unschedulable(), NOW, 120_000, NOW - 180_000)?.subCode).toBe("UNSCHEDULABLE");
    expect(podFailure(unschedulable(), NOW, 120_000)).toBeUndefined();
  });
});

describe("the runner's resources and deadline", () => {
  it("takes the operator's limits and never requests more than a limit", () => {
    expect(runnerResources({})).toMatchObject({
      cpuMillis: 500,
      cpuLimitMillis: 1000,
      memoryMiB: 640,
      memoryLimitMiB: 1024,
    });
    expect(runnerResources({ cpus: 2, memoryBytes: 2 * 2 ** 30 })).toMatchObject({
      cpuMillis: 500,
      cpuLimitMillis: 2000,
      memoryMiB: 640,
      memoryLimitMiB: 2048,
    });
    expect(runnerResources({ cpus: 0.25, memoryBytes: 512 * 2 ** 20 })).toMatchObject({
      cpuMillis: 250,
      cpuLimitMillis: 250,
      memoryMiB: 512,
      memoryLimitMiB: 512,
    });
  });

  it("requests less CPU for an audio-only bot, never more than the operator's limit, and the same memory", () => {
    const resourcesOf = (recording: object, limits: { cpus?: number } = {}) => {
      const config = BotConfig.parse({
        botId: 1,
        meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
        callback: { baseUrl: "http://meetbot:8080", token: "a".repeat(32) },
        upload: { url: "http://meetbot:8080/upload" },
        recording,
      });
      const settings = {
        image: "meetbot:1",
        resources: runnerResources(limits),
        ttlSecondsAfterFinished: 60,
        seccompLocalhostProfile: undefined,
      };
      return jobManifest(config, settings).spec?.template.spec?.containers[0]?.resources;
    };
    expect(resourcesOf({})).toEqual({
      requests: { cpu: "500m", memory: "640Mi" },
      limits: { cpu: "1000m", memory: "1024Mi" },
    });
    expect(resourcesOf({ video: false })).toEqual({
      requests: { cpu: "200m", memory: "640Mi" },
      limits: { cpu: "1000m", memory: "1024Mi" },
    });
    expect(resourcesOf({ video: false }, { cpus: 0.1 })).toEqual({
      requests: { cpu: "100m", memory: "640Mi" },
      limits: { cpu: "100m", memory: "1024Mi" },
    });
  });

  it("gives a bot with default timeouts its 4 hours, the waiting room, and 20 minutes to start and stop", () => {
    const config = BotConfig.parse({
      botId: 1,
      meetingInfo: { platform: "google", meetingUrl: "https://meet.google.com/abc-defg-hij" },
      callback: { baseUrl: "http://meetbot:8080", token: "a".repeat(32) },
      upload: { url: "http://meetbot:8080/upload" },
    });
    expect(activeDeadlineSeconds(config)).toBe(4 * 3600 + 300 + 300 + 900);
  });
});

describe("the Kubernetes launcher's settings", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "meetbot-kube-config-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const kubeconfig = join(dataDir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "prod", cluster: { server: "https://k8s.example.com:6443" } }],
      users: [{ name: "meetbot", user: { token: "t" } }],
      contexts: [{ name: "prod", context: { cluster: "prod", user: "meetbot", namespace: "bots" } }],
      "current-context": "prod",
    }),
  );
  const options = (env: Record<string, string>) =>
    kubernetesLauncherOptions(resolveConfig({ dataDir, env }).kubernetes, { image: "meetbot:1" });

  it("reaches the cluster of KUBECONFIG, in its context's namespace unless MEETBOT_KUBE_NAMESPACE says otherwise", () => {
    const fromFile = options({ KUBECONFIG: kubeconfig });
    expect(fromFile.kubeConfig.getCurrentCluster()?.server).toBe("https://k8s.example.com:6443");
    expect(fromFile.namespace).toBe("bots");
    expect(options({ KUBECONFIG: kubeconfig, MEETBOT_KUBE_NAMESPACE: "meetbot" }).namespace).toBe("meetbot");
  });

  it("reads its timings and TTL, with their defaults", () => {
    expect(options({ KUBECONFIG: kubeconfig })).toMatchObject({
      unschedulableTimeoutMs: 120_000,
      pollIntervalMs: 5_000,
      ttlSecondsAfterFinished: 3600,
      seccompLocalhostProfile: undefined,
    });
    expect(
      options({
        KUBECONFIG: kubeconfig,
        MEETBOT_KUBE_UNSCHEDULABLE_TIMEOUT_MS: "300000",
        MEETBOT_KUBE_POLL_INTERVAL_MS: "2000",
        MEETBOT_KUBE_JOB_TTL_SECONDS: "0",
        MEETBOT_KUBE_SECCOMP_PROFILE: "profiles/chromium.json",
      }),
    ).toMatchObject({
      unschedulableTimeoutMs: 300_000,
      pollIntervalMs: 2_000,
      ttlSecondsAfterFinished: 0,
      seccompLocalhostProfile: "profiles/chromium.json",
    });
  });

  it("refuses a bad namespace, a missing kubeconfig, and no cluster at all, naming the variable", () => {
    expect(() => options({ MEETBOT_KUBE_NAMESPACE: "Bots_1" })).toThrow(
      /^MEETBOT_KUBE_NAMESPACE: must be a namespace name/,
    );
    expect(() => options({ KUBECONFIG: join(dataDir, "missing") })).toThrow(StartupError);
    expect(() => options({ KUBECONFIG: join(dataDir, "missing") })).toThrow(/^KUBECONFIG: cannot read /);
    expect(() => options({})).toThrow(
      "MEETBOT_LAUNCHER=kubernetes: no cluster to reach: set KUBECONFIG, or run the server in a Pod (its service account)",
    );
  });
});
