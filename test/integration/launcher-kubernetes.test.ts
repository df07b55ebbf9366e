import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { V1PodStatus } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe } from "vitest";
import { BotConfig } from "../../src/core/index.js";
import { KubernetesLauncher, type KubernetesLauncherOptions } from "../../src/server/launcher/kubernetes.js";
import { runnerResources } from "../../src/server/launcher/kubernetes-spec.js";
import { type KubernetesApiStandIn, startKubernetesApiStandIn } from "../helpers/kubernetes-api-stand-in.js";
import {
  FakeRunner,
  openServerDatabase,
  registerUser,
  requestAccountCheck,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";
import { eventually } from "../helpers/stack.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * The Kubernetes launcher through the real server, against a stand-in for the Kubernetes API
 * server (test/helpers/kubernetes-api-stand-in.ts): a local HTTP server that stores what it is
 * sent and runs nothing. No cluster runs here; what a kubelet or the scheduler would report about a
 * Pod, the test sets on the stand-in. The runner is played from the BotConfig in the bot's Secret.
 */

const NAMESPACE = "meetbot-bots";
const IMAGE = "registry.example.com/meetbot:1.4.0";
const UNLIMITED = { rateLimit: { perMinute: 0, perHour: 0 } };

function kubernetesLauncher(
  standIn: KubernetesApiStandIn,
  overrides: Partial<KubernetesLauncherOptions> = {},
) {
  return new KubernetesLauncher({
    kubeConfig: standIn.kubeConfig(),
    namespace: NAMESPACE,
    image: IMAGE,
    resources: runnerResources({}),
    ttlSecondsAfterFinished: 3600,
    seccompLocalhostProfile: undefined,
    pollIntervalMs: 50,
    unschedulableTimeoutMs: 120_000,
    ...overrides,
  });
}

/** Creates and deploys a bot through the API; its id. */
async function deploy(
  server: TestServer,
  user: TestUser,
  body: Record<string, unknown> = {},
): Promise<number> {
  const created = await server.api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, botDisplayName: "Notetaker", ...body },
  });
  expect(created.status).toBe(201);
  const deployed = await server.api.post(`/v1/bots/${created.body.id}/deploy`, { token: user.token });
  expect(deployed.status).toBe(200);
  return created.body.id;
}

/** The BotConfig the bot's Pod would read: the one in its Secret. */
function configInSecret(standIn: KubernetesApiStandIn, botId: number): BotConfig {
  return configOfJob(standIn, `meetbot-bot-${botId}`);
}

/** The BotConfig in the Secret of Job `job`. */
function configOfJob(standIn: KubernetesApiStandIn, job: string): BotConfig {
  const secret = standIn.secrets(NAMESPACE).find((s) => s.metadata?.name === `${job}-config`);
  const file = secret?.stringData?.["bot-config.json"];
  if (!file) throw new Error(`no Secret for Job ${job}`);
  return BotConfig.parse(JSON.parse(file));
}

const jobOf = (standIn: KubernetesApiStandIn, botId: number) =>
  standIn.jobs(NAMESPACE).find((job) => job.metadata?.name === `meetbot-bot-${botId}`);

async function botOf(server: TestServer, user: TestUser, botId: number) {
  const res = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
  expect(res.status).toBe(200);
  return res.body;
}

// The file's server, for the first group: its launcher on a stand-in of its own. The groups after
// it start their own servers (account checks, restarts), each on its own stand-in.
let fileStandIn: KubernetesApiStandIn;
let fileLauncher: KubernetesLauncher;
beforeAll(async () => {
  fileStandIn = await startKubernetesApiStandIn();
  fileLauncher = kubernetesLauncher(fileStandIn);
});
afterAll(async () => {
  await fileLauncher?.close();
  await fileStandIn?.close();
});
test.override("serverOptions", { scope: "file" }, () => ({ ...UNLIMITED, launcher: fileLauncher }));

describe("the Kubernetes launcher", () => {
  let standIn: KubernetesApiStandIn;
  let server: TestServer;
  let user: TestUser;
  test.beforeAll(async ({ server: fileServer }) => {
    standIn = fileStandIn;
    server = fileServer;
    user = await registerUser(server.api);
  });

  test("creates one Job per bot, then its BotConfig in a Secret owned by that Job", async () => {
    const botId = await deploy(server, user, {
      automaticLeave: { maxDuration: 3_600_000, waitingRoomTimeout: 120_000 },
    });
    const job = jobOf(standIn, botId);
    const labels = { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/bot-id": String(botId) };
    expect(job?.metadata).toMatchObject({ name: `meetbot-bot-${botId}`, namespace: NAMESPACE, labels });
    expect(job?.spec).toEqual({
      backoffLimit: 0,
      // 3600 s of call + 120 s of waiting room + 300 s to start + 900 s to stop.
      activeDeadlineSeconds: 4920,
      ttlSecondsAfterFinished: 3600,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 900,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            fsGroup: 10001,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "runner",
              image: IMAGE,
              // The config is the Secret mounted as a file, never an environment variable.
              args: ["run", "--config", "/run/meetbot/bot-config.json"],
              resources: {
                requests: { cpu: "500m", memory: "640Mi" },
                limits: { cpu: "1000m", memory: "1024Mi" },
              },
              securityContext: {
                runAsNonRoot: true,
                runAsUser: 10001,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"] },
              },
              volumeMounts: [
                { name: "dshm", mountPath: "/dev/shm" },
                { name: "work", mountPath: "/work" },
                { name: "config", mountPath: "/run/meetbot", readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "128Mi" } },
            { name: "work", emptyDir: {} },
            { name: "config", secret: { secretName: `meetbot-bot-${botId}-config`, defaultMode: 0o440 } },
          ],
        },
      },
    });

    const secret = standIn.secrets(NAMESPACE).find((s) => s.metadata?.name === `meetbot-bot-${botId}-config`);
    expect(secret?.metadata?.labels).toEqual(labels);
    expect(secret?.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "batch/v1",
        kind: "Job",
        name: `meetbot-bot-${botId}`,
        uid: job?.metadata?.uid,
        controller: true,
      },
    ]);
    expect(secret).toMatchObject({ type: "Opaque", immutable: true });
    // The Job first (the Secret needs its uid), each in the namespace.
    const creates = standIn.requests.filter((r) => r.verb === "create").slice(-2);
    expect(creates.map((r) => `${r.resource} ${r.path}`)).toEqual([
      `jobs /apis/batch/v1/namespaces/${NAMESPACE}/jobs`,
      `secrets /api/v1/namespaces/${NAMESPACE}/secrets`,
    ]);

    // The config is the runner's whole input and works as one: its callback token is accepted.
    const config = configInSecret(standIn, botId);
    expect(config).toMatchObject({ botId, workDir: "/work", automaticLeave: { maxDuration: 3_600_000 } });
    expect(JSON.stringify(job)).not.toContain(config.callback.token);
    expect((await new FakeRunner(config).status("JOINING_CALL")).status).toBe(200);
    expect((await botOf(server, user, botId)).status).toBe("JOINING_CALL");
  });

  test("kill deletes the bot's Job in the foreground with the runner's grace period; its Secret goes with it", async () => {
    const botId = await deploy(server, user);
    const killed = await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token });
    expect(killed.status).toBe(200);
    const deletion = standIn.requests.find(
      (r) => r.verb === "delete" && r.path.endsWith(`/jobs/meetbot-bot-${botId}`),
    );
    expect(deletion?.path).toBe(`/apis/batch/v1/namespaces/${NAMESPACE}/jobs/meetbot-bot-${botId}`);
    expect(Object.fromEntries(deletion?.query ?? [])).toEqual({
      gracePeriodSeconds: "900",
      propagationPolicy: "Foreground",
    });
    expect(jobOf(standIn, botId)).toBeUndefined();
    expect(standIn.secrets(NAMESPACE).map((s) => s.metadata?.name)).not.toContain(
      `meetbot-bot-${botId}-config`,
    );
  });

  test("a Secret the cluster refuses: the deploy fails (LAUNCH_FAILED, saying why) and the Job goes", async () => {
    const created = await server.api.post("/v1/bots", {
      token: user.token,
      body: { meetingInfo: TEST_MEETING },
    });
    const botId = created.body.id;
    standIn.refuseNext("secrets", "create", 403);
    const deployed = await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
    expect(deployed.status).toBe(503);
    const bot = await botOf(server, user, botId);
    expect(bot.status).toBe("FATAL");
    expect(bot.deploymentError).toMatchObject({ code: "LAUNCH_FAILED" });
    expect(defined(bot.deploymentError, "deploymentError").message).toBe(
      `Kubernetes refused to create Secret meetbot-bot-${botId}-config in namespace ${NAMESPACE} (HTTP 403): ` +
        "secrets is forbidden: cannot create secrets (stand-in refusal)",
    );
    expect(jobOf(standIn, botId)).toBeUndefined();
  });

  /** `runnerRan`: whether a runner may still be reporting, so that bot.ended waits for it. */
  const failures: Array<{
    what: string;
    subCode: string;
    status: V1PodStatus;
    message: RegExp;
    runnerRan: boolean;
  }> = [
    {
      what: "an image that cannot be pulled",
      subCode: "IMAGE_PULL_FAILED",
      runnerRan: false,
      status: {
        phase: "Pending",
        containerStatuses: [
          {
            name: "runner",
            image: IMAGE,
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "ImagePullBackOff", message: `Back-off pulling image "${IMAGE}"` } },
          },
        ],
      },
      message: /image registry\.example\.com\/meetbot:1\.4\.0 could not be pulled \(ImagePullBackOff/,
    },
    {
      what: "a runner killed for its memory",
      subCode: "OUT_OF_MEMORY",
      runnerRan: true,
      status: {
        phase: "Failed",
        containerStatuses: [
          {
            name: "runner",
            image: IMAGE,
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 137, reason: "OOMKilled" } },
          },
        ],
      },
      message: /ran out of memory \(OOMKilled; its limit is 1024Mi\)/,
    },
    {
      what: "an evicted Pod",
      subCode: "EVICTED",
      runnerRan: true,
      status: {
        phase: "Failed",
        reason: "Evicted",
        message: "The node was low on resource: memory.",
      },
      message: /evicted: The node was low on resource: memory\./,
    },
    {
      what: "a Pod unschedulable past the timeout",
      subCode: "UNSCHEDULABLE",
      runnerRan: false,
      status: {
        phase: "Pending",
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/3 nodes are available: 3 Insufficient memory.",
            lastTransitionTime: new Date(Date.now() - 10 * 60_000),
          },
        ],
      },
      message: /could not be scheduled for \d+ s: 0\/3 nodes are available: 3 Insufficient memory\./,
    },
  ];

  test.each(failures)(
    "$what makes the bot FATAL $subCode and deletes its Job",
    async ({ subCode, status, message, runnerRan }) => {
      const botId = await deploy(server, user);
      await new FakeRunner(configInSecret(standIn, botId)).status("JOINING_CALL");
      standIn.setPodStatus(NAMESPACE, `meetbot-bot-${botId}`, status);
      const bot = await eventually(
        async () => {
          const body = await botOf(server, user, botId);
          return body.status === "FATAL" ? body : undefined;
        },
        `bot ${botId} FATAL`,
        15_000,
      );
      expect(defined(bot.deploymentError, "deploymentError").code).toBe(subCode);
      expect(defined(bot.deploymentError, "deploymentError").message).toMatch(message);
      // bot.ended is queued at once when no runner ever ran; otherwise it waits for the runner.
      const db = await openServerDatabase(server);
      try {
        const row = await db.kysely
          .selectFrom("bots")
          .select("held_bot_ended")
          .where("id", "=", botId)
          .executeTakeFirstOrThrow();
        expect(row.held_bot_ended !== null).toBe(runnerRan);
      } finally {
        await db.close();
      }
      await eventually(
        async () => (jobOf(standIn, botId) ? undefined : true),
        `Job of bot ${botId} deleted`,
        15_000,
      );
    },
  );

  test("leaves a Pod unschedulable for less than the timeout alone", async () => {
    const botId = await deploy(server, user);
    standIn.setPodStatus(NAMESPACE, `meetbot-bot-${botId}`, {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/3 nodes are available: 3 Insufficient cpu.",
          lastTransitionTime: new Date(),
        },
      ],
    });
    // Two more polls of the Pods after the status was set.
    const polls = () => standIn.requests.filter((r) => r.resource === "pods" && r.verb === "list").length;
    const before = polls();
    await eventually(async () => (polls() >= before + 2 ? true : undefined), "two polls");
    expect((await botOf(server, user, botId)).status).toBe("DEPLOYING");
    expect(jobOf(standIn, botId)).toBeDefined();
  });
});

/** What a server running account checks needs: a key for accounts' sessions, a worker that looks often. */
const CHECKS = {
  env: { MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
  accountChecks: { pollIntervalMs: 50 },
};

const jobNamed = (standIn: KubernetesApiStandIn, name: string) =>
  standIn.jobs(NAMESPACE).find((job) => job.metadata?.name === name);

/** The check's Job, once its Secret is there too. */
const checkJob = (standIn: KubernetesApiStandIn, checkId: number) =>
  eventually(async () => {
    const name = `meetbot-check-${checkId}`;
    const secret = standIn.secrets(NAMESPACE).some((s) => s.metadata?.name === `${name}-config`);
    return secret ? jobNamed(standIn, name) : undefined;
  }, `check ${checkId}'s Job and Secret`);

describe("account checks on the Kubernetes launcher", () => {
  let standIn: KubernetesApiStandIn;
  let launcher: KubernetesLauncher;
  let server: TestServer;
  let user: TestUser;
  beforeAll(async () => {
    standIn = await startKubernetesApiStandIn();
    launcher = kubernetesLauncher(standIn);
    server = await startTestServer({ ...UNLIMITED, ...CHECKS, launcher });
    user = await registerUser(server.api);
  });
  afterAll(async () => {
    await server?.close();
    await launcher?.close();
    await standIn?.close();
  });

  test("run as a Job and Secret of their own name and label, with a deadline and a TTL, apart from the bot of the same id", async () => {
    const botId = await deploy(server, user);
    await new FakeRunner(configInSecret(standIn, botId)).status("JOINING_CALL");
    const { checkId, marker } = await requestAccountCheck(server, user);
    // Checks are counted apart from bots: the first check's id is the first bot's.
    expect(checkId).toBe(botId);
    const job = await checkJob(standIn, checkId);
    const name = `meetbot-check-${checkId}`;
    const labels = { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/check-id": String(checkId) };
    expect(job?.metadata).toMatchObject({ name, labels });
    expect(job?.metadata?.labels).toEqual(labels);
    expect(job?.spec).toMatchObject({
      backoffLimit: 0,
      // 300 s to start and 300 s to check; the server fails the check after 180 s anyway.
      activeDeadlineSeconds: 600,
      ttlSecondsAfterFinished: 3600,
      template: { metadata: { labels } },
    });
    expect(job?.spec?.template.spec?.volumes).toContainEqual({
      name: "config",
      secret: { secretName: `${name}-config`, defaultMode: 0o440 },
    });
    const secret = standIn.secrets(NAMESPACE).find((s) => s.metadata?.name === `${name}-config`);
    expect(secret?.metadata?.labels).toEqual(labels);
    expect(secret?.metadata?.ownerReferences).toMatchObject([{ kind: "Job", name, uid: job?.metadata?.uid }]);
    const config = configOfJob(standIn, name);
    expect(config).toMatchObject({ botId: checkId, accountCheck: { checkId }, workDir: "/work" });
    expect(config.login?.session.cookies[0]?.value).toBe(marker);
    // The session and the token are in the Secret alone.
    for (const secretValue of [marker, config.callback.token])
      expect(JSON.stringify(job)).not.toContain(secretValue);

    // The check's Pod killed for its memory: no bot fails, no Job is deleted.
    standIn.setPodStatus(NAMESPACE, name, {
      phase: "Failed",
      containerStatuses: [
        {
          name: "runner",
          image: IMAGE,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason: "OOMKilled" } },
        },
      ],
    });
    const polls = () => standIn.requests.filter((r) => r.resource === "pods" && r.verb === "list").length;
    const before = polls();
    await eventually(async () => (polls() >= before + 2 ? true : undefined), "two polls");
    expect((await botOf(server, user, botId)).status).toBe("JOINING_CALL");
    expect(standIn.requests.filter((r) => r.verb === "delete")).toEqual([]);

    // Killing the bot of the same id deletes the bot's Job only.
    expect((await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token })).status).toBe(200);
    expect(jobOf(standIn, botId)).toBeUndefined();
    expect(jobNamed(standIn, name)).toBeDefined();

    const answer = await server.api.post(config.accountCheck?.resultUrl ?? "", {
      token: config.callback.token,
      body: { signedIn: true },
    });
    expect(answer.status).toBe(200);
  });

  test("fail when the cluster refuses the Secret, and only the check's own Job goes", async () => {
    const botId = await deploy(server, user);
    standIn.refuseNext("secrets", "create", 403);
    const { checkId } = await requestAccountCheck(server, user);
    expect(checkId).toBe(botId);
    const db = await openServerDatabase(server);
    try {
      const failed = await eventually(async () => {
        const row = await db.kysely
          .selectFrom("bot_account_checks")
          .select(["state", "error_message"])
          .where("id", "=", checkId)
          .executeTakeFirstOrThrow();
        return row.state === "failed" ? row : undefined;
      }, "the check failed");
      expect(failed.error_message).toBe(
        `the check's runner could not be launched: Kubernetes refused to create Secret meetbot-check-${checkId}-config ` +
          `in namespace ${NAMESPACE} (HTTP 403): secrets is forbidden: cannot create secrets (stand-in refusal)`,
      );
    } finally {
      await db.close();
    }
    expect(jobNamed(standIn, `meetbot-check-${checkId}`)).toBeUndefined();
    expect(jobOf(standIn, botId)).toBeDefined();
    expect((await botOf(server, user, botId)).status).toBe("DEPLOYING");
  });

  test("are neither adopted nor deleted as bots' Jobs when a server starts", async () => {
    const botId = await deploy(server, user);
    await new FakeRunner(configInSecret(standIn, botId)).status("JOINING_CALL");
    // A check of an id no bot of this database has: as a bot's Job it would be deleted as ended.
    const orphan = 999_999;
    standIn.addJob(NAMESPACE, {
      metadata: {
        name: `meetbot-check-${orphan}`,
        labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/check-id": String(orphan) },
      },
      spec: { template: { spec: { containers: [] } } },
    });
    const jobsBefore = standIn.jobs(NAMESPACE).map((job) => job.metadata?.name);
    expect(jobsBefore).toContain(`meetbot-check-${orphan}`);
    const before = standIn.requests.length;

    // Another launcher on the same cluster and database: a server started again.
    const again = kubernetesLauncher(standIn);
    const second = await startTestServer({
      ...UNLIMITED,
      ...CHECKS,
      dataDir: server.dataDir,
      databaseUrl: server.databaseUrl,
      accountChecks: { worker: false },
      launcher: again,
    });
    try {
      expect(standIn.requests.slice(before).filter((r) => r.verb === "delete")).toEqual([]);
      expect(standIn.jobs(NAMESPACE).map((job) => job.metadata?.name)).toEqual(jobsBefore);
    } finally {
      await second.close();
      await again.close();
    }
  });
});

describe("the Kubernetes launcher after a server restart", () => {
  test("keeps the Jobs of running bots and deletes those of bots that ended", async () => {
    const standIn = await startKubernetesApiStandIn();
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-kube-restart-"));
    try {
      const firstLauncher = kubernetesLauncher(standIn);
      const first = await startTestServer({ ...UNLIMITED, dataDir, launcher: firstLauncher });
      const user = await registerUser(first.api);
      const running = await deploy(first, user);
      const ended = await deploy(first, user);
      await new FakeRunner(configInSecret(standIn, running)).status("JOINING_CALL");
      const endedRunner = new FakeRunner(configInSecret(standIn, ended));
      await endedRunner.status("JOINING_CALL");
      expect(
        (await endedRunner.status("FATAL", { subCode: "JOIN_FAILED", message: "no join button" })).status,
      ).toBe(200);
      await first.close();
      await firstLauncher.close();
      // A Job left by some earlier server for a bot this database never had.
      standIn.addJob(NAMESPACE, {
        metadata: {
          name: "meetbot-bot-999999",
          labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/bot-id": "999999" },
        },
        spec: { template: { spec: { containers: [] } } },
      });

      const secondLauncher = kubernetesLauncher(standIn);
      const second = await startTestServer({ ...UNLIMITED, dataDir, launcher: secondLauncher });
      try {
        // attach() ran before the server listened.
        expect(standIn.jobs(NAMESPACE).map((job) => job.metadata?.name)).toEqual([`meetbot-bot-${running}`]);
        expect(standIn.secrets(NAMESPACE).map((s) => s.metadata?.name)).toEqual([
          `meetbot-bot-${running}-config`,
        ]);
        // The adopted runner is the new server's to stop.
        expect((await second.api.post(`/v1/bots/${running}/kill`, { token: user.token })).status).toBe(200);
        expect(jobOf(standIn, running)).toBeUndefined();
      } finally {
        await second.close();
        await secondLauncher.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await standIn.close();
    }
  });
});

/**
 * The Role's rules as `group/resource verb` pairs. A reader of the subset role.yaml is written in: rules
 * as a block list, each key's value a bracketed list of quoted strings (JSON); anything else in
 * the rules is refused, so a rewritten file cannot be misread.
 */
function rolePairs(yaml: string): string[] {
  const rules = yaml
    .slice(yaml.indexOf("\nrules:\n") + "\nrules:\n".length)
    .split("\n")
    .filter((line) => line.trim());
  const parsed: Array<Record<string, string[]>> = [];
  for (const line of rules) {
    const match = /^ {2}(- | {2})(apiGroups|resources|verbs): (\[.*\])$/.exec(line);
    if (!match) throw new Error(`role.yaml: a line the reader does not know: ${line}`);
    const [, start, key = "", list = ""] = match;
    if (start === "- ") parsed.push({});
    const rule = parsed.at(-1);
    if (!rule) throw new Error("role.yaml: a rule must start with '- '");
    rule[key] = JSON.parse(list) as string[];
  }
  return parsed.flatMap((rule) =>
    (rule.apiGroups ?? []).flatMap((group) =>
      (rule.resources ?? []).flatMap((resource) =>
        (rule.verbs ?? []).map((verb) => `${group}/${resource} ${verb}`),
      ),
    ),
  );
}

describe("the Kubernetes launcher without its cluster", () => {
  test("stops the server's startup with the API server's refusal", async () => {
    const standIn = await startKubernetesApiStandIn();
    const launcher = kubernetesLauncher(standIn, { kubeConfig: standIn.kubeConfig("a revoked token") });
    try {
      await expect(startTestServer({ launcher })).rejects.toThrow(
        `MEETBOT_LAUNCHER=kubernetes: Kubernetes refused to list Jobs in namespace ${NAMESPACE} (HTTP 401)`,
      );
    } finally {
      await launcher.close();
      await standIn.close();
    }
  });
});

describe("deploy/kubernetes/role.yaml", () => {
  test("grants exactly what the launcher calls: restart clean-up, launch, the Pod poll, a failed Pod, kill", async () => {
    const standIn = await startKubernetesApiStandIn();
    standIn.addJob(NAMESPACE, {
      metadata: {
        name: "meetbot-bot-999999",
        labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/bot-id": "999999" },
      },
      spec: { template: { spec: { containers: [] } } },
    });
    const launcher = kubernetesLauncher(standIn);
    const server = await startTestServer({ ...UNLIMITED, launcher });
    try {
      const user = await registerUser(server.api);
      const evicted = await deploy(server, user);
      standIn.setPodStatus(NAMESPACE, `meetbot-bot-${evicted}`, {
        phase: "Failed",
        reason: "Evicted",
        message: "gone",
      });
      await eventually(
        async () => (jobOf(standIn, evicted) ? undefined : true),
        "the evicted bot's Job deleted",
        15_000,
      );
      const killed = await deploy(server, user);
      expect((await server.api.post(`/v1/bots/${killed}/kill`, { token: user.token })).status).toBe(200);

      const used = new Set(standIn.requests.map((r) => `${r.apiGroup}/${r.resource} ${r.verb}`));
      const granted = rolePairs(await readFile("deploy/kubernetes/role.yaml", "utf8"));
      expect(granted).toHaveLength(new Set(granted).size);
      expect(new Set(granted)).toEqual(used);
    } finally {
      await server.close();
      await launcher.close();
      await standIn.close();
    }
  });
});
