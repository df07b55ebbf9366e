// Own servers, not the fixture: each test's server drives the fresh Docker Engine stand-in of that test.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BotConfig } from "../../src/core/index.js";
import { resolveConfig, type StartServerOptions } from "../../src/server/config.js";
import { DockerLauncher } from "../../src/server/launcher/docker.js";
import { DEFAULT_RUNNER_RESOURCES } from "../../src/server/launcher/settings.js";
import { createLauncher } from "../../src/server/launcher/index.js";
import { LocalProcessLauncher } from "../../src/server/launcher/local-process.js";
import { StartupError } from "../../src/server/startup-error.js";
import { DockerEngineStandIn, type StandInContainer } from "../helpers/docker-engine-stand-in.js";
import { testDatabaseFor } from "../helpers/postgres.js";
import {
  FakeRunner,
  openServerDatabase,
  registerUser,
  requestAccountCheck,
  requestCheck,
  startTestServer,
  TEST_MEETING,
  type TestServer,
  type TestUser,
  defined,
} from "../helpers/server-harness.js";
import { eventually } from "../helpers/stack.js";

/**
 * The Docker launcher, chosen as `meetbot serve` chooses it (MEETBOT_LAUNCHER=docker), against a
 * stand-in for the Docker Engine API (test/helpers/docker-engine-stand-in.ts): real HTTP on
 * 127.0.0.1 that answers the calls the launcher makes and runs nothing. The runner is played from
 * the BotConfig in the config file copied into its container.
 */

const IMAGE = "registry.example.com/meetbot:1.2";

let engine: DockerEngineStandIn;
let engineUrl: string;
const servers: TestServer[] = [];
const dataDirs: string[] = [];

beforeEach(async () => {
  engine = new DockerEngineStandIn();
  const { host, port } = await engine.start();
  engineUrl = `http://${host}:${port}`;
});
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of dataDirs.splice(0)) {
    await rm(dir, { recursive: true, force: true });
    await (await testDatabaseFor(dir))?.drop();
  }
  await engine.close();
});

/** The server with the Docker launcher its environment asks for (not the harness's recorder). */
async function dockerServer(
  opts: {
    dataDir?: string;
    env?: Record<string, string>;
    watchdog?: StartServerOptions["watchdog"];
    accountChecks?: StartServerOptions["accountChecks"];
  } = {},
) {
  const server = await startTestServer({
    launcher: undefined,
    ...(opts.watchdog ? { watchdog: opts.watchdog } : {}),
    ...(opts.accountChecks ? { accountChecks: opts.accountChecks } : {}),
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    rateLimit: { perMinute: 0, perHour: 0 },
    env: {
      MEETBOT_LAUNCHER: "docker",
      MEETBOT_DOCKER_HOST: engineUrl,
      MEETBOT_RUNNER_IMAGE: IMAGE,
      MEETBOT_RUNNER_CPUS: "1.5",
      MEETBOT_RUNNER_MEMORY: "2Gi",
      MEETBOT_RUNNER_SHM_SIZE: "512Mi",
      MEETBOT_DOCKER_NETWORK: "meetbot",
      ...opts.env,
    },
  });
  servers.push(server);
  return server;
}

async function createBot(
  server: TestServer,
  user: TestUser,
  body: Record<string, unknown> = {},
): Promise<number> {
  const created = await server.api.post("/v1/bots", {
    token: user.token,
    body: { meetingInfo: TEST_MEETING, meetingTitle: "Weekly sync", botDisplayName: "Notetaker", ...body },
  });
  expect(created.status).toBe(201);
  return created.body.id;
}

/** Creates and deploys a bot; answers its container (as the engine was asked for it) and runner. */
async function deployedBot(server: TestServer, user: TestUser) {
  const botId = await createBot(server, user);
  const deployed = await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
  expect(deployed.status).toBe(200);
  // Created, then given its config file (a pull in the background may sit between the two).
  const container = await eventually(async () => {
    const made = engine.byName(`meetbot-bot-${botId}`);
    return made?.files.has("/run/meetbot/bot-config.json") ? made : undefined;
  }, `bot ${botId}'s container with its config`);
  const config = botConfigOf(container);
  return { botId, container, config, runner: new FakeRunner(config) };
}

/** The config file copied into the container before it started: the image's user's alone. */
function botConfigOf(container: StandInContainer): BotConfig {
  expect(container.files.get("/run/meetbot")).toMatchObject({ mode: 0o700, uid: 10001, gid: 10001 });
  const file = container.files.get("/run/meetbot/bot-config.json");
  expect(file).toMatchObject({ mode: 0o400, uid: 10001, gid: 10001 });
  return BotConfig.parse(JSON.parse(file?.content?.toString("utf8") ?? ""));
}

/** What a server running account checks needs: a key for accounts' sessions, a worker that looks often. */
const CHECKS = {
  env: { MEETBOT_SECRET_KEY: randomBytes(32).toString("base64") },
  accountChecks: { pollIntervalMs: 50 },
};

/** The check's container, once it has its config file. */
function checkContainerOf(checkId: number): Promise<StandInContainer> {
  return eventually(async () => {
    const made = engine.byName(`meetbot-check-${checkId}`);
    return made?.files.has("/run/meetbot/bot-config.json") ? made : undefined;
  }, `check ${checkId}'s container with its config`);
}

async function checkRow(server: TestServer, checkId: number) {
  const db = await openServerDatabase(server);
  try {
    return await db.kysely
      .selectFrom("bot_account_checks")
      .select(["state", "error_message"])
      .where("id", "=", checkId)
      .executeTakeFirstOrThrow();
  } finally {
    await db.close();
  }
}

async function statusBecomes(server: TestServer, user: TestUser, botId: number, wanted: string) {
  return eventually(async () => {
    const bot = await server.api.get(`/v1/bots/${botId}`, { token: user.token });
    return bot.body.status === wanted ? bot.body : undefined;
  }, `bot ${botId} ${wanted}`);
}

describe("the Docker launcher (against a Docker Engine API stand-in)", () => {
  it("creates and starts one container per bot, with the exact spec, and its runner reaches the server", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer();
    const user = await registerUser(server.api);
    const { botId, container, config, runner } = await deployedBot(server, user);

    const [create] = engine.made("POST", "/containers/create");
    // Only the name travels in the query: the BotConfig (and its token) stays in the body.
    expect([...(create?.query.keys() ?? [])]).toEqual(["name"]);
    expect(create?.query.get("name")).toBe(`meetbot-bot-${botId}`);
    expect(create?.body).toEqual({
      Image: IMAGE,
      // The config is a file in the container, never its environment (docker inspect shows that).
      Cmd: ["run", "--config", "/run/meetbot/bot-config.json"],
      Labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/bot-id": String(botId) },
      StopSignal: "SIGTERM",
      StopTimeout: 900,
      HostConfig: {
        AutoRemove: true,
        NanoCpus: 1_500_000_000,
        Memory: 2 * 1024 ** 3,
        MemorySwap: 2 * 1024 ** 3,
        ShmSize: 512 * 1024 ** 2,
        NetworkMode: "meetbot",
      },
    });
    expect(engine.made("POST", `/containers/${container.Id}/start`)).toHaveLength(1);
    expect(container.State).toBe("running");
    // The config went in before the container started, and no request carried it but that one.
    const requests = engine.requests.map((r) => `${r.method} ${r.path}`);
    expect(requests.indexOf(`PUT /containers/${container.Id}/archive`)).toBeLessThan(
      requests.indexOf(`POST /containers/${container.Id}/start`),
    );
    const token = config.callback.token;
    const carrying = engine.requests.filter(
      (r) =>
        !Buffer.isBuffer(r.body) &&
        (JSON.stringify(r.body ?? "").includes(token) || r.query.toString().includes(token)),
    );
    expect(carrying.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    // The image was there: nothing pulled.
    expect(engine.made("POST", "/images/create")).toHaveLength(0);

    // The bot's own config, callbacks to this server, and no path of the server's disk.
    expect(config.botId).toBe(botId);
    expect(config.meetingInfo).toEqual(TEST_MEETING);
    expect(config.callback.baseUrl).toBe(server.url);
    expect(config.upload.url).toBe(`${server.url}/v1/bot-callbacks/${botId}/recording`);
    expect(config.workDir).toBeUndefined();
    expect((await runner.status("JOINING_CALL")).status).toBe(200);
    await statusBecomes(server, user, botId, "JOINING_CALL");
  });

  it("gives runners MEETBOT_RUNNER_CALLBACK_URL to call back to instead of the public URL", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer({
      env: { MEETBOT_RUNNER_CALLBACK_URL: "http://meetbot-server:8080/" },
    });
    const user = await registerUser(server.api);
    const { botId, config } = await deployedBot(server, user);
    expect(config.callback.baseUrl).toBe("http://meetbot-server:8080");
    expect(config.upload.url).toBe(`http://meetbot-server:8080/v1/bot-callbacks/${botId}/recording`);
  });

  it("stops a killed bot's container with 15 minutes of grace (SIGTERM, then SIGKILL)", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer();
    const user = await registerUser(server.api);
    const { botId, container, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");

    const killed = await server.api.post(`/v1/bots/${botId}/kill`, { token: user.token });
    expect(killed.status).toBe(200);
    const stop = await eventually(
      async () => engine.made("POST", `/containers/${container.Id}/stop`)[0],
      "the stop request",
    );
    expect(stop.query.get("t")).toBe("900");
    // The stand-in's container exited and removed itself (AutoRemove).
    expect(engine.byName(`meetbot-bot-${botId}`)).toBeUndefined();
  });

  it("pulls an image the engine lacks, then starts the container", async () => {
    engine.pullable.add(IMAGE);
    const server = await dockerServer();
    const user = await registerUser(server.api);
    const { container } = await deployedBot(server, user);
    const pulls = engine.made("POST", "/images/create");
    expect(pulls).toHaveLength(1);
    expect(pulls[0]?.query.get("fromImage")).toBe("registry.example.com/meetbot");
    expect(pulls[0]?.query.get("tag")).toBe("1.2");
    await eventually(async () => (container.State === "running" ? true : undefined), "the container running");
  });

  it("makes a bot whose image cannot be pulled FATAL IMAGE_PULL_FAILED, with no container", async () => {
    const server = await dockerServer(); // the image is neither on the engine nor in a registry
    const user = await registerUser(server.api);
    const botId = await createBot(server, user);
    const deployed = await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token });
    expect(deployed.status).toBe(200);
    const bot = await statusBecomes(server, user, botId, "FATAL");
    expect(bot.deploymentError).toMatchObject({ code: "IMAGE_PULL_FAILED" });
    expect(defined(bot.deploymentError, "deploymentError").message).toContain(
      `image ${IMAGE} could not be pulled: `,
    );
    expect(defined(bot.deploymentError, "deploymentError").message).toContain("pull access denied");
    expect(engine.made("POST", "/images/create")).toHaveLength(1);
    expect(engine.made("POST", "/containers/create")).toHaveLength(0);
  });

  it("fails the bot IMAGE_PULL_FAILED on an error the registry reports in the middle of the pull", async () => {
    engine.pullBreaks.set(IMAGE, "unexpected EOF");
    const server = await dockerServer();
    const user = await registerUser(server.api);
    const botId = await createBot(server, user);
    expect((await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token })).status).toBe(200);
    const bot = await statusBecomes(server, user, botId, "FATAL");
    expect(bot.deploymentError).toMatchObject({
      code: "IMAGE_PULL_FAILED",
      message: `image ${IMAGE} could not be pulled: unexpected EOF`,
    });
    expect(engine.made("POST", "/containers/create")).toHaveLength(0);
  });

  it("makes a bot whose container is killed for its memory FATAL OUT_OF_MEMORY", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer();
    const user = await registerUser(server.api);
    const { botId, container, runner } = await deployedBot(server, user);
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await eventually(async () => (engine.watching > 0 ? true : undefined), "the launcher's event watch");

    engine.oomKill(container);
    const bot = await statusBecomes(server, user, botId, "FATAL");
    expect(bot.deploymentError).toMatchObject({ code: "OUT_OF_MEMORY" });
    expect(defined(bot.deploymentError, "deploymentError").message).toContain(
      "ran out of memory (limit 2048 MiB)",
    );
  });

  it("leaves a runner that died without a word to the watchdog: FATAL HEARTBEAT_TIMEOUT", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer({ watchdog: { intervalMs: 100, heartbeatTimeoutMultiple: 3 } });
    const user = await registerUser(server.api);
    const botId = await createBot(server, user, { heartbeatInterval: 500 });
    expect((await server.api.post(`/v1/bots/${botId}/deploy`, { token: user.token })).status).toBe(200);
    const container = await eventually(async () => engine.byName(`meetbot-bot-${botId}`), "the container");
    const runner = new FakeRunner(botConfigOf(container));
    await runner.status("JOINING_CALL");
    await eventually(async () => (engine.watching > 0 ? true : undefined), "the launcher's event watch");

    engine.crash(container, 1);
    const bot = await statusBecomes(server, user, botId, "FATAL");
    expect(bot.deploymentError).toMatchObject({ code: "HEARTBEAT_TIMEOUT" });
  });

  it("refuses to start when the Docker engine is out of reach, naming it", async () => {
    await engine.close(); // nothing listens on its port any more
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-docker-"));
    dataDirs.push(dataDir);
    await expect(dockerServer({ dataDir })).rejects.toThrow(
      new RegExp(`^the Docker engine \\(.*"port":${new URL(engineUrl).port}.*\\) is out of reach: `),
    );
    engine = new DockerEngineStandIn(); // for afterEach
    await engine.start();
  });

  it("after a restart keeps the running bots' containers and clears those of bots that ended", async () => {
    engine.images.add(IMAGE);
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-docker-"));
    dataDirs.push(dataDir);
    const first = await dockerServer({ dataDir });
    const user = await registerUser(first.api);
    const running = await deployedBot(first, user);
    await running.runner.status("JOINING_CALL");
    // Its runner reported its own end; the stand-in's container keeps "running" (it runs nothing).
    const ended = await deployedBot(first, user);
    await ended.runner.status("FATAL", { subCode: "JOIN_FAILED", message: "no such meeting" });
    await statusBecomes(first, user, ended.botId, "FATAL");
    // A container created for a bot that ended, never started (it does not remove itself).
    const leftover = engine.addContainer(
      "meetbot-bot-999",
      { Image: IMAGE, Labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/bot-id": "999" } },
      "created",
    );
    // Not a runner: never touched.
    const other = engine.addContainer("postgres", { Image: "postgres:17", Labels: {} }, "running");
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    const before = engine.requests.length;

    const second = await dockerServer({ dataDir });
    const stop = await eventually(
      async () => engine.made("POST", `/containers/${ended.container.Id}/stop`)[0],
      "the ended bot's container stopped",
    );
    expect(stop.query.get("t")).toBe("900");
    expect(engine.made("DELETE", `/containers/${leftover.Id}`)).toHaveLength(1);
    const touched = engine.requests
      .slice(before)
      .filter((r) => r.path.startsWith("/containers/") && r.path !== "/containers/json");
    expect(touched.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      [`POST /containers/${ended.container.Id}/stop`, `DELETE /containers/${leftover.Id}`].sort(),
    );
    expect(engine.containers.get(running.container.Id)?.State).toBe("running");
    expect(engine.containers.get(other.Id)?.State).toBe("running");

    // The re-adopted container is the running bot's: a kill now stops it.
    const killed = await second.api.post(`/v1/bots/${running.botId}/kill`, { token: user.token });
    expect(killed.status).toBe(200);
    await eventually(
      async () => engine.made("POST", `/containers/${running.container.Id}/stop`)[0],
      "the re-adopted container stopped",
    );
  });
});

describe("account checks on the Docker launcher", () => {
  it("run in a container of their own name and label, the config a file, apart from the bot of the same id", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer(CHECKS);
    const user = await registerUser(server.api);
    const bot = await deployedBot(server, user);
    await bot.runner.status("JOINING_CALL");
    const { checkId, marker } = await requestAccountCheck(server, user);
    // Checks are counted apart from bots: the first check's id is the first bot's.
    expect(checkId).toBe(bot.botId);
    const container = await checkContainerOf(checkId);

    const create = engine
      .made("POST", "/containers/create")
      .find((r) => r.query.get("name") === `meetbot-check-${checkId}`);
    expect([...(create?.query.keys() ?? [])]).toEqual(["name"]);
    expect(create?.body).toMatchObject({
      Image: IMAGE,
      Cmd: ["run", "--config", "/run/meetbot/bot-config.json"],
      // The check's id under a label of its own: no bot id that stop, attach or the events would match.
      Labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/check-id": String(checkId) },
      HostConfig: { AutoRemove: true, Memory: 2 * 1024 ** 3 },
    });
    expect(Object.keys((create?.body as { Labels: object }).Labels)).not.toContain("meetbot.dev/bot-id");
    const config = botConfigOf(container);
    expect(config.accountCheck).toEqual({
      checkId,
      resultUrl: `${server.url}/v1/bot-account-checks/${checkId}/result`,
    });
    expect(config.login?.session.cookies[0]?.value).toBe(marker);
    expect(config.workDir).toBeUndefined();
    // The session and the token travelled in the archive only.
    const secrets = [marker, config.callback.token];
    const carrying = engine.requests.filter(
      (r) =>
        !Buffer.isBuffer(r.body) &&
        secrets.some(
          (secret) => JSON.stringify(r.body ?? "").includes(secret) || r.query.toString().includes(secret),
        ),
    );
    expect(carrying.map((r) => `${r.method} ${r.path}`)).toEqual([]);

    // Killing the bot of the same id stops the bot's container only.
    expect((await server.api.post(`/v1/bots/${bot.botId}/kill`, { token: user.token })).status).toBe(200);
    await eventually(
      async () => engine.made("POST", `/containers/${bot.container.Id}/stop`)[0],
      "the bot's container stopped",
    );
    expect(engine.made("POST", `/containers/${container.Id}/stop`)).toHaveLength(0);
    expect(container.State).toBe("running");

    // The check's runner reports and exits; its container removes itself.
    const answer = await server.api.post(config.accountCheck?.resultUrl ?? "", {
      token: config.callback.token,
      body: { signedIn: true },
    });
    expect(answer.status).toBe(200);
    expect(await checkRow(server, checkId)).toMatchObject({ state: "completed" });
    engine.crash(container, 0);
    expect(engine.byName(`meetbot-check-${checkId}`)).toBeUndefined();
  });

  it("fail no bot when a check's container is killed for its memory", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer(CHECKS);
    const user = await registerUser(server.api);
    const bot = await deployedBot(server, user);
    const other = await deployedBot(server, user);
    for (const { runner } of [bot, other]) {
      await runner.status("JOINING_CALL");
      await runner.status("IN_CALL");
    }
    const { checkId } = await requestAccountCheck(server, user);
    expect(checkId).toBe(bot.botId);
    const check = await checkContainerOf(checkId);
    await eventually(async () => (engine.watching > 0 ? true : undefined), "the launcher's event watch");

    engine.oomKill(check);
    // The engine's events come in order: once the other bot's OOM kill has failed it, the check's
    // came before it and was let go.
    engine.oomKill(other.container);
    await statusBecomes(server, user, other.botId, "FATAL");
    expect((await server.api.get(`/v1/bots/${bot.botId}`, { token: user.token })).body.status).toBe(
      "IN_CALL",
    );
    expect(engine.made("POST", `/containers/${bot.container.Id}/stop`)).toHaveLength(0);
  });

  it("fail, with the registry's reason, when the image cannot be pulled; once it can, wait for the pull", async () => {
    engine.images.add(IMAGE);
    const server = await dockerServer(CHECKS);
    const user = await registerUser(server.api);
    const bot = await deployedBot(server, user);
    await bot.runner.status("JOINING_CALL");
    engine.images.delete(IMAGE); // pruned from the engine, and in no registry
    const { accountId, checkId } = await requestAccountCheck(server, user);
    expect(checkId).toBe(bot.botId);

    const failed = await eventually(async () => {
      const row = await checkRow(server, checkId);
      return row.state === "failed" ? row : undefined;
    }, "the check failed");
    expect(failed.error_message).toContain(
      `the check's runner could not be launched: image ${IMAGE} could not be pulled: `,
    );
    expect(failed.error_message).toContain("pull access denied");
    expect(engine.byName(`meetbot-check-${checkId}`)).toBeUndefined();
    // The bot of the same id knows nothing of it.
    expect((await server.api.get(`/v1/bots/${bot.botId}`, { token: user.token })).body.status).toBe(
      "JOINING_CALL",
    );

    engine.pullable.add(IMAGE);
    const next = await requestCheck(server, user, accountId);
    await checkContainerOf(next);
    expect(engine.made("POST", "/images/create")).toHaveLength(2);
  });

  it("give up on a pull that hangs, so that the check worker goes on", async () => {
    engine.pullHangs.add(IMAGE);
    const launcher = new DockerLauncher({
      endpoint: {
        host: new URL(engineUrl).hostname,
        port: Number(new URL(engineUrl).port),
        protocol: "http",
      },
      network: undefined,
      seccompProfile: undefined,
      image: IMAGE,
      resources: DEFAULT_RUNNER_RESOURCES,
      checkPullWaitMs: 200,
    });
    const resultUrl = "http://127.0.0.1:9/v1/bot-account-checks/7/result";
    const config = BotConfig.parse({
      botId: 7,
      meetingInfo: TEST_MEETING,
      callback: { baseUrl: "http://127.0.0.1:9", token: "t".repeat(43) },
      upload: { url: resultUrl },
      accountCheck: { checkId: 7, resultUrl },
    });
    try {
      await expect(launcher.launch(config)).rejects.toThrow(
        `image ${IMAGE} could not be pulled: still pulling after 0.2 s`,
      );
      expect(engine.made("POST", "/images/create")).toHaveLength(1);
      expect(engine.made("POST", "/containers/create")).toHaveLength(0);
    } finally {
      await launcher.close();
    }
  });

  it("after a restart are left to finish, never-started ones removed, and none taken for a bot's", async () => {
    engine.images.add(IMAGE);
    const dataDir = await mkdtemp(path.join(tmpdir(), "meetbot-docker-"));
    dataDirs.push(dataDir);
    const first = await dockerServer({ dataDir, ...CHECKS });
    const user = await registerUser(first.api);
    const bot = await deployedBot(first, user);
    await bot.runner.status("JOINING_CALL");
    const { checkId } = await requestAccountCheck(first, user);
    const check = await checkContainerOf(checkId);
    // Created by a server that stopped before starting it.
    const unstarted = engine.addContainer(
      "meetbot-check-77",
      { Image: IMAGE, Labels: { "app.kubernetes.io/name": "meetbot-runner", "meetbot.dev/check-id": "77" } },
      "created",
    );
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    const before = engine.requests.length;

    const second = await dockerServer({ dataDir, ...CHECKS });
    // Then a kill: its stop comes after anything the clean-up at attach asked for.
    expect((await second.api.post(`/v1/bots/${bot.botId}/kill`, { token: user.token })).status).toBe(200);
    await eventually(
      async () => engine.made("POST", `/containers/${bot.container.Id}/stop`)[0],
      "the bot's container stopped",
    );
    const touched = engine.requests
      .slice(before)
      .filter((r) => r.path.startsWith("/containers/") && r.path !== "/containers/json");
    expect(touched.map((r) => `${r.method} ${r.path}`)).toEqual([
      `DELETE /containers/${unstarted.Id}`,
      `POST /containers/${bot.container.Id}/stop`,
    ]);
    expect(check.State).toBe("running");
  });
});

describe("the container launchers' settings", () => {
  const resolve = (env: NodeJS.ProcessEnv) =>
    resolveConfig({ dataDir: "/tmp/meetbot-config-test", env }).launcher;

  it("defaults to local processes, and to the figures `make bench` measured for containers", () => {
    expect(resolve({})).toEqual({
      kind: "local",
      image: "meetbot:latest",
      resources: { cpus: 1, memoryBytes: 1024 ** 3, shmBytes: 128 * 1024 ** 2 },
      docker: {
        endpoint: { socketPath: "/var/run/docker.sock" },
        network: undefined,
        seccompProfile: undefined,
      },
    });
  });

  it("makes the launcher MEETBOT_LAUNCHER names", async () => {
    const launcherFor = (env: NodeJS.ProcessEnv) =>
      createLauncher(resolveConfig({ dataDir: "/tmp/meetbot-config-test", env }));
    const local = await launcherFor({});
    expect(local).toBeInstanceOf(LocalProcessLauncher);
    await local.close?.();
    expect(await launcherFor({ MEETBOT_LAUNCHER: "docker" })).toBeInstanceOf(DockerLauncher);
    // The Kubernetes launcher's own settings are read: here, no cluster to reach.
    await expect(launcherFor({ MEETBOT_LAUNCHER: "kubernetes" })).rejects.toThrow(/no cluster to reach/);
  });

  it("reads sizes and cores as Kubernetes writes them", () => {
    const { resources } = resolve({
      MEETBOT_RUNNER_CPUS: "500m",
      MEETBOT_RUNNER_MEMORY: "1G",
      MEETBOT_RUNNER_SHM_SIZE: "268435456",
    });
    expect(resources).toEqual({ cpus: 0.5, memoryBytes: 1e9, shmBytes: 256 * 1024 ** 2 });
    expect(() => resolve({ MEETBOT_RUNNER_MEMORY: "1.5GB" })).toThrow(
      /MEETBOT_RUNNER_MEMORY: must be a size/,
    );
    expect(() => resolve({ MEETBOT_RUNNER_CPUS: "0" })).toThrow(
      /MEETBOT_RUNNER_CPUS: must be a number of cores/,
    );
    expect(() => resolve({ MEETBOT_LAUNCHER: "nomad" })).toThrow(
      'MEETBOT_LAUNCHER: must be one of local, docker, kubernetes (got "nomad")',
    );
  });

  it("finds the engine by MEETBOT_DOCKER_HOST, else Docker's own DOCKER_HOST", () => {
    expect(resolve({ DOCKER_HOST: "unix:///run/user/1000/docker.sock" }).docker.endpoint).toEqual({
      socketPath: "/run/user/1000/docker.sock",
    });
    expect(
      resolve({ DOCKER_HOST: "unix:///run/docker.sock", MEETBOT_DOCKER_HOST: "tcp://docker.internal:2375" })
        .docker.endpoint,
    ).toEqual({ host: "docker.internal", port: 2375, protocol: "http" });
    expect(() => resolve({ DOCKER_HOST: "ssh://me@host" })).toThrow(StartupError);
  });

  it("passes a seccomp profile's JSON on, and refuses a file that is not JSON", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "meetbot-seccomp-"));
    try {
      const profile = path.join(dir, "chromium.json");
      await writeFile(profile, '{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}');
      expect(resolve({ MEETBOT_DOCKER_SECCOMP_PROFILE: profile }).docker.seccompProfile).toBe(
        '{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}',
      );
      await writeFile(profile, "defaultAction: SCMP_ACT_ERRNO");
      expect(() => resolve({ MEETBOT_DOCKER_SECCOMP_PROFILE: profile })).toThrow(
        `MEETBOT_DOCKER_SECCOMP_PROFILE: ${profile} is not JSON`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
