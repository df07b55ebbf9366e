import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pino from "pino";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe } from "vitest";
import type { BotConfig } from "../../src/core/index.js";
import { controlPlaneDispatcher } from "../../src/runner/control-plane-tls.js";
import { Reporter } from "../../src/runner/reporter.js";
import { uploadRecording } from "../../src/runner/upload.js";
import { resolveConfig } from "../../src/server/config.js";
import { StartupError } from "../../src/server/startup-error.js";
import { startBuiltApp, TestClock } from "../helpers/built-app.js";
import { makeTestMp4, TEST_MEETING, type TestServer, type BotApiBody } from "../helpers/server-harness.js";
import { expect, test } from "../helpers/fixtures.js";

/**
 * `meetbot serve` with MEETBOT_TLS_CERT and MEETBOT_TLS_KEY: real TLS on 127.0.0.1 with
 * certificates openssl makes here, clients that trust them (or not), and a runner's own reporter
 * and uploader calling back over HTTPS with nothing but its BotConfig.
 */

const openssl = (args: string[]) => promisify(execFile)("openssl", args);
const LOOPBACK_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost";

/** A self-signed certificate for 127.0.0.1 and localhost, and its key, as PEM files in `dir`. */
async function selfSigned(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  await openssl([
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
    ...["-keyout", key, "-out", cert, "-days", "2", "-subj", `/CN=${name}`, "-addext", LOOPBACK_NAMES],
  ]);
  return { cert, key };
}

let dir: string;
let files: { cert: string; key: string };
let certPem: string;
let trusted: Agent;
let server: TestServer;
let mp4: Uint8Array;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "meetbot-tls-"));
  [files, mp4] = await Promise.all([selfSigned(dir, "meetbot"), makeTestMp4(dir)]);
  certPem = await readFile(files.cert, "utf8");
  trusted = new Agent({ connect: { ca: certPem } });
}, 60_000);
// Served with the certificate made above.
test.override("serverOptions", { scope: "file" }, () => ({
  env: { MEETBOT_TLS_CERT: files.cert, MEETBOT_TLS_KEY: files.key },
  notes: { port: 0 },
  // The recording uploaded below needs no transcript here.
  jobs: { worker: false },
}));
test.beforeAll(({ server: fileServer }) => {
  server = fileServer;
});
afterAll(async () => {
  await trusted?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A JSON request to the server by a client that trusts its certificate. */
async function call<M extends "GET" | "POST", P extends string>(
  method: M,
  url: P,
  opts: { token?: string; body?: unknown } = {},
) {
  const response = await request(new URL(url, server.url), {
    method,
    dispatcher: trusted,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  const text = await response.body.text();
  // Typed as the harness types answers: by the route's schema in the response map.
  return { status: response.statusCode, body: (text ? JSON.parse(text) : undefined) as BotApiBody<M, P> };
}

/** A user and a deployed bot: the BotConfig its runner would get. */
async function deployedBot(): Promise<{ token: string; botId: number; config: BotConfig }> {
  const email = `tls-${Math.random().toString(36).slice(2)}@example.com`;
  const registered = await call("POST", "/v1/auth/register", {
    body: { email, password: "correct horse battery", name: "TLS" },
  });
  expect(registered.status).toBe(201);
  const token = registered.body.access_token;
  const created = await call("POST", "/v1/bots", { token, body: { meetingInfo: TEST_MEETING } });
  expect(created.status).toBe(201);
  const botId = created.body.id;
  expect((await call("POST", `/v1/bots/${botId}/deploy`, { token })).status).toBe(200);
  return { token, botId, config: server.launcher.configFor(botId) };
}

describe("a server given MEETBOT_TLS_CERT and MEETBOT_TLS_KEY", () => {
  test("speaks HTTPS at an https URL, and names that URL in its OpenAPI document", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const document = await call("GET", "/openapi.json");
    expect(document.status).toBe(200);
    // An OpenAPI document: no schema in the response map.
    expect((document.body as { servers?: unknown }).servers).toEqual([
      { url: server.url, description: "This server" },
    ]);
  });

  test("serves the meeting-notes interface on its own port over HTTPS too", async () => {
    const notesUrl = server.notesUrl as string;
    expect(notesUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(notesUrl).not.toBe(server.url);
    const document = await call("GET", `${notesUrl}/openapi.json`);
    expect(document.status).toBe(200);
    expect((document.body as { servers?: unknown }).servers).toEqual([
      expect.objectContaining({ url: notesUrl }),
    ]);
  });

  test("refuses plain HTTP on its ports", async () => {
    for (const url of [server.url, server.notesUrl as string]) {
      const plain = url.replace(/^https:/, "http:");
      await expect(request(`${plain}/openapi.json`)).rejects.toThrow();
    }
  });

  test("is refused by a client that does not trust its certificate", async () => {
    await expect(request(`${server.url}/openapi.json`)).rejects.toMatchObject({
      code: "DEPTH_ZERO_SELF_SIGNED_CERT",
    });
  });

  test("gives runners https callback and upload URLs and its certificate (never its key) to trust", async () => {
    const { config } = await deployedBot();
    expect(config.callback.baseUrl).toBe(server.url);
    expect(config.upload.url.startsWith(`${server.url}/v1/bot-callbacks/`)).toBe(true);
    expect(config.callback.ca).toBe(certPem);
    expect(config.callback.ca).not.toContain("PRIVATE KEY");
  });

  test("is reached by a runner's reporter and uploader with only its BotConfig, and hands out https download links", async () => {
    const { token, botId, config } = await deployedBot();
    const log = pino({ level: "silent" });
    const workDir = await mkdtemp(path.join(dir, "runner-"));
    const reporter = new Reporter(config, workDir, log);
    try {
      for (const status of ["JOINING_CALL", "IN_CALL", "CALL_ENDED"] as const)
        reporter.report({ type: "status", data: { status } });
      expect(await reporter.flush(30_000)).toBe(true);
      expect((await call("GET", `/v1/bots/${botId}`, { token })).body.status).toBe("CALL_ENDED");

      const recording = path.join(workDir, "recording.mp4");
      await writeFile(recording, mp4);
      await uploadRecording(config, { path: recording, durationMs: 2000 }, log);
      reporter.report({ type: "status", data: { status: "DONE" } });
      expect(await reporter.flush(30_000)).toBe(true);
    } finally {
      reporter.stop();
    }
    expect((await call("GET", `/v1/bots/${botId}`, { token })).body.status).toBe("DONE");

    const link = await call("GET", `/v1/recordings/${botId}/download`, { token });
    expect(link.body.url.startsWith(`${server.url}/v1/recordings/${botId}/file?`)).toBe(true);
    const file = await request(link.body.url, { dispatcher: trusted });
    expect(file.statusCode).toBe(200);
    expect(new Uint8Array(await file.body.arrayBuffer())).toEqual(mp4);
  });

  test("is not trusted by a runner whose BotConfig names no certificate", async () => {
    const { config } = await deployedBot();
    const { ca: _ca, ...untrusting } = config.callback;
    await expect(
      request(`${server.url}/openapi.json`, { dispatcher: controlPlaneDispatcher(untrusting) }),
    ).rejects.toMatchObject({ code: "DEPTH_ZERO_SELF_SIGNED_CERT" });
  });
});

describe("a runner's trust in the control plane", () => {
  test("takes a certificate signed by a private CA as its anchor, without the CA", async () => {
    const caKey = path.join(dir, "ca.key");
    const caCert = path.join(dir, "ca.pem");
    await openssl([
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-keyout", caKey, "-out", caCert, "-days", "2", "-subj", "/CN=Private CA"],
    ]);
    const leafKey = path.join(dir, "leaf.key");
    const leafCert = path.join(dir, "leaf.pem");
    await openssl([
      ...["req", "-x509", "-CA", caCert, "-CAkey", caKey, "-newkey", "ec"],
      ...["-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", leafKey, "-out", leafCert],
      ...["-days", "2", "-subj", "/CN=leaf", "-addext", LOOPBACK_NAMES],
    ]);
    const leaf = await readFile(leafCert, "utf8");
    const https = createServer({ cert: leaf, key: await readFile(leafKey) }, (_req, res) => res.end("ok"));
    await new Promise<void>((resolve) => https.listen(0, "127.0.0.1", resolve));
    const url = `https://127.0.0.1:${(https.address() as AddressInfo).port}/`;
    try {
      const callback = { baseUrl: url, token: "test-callback-token-0123456789" };
      const answer = await request(url, { dispatcher: controlPlaneDispatcher({ ...callback, ca: leaf }) });
      expect(await answer.body.text()).toBe("ok");
      await expect(request(url, { dispatcher: controlPlaneDispatcher(callback) })).rejects.toMatchObject({
        code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      });
    } finally {
      https.closeAllConnections();
      await new Promise((resolve) => https.close(resolve));
    }
  });

  test("passes NODE_EXTRA_CA_CERTS on to runners (a private CA the server's Node trusts)", () => {
    const config = resolveConfig({ dataDir: dir, env: { NODE_EXTRA_CA_CERTS: "/etc/meetbot/ca.pem" } });
    expect(config.runner.env).toEqual({ NODE_EXTRA_CA_CERTS: "/etc/meetbot/ca.pem" });
  });
});

describe("MEETBOT_TLS_CERT and MEETBOT_TLS_KEY at startup", () => {
  const resolve = (env: NodeJS.ProcessEnv) => resolveConfig({ dataDir: dir, env });
  const refusal = (env: NodeJS.ProcessEnv) => {
    try {
      resolve(env);
    } catch (error) {
      expect(error).toBeInstanceOf(StartupError);
      return (error as Error).message;
    }
    throw new Error("the configuration was accepted");
  };

  test("serves plain HTTP with neither, HTTPS with both", () => {
    expect(resolve({}).tls).toBeUndefined();
    expect(resolve({ MEETBOT_TLS_CERT: "", MEETBOT_TLS_KEY: " " }).tls).toBeUndefined();
    const tls = resolve({ MEETBOT_TLS_CERT: files.cert, MEETBOT_TLS_KEY: files.key }).tls;
    expect(tls?.certificates).toBe(certPem);
  });

  test("refuses one without the other, naming the missing one", () => {
    expect(refusal({ MEETBOT_TLS_CERT: files.cert })).toBe(
      "MEETBOT_TLS_KEY: must be set too when MEETBOT_TLS_CERT is (HTTPS needs the certificate and its key; neither serves HTTP)",
    );
    expect(refusal({ MEETBOT_TLS_KEY: files.key })).toBe(
      "MEETBOT_TLS_CERT: must be set too when MEETBOT_TLS_KEY is (HTTPS needs the certificate and its key; neither serves HTTP)",
    );
  });

  test("refuses a file that is missing", () => {
    const missing = path.join(dir, "missing.pem");
    expect(refusal({ MEETBOT_TLS_CERT: missing, MEETBOT_TLS_KEY: files.key })).toBe(
      `MEETBOT_TLS_CERT: cannot read ${missing}: no such file`,
    );
  });

  test("refuses files that are not PEM, or not a certificate and its own key", async () => {
    const text = path.join(dir, "notes.txt");
    await writeFile(text, "not a certificate\n");
    expect(refusal({ MEETBOT_TLS_CERT: text, MEETBOT_TLS_KEY: files.key })).toBe(
      `MEETBOT_TLS_CERT: ${text} is not a PEM certificate (no -----BEGIN CERTIFICATE----- line)`,
    );
    const der = path.join(dir, "meetbot.der");
    await openssl(["x509", "-in", files.cert, "-outform", "DER", "-out", der]);
    expect(refusal({ MEETBOT_TLS_CERT: der, MEETBOT_TLS_KEY: files.key })).toMatch(
      /^MEETBOT_TLS_CERT: .*meetbot\.der is not a PEM certificate/,
    );
    const broken = path.join(dir, "broken.pem");
    await writeFile(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    expect(refusal({ MEETBOT_TLS_CERT: broken, MEETBOT_TLS_KEY: files.key })).toMatch(
      /^MEETBOT_TLS_CERT: .*broken\.pem is not a PEM certificate \(.+\)$/,
    );
    // The two swapped: the key file holds no certificate.
    expect(refusal({ MEETBOT_TLS_CERT: files.key, MEETBOT_TLS_KEY: files.cert })).toMatch(
      /^MEETBOT_TLS_CERT: .*meetbot\.key is not a PEM certificate/,
    );
    expect(refusal({ MEETBOT_TLS_CERT: files.cert, MEETBOT_TLS_KEY: text })).toBe(
      `MEETBOT_TLS_KEY: ${text} is not a PEM private key (no -----BEGIN ... PRIVATE KEY----- line)`,
    );
    const other = await selfSigned(dir, "other");
    expect(refusal({ MEETBOT_TLS_CERT: files.cert, MEETBOT_TLS_KEY: other.key })).toBe(
      `MEETBOT_TLS_KEY: ${other.key} is not the private key of the certificate in ${files.cert}`,
    );
  });

  test("checks a certificate given as an option the same way", async () => {
    const key = await readFile(files.key);
    expect(resolveConfig({ dataDir: dir, env: {}, tls: { cert: certPem, key } }).tls?.certificates).toBe(
      certPem,
    );
    expect(() => resolveConfig({ dataDir: dir, env: {}, tls: { cert: "nope", key } })).toThrow(
      "tls.cert is not a PEM certificate (no -----BEGIN CERTIFICATE----- line)",
    );
  });

  test("tells runners only the certificates of a combined certificate-and-key file", async () => {
    const combined = path.join(dir, "combined.pem");
    await writeFile(combined, `${await readFile(files.key, "utf8")}${certPem}`);
    const tls = resolve({ MEETBOT_TLS_CERT: combined, MEETBOT_TLS_KEY: combined }).tls;
    expect(tls?.certificates).toBe(certPem);
  });
});

describe("behind a reverse proxy (MEETBOT_TRUST_PROXY)", () => {
  /** The answers to failed logins, one per client address in turn, through a proxy on 127.0.0.1. */
  async function loginsFrom(env: NodeJS.ProcessEnv, clients: string[]): Promise<number[]> {
    const clock = new TestClock();
    clock.toNextHour(1_000); // no minute window ends during the test
    const app = await startBuiltApp({ clock, rateLimit: { perMinute: 2 }, env });
    try {
      const statuses: number[] = [];
      for (const client of clients) {
        const login = await app.api.post("/v1/auth/login", {
          body: { email: "nobody@example.com", password: "not the password" },
          headers: { "x-forwarded-for": client },
        });
        statuses.push(login.status);
      }
      return statuses;
    } finally {
      await app.close();
    }
  }
  const clients = ["203.0.113.5", "203.0.113.5", "203.0.113.5", "203.0.113.6"];

  test("rate limits the routes without a credential per client, as the proxy names it", async () => {
    expect(await loginsFrom({ MEETBOT_TRUST_PROXY: "127.0.0.1" }, clients)).toEqual([401, 401, 429, 401]);
    expect(await loginsFrom({ MEETBOT_TRUST_PROXY: "10.0.0.0/8, loopback" }, clients)).toEqual([
      401, 401, 429, 401,
    ]);
  });

  test("believes no X-Forwarded-For from an address it was not told of", async () => {
    expect(await loginsFrom({}, clients)).toEqual([401, 401, 429, 429]);
    expect(await loginsFrom({ MEETBOT_TRUST_PROXY: "10.0.0.0/8" }, clients)).toEqual([401, 401, 429, 429]);
  });

  test("refuses a value that is not addresses or ranges", () => {
    const env = (value: string) => resolveConfig({ dataDir: dir, env: { MEETBOT_TRUST_PROXY: value } });
    expect(env("::1, 192.168.0.0/16, uniquelocal").trustProxy).toEqual([
      "::1",
      "192.168.0.0/16",
      "uniquelocal",
    ]);
    expect(env("").trustProxy).toEqual([]);
    for (const bad of ["proxy.example.com", "10.0.0.0/33", "10.0.0.1/8/8", "127.0.0.1,"])
      expect(() => env(bad)).toThrow(
        `MEETBOT_TRUST_PROXY: must be comma-separated IP addresses or CIDR ranges (or loopback, linklocal, uniquelocal) (got "${bad}")`,
      );
  });
});
