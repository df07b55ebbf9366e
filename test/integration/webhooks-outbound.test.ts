import { execFileSync } from "node:child_process";
import type { LookupAddress } from "node:dns";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net, { type LookupFunction } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { OutboundClient, type OutboundPolicy } from "../../src/server/webhooks/outbound.js";

/**
 * The outbound client against real receivers on 127.0.0.1 and ::1. The only fake is the resolver
 * (a lookup function answering what a test needs); every connection is real.
 */

const PRODUCTION: OutboundPolicy = {
  allowPrivateTargets: false,
  connectTimeoutMs: 2_000,
  responseTimeoutMs: 2_000,
};
const DEVELOPMENT: OutboundPolicy = { ...PRODUCTION, allowPrivateTargets: true };

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  port: number;
  /** TCP connections accepted: 0 means nothing reached the receiver at all. */
  connections: number;
  requests: Received[];
  url(path?: string): string;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(
  handler: Handler = (_req, res) => res.end("thanks"),
  host = "127.0.0.1",
): Promise<Receiver> {
  const state = { connections: 0, requests: [] as Received[] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      state.requests.push(received);
      handler(req, res, received);
    });
  });
  server.on("connection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const port = (server.address() as net.AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    port,
    get connections() {
      return state.connections;
    },
    requests: state.requests,
    url: (p = "/hook") => `http://${shownHost}:${port}${p}`,
  };
}

function client(policy: OutboundPolicy, lookup?: LookupFunction): OutboundClient {
  const c = new OutboundClient(policy, lookup ? { lookup } : {});
  cleanups.push(() => c.close());
  return c;
}

/** A resolver that answers from a script, one answer per call (the last one repeats), and counts calls. */
function scriptedLookup(...answers: (string[] | NodeJS.ErrnoException)[]) {
  const calls: string[] = [];
  const lookup: LookupFunction = (hostname, _options, callback) => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    setImmediate(() => {
      if (answer instanceof Error) callback(answer, []);
      else
        callback(
          null,
          answer.map((address): LookupAddress => ({ address, family: net.isIP(address) })),
        );
    });
  };
  return { lookup, calls };
}

/** A resolver for tests where a URL holds an IP literal: it must never be asked. */
const NO_DNS: LookupFunction = (hostname) => {
  throw new Error(`lookup(${hostname}) called for an IP literal`);
};

const ipv6Available = await new Promise<boolean>((resolve) => {
  const probe = net.createServer();
  probe.once("error", () => resolve(false));
  probe.listen(0, "::1", () => probe.close(() => resolve(true)));
});

const JSON_HEADERS = { "content-type": "application/json", "x-webhook-event": "bot.joined" };
const BODY = JSON.stringify({ event: "bot.joined", botId: 1, data: {} });

describe("OutboundClient: delivering", () => {
  it("POSTs the body and headers to an allowed receiver and returns its status and body", async () => {
    const r = await receiver((_req, res) => {
      res.statusCode = 201;
      res.end("created");
    });
    const result = await client(DEVELOPMENT, NO_DNS).post(r.url("/hook?x=1"), BODY, JSON_HEADERS);
    expect(result).toMatchObject({ ok: true, statusCode: 201, responseBody: "created" });
    expect(result.responseTimeMs).toEqual(expect.any(Number));
    expect(r.requests).toHaveLength(1);
    expect(r.requests[0]).toMatchObject({
      method: "POST",
      url: "/hook?x=1",
      body: BODY,
      headers: expect.objectContaining({
        ...JSON_HEADERS,
        host: `127.0.0.1:${r.port}`,
        "content-length": String(Buffer.byteLength(BODY)),
      }),
    });
  });

  it("keeps framing and Host its own, whatever the caller passes", async () => {
    const r = await receiver();
    const result = await client(DEVELOPMENT, NO_DNS).post(r.url(), BODY, {
      Host: "internal.example",
      "Content-Length": "1",
      "Transfer-Encoding": "chunked",
    });
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(r.requests[0]!.body).toBe(BODY);
    expect(r.requests[0]!.headers.host).toBe(`127.0.0.1:${r.port}`);
  });

  it.skipIf(!ipv6Available)("delivers to ::1 with the setting", async () => {
    const r = await receiver(undefined, "::1");
    const result = await client(DEVELOPMENT, NO_DNS).post(`http://[::1]:${r.port}/hook`, BODY, {});
    expect(result).toMatchObject({ ok: true, statusCode: 200, responseBody: "thanks" });
    expect(r.requests[0]!.headers.host).toBe(`[::1]:${r.port}`);
  });

  it("resolves a hostname once, connects to that address and sends the original Host", async () => {
    const r = await receiver();
    const dns = scriptedLookup(["127.0.0.1"]);
    const result = await client(DEVELOPMENT, dns.lookup).post(`http://hook.test:${r.port}/in`, BODY, {});
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(dns.calls).toEqual(["hook.test"]);
    expect(r.requests[0]!.headers.host).toBe(`hook.test:${r.port}`);
  });

  it("returns a redirect as it is and does not follow it", async () => {
    const elsewhere = await receiver();
    const r = await receiver((_req, res) => {
      res.writeHead(302, { location: elsewhere.url("/stolen") });
      res.end();
    });
    const result = await client(DEVELOPMENT, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({ ok: true, statusCode: 302, responseBody: "" });
    expect(r.requests).toHaveLength(1);
    expect(elsewhere.connections).toBe(0);
  });

  it("reads at most maxResponseBytes of a large response (64 KiB by default)", async () => {
    const big = "x".repeat(1024 * 1024);
    const r = await receiver((_req, res) => res.end(big));
    const small = await client({ ...DEVELOPMENT, maxResponseBytes: 1000 }, NO_DNS).post(r.url(), BODY, {});
    expect(small).toMatchObject({ ok: true, statusCode: 200 });
    expect(small.ok && small.responseBody).toBe("x".repeat(1000));
    const byDefault = await client(DEVELOPMENT, NO_DNS).post(r.url(), BODY, {});
    expect(byDefault.ok && byDefault.responseBody.length).toBe(64 * 1024);
  });

  it("does not wait for the rest of a body once it has maxResponseBytes", async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { "content-length": String(10_000_000) });
      res.write("y".repeat(5000)); // and never the rest
    });
    const policy = { ...DEVELOPMENT, responseTimeoutMs: 5_000, maxResponseBytes: 1000 };
    const result = await client(policy, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({ ok: true, statusCode: 200, responseBody: "y".repeat(1000) });
  });
});

describe("OutboundClient: production mode refuses private targets before connecting", () => {
  it("refuses 127.0.0.1: refused_target, and the receiver saw no connection", async () => {
    const r = await receiver();
    const result = await client(PRODUCTION, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({
      ok: false,
      error: "refused_target",
      message: expect.stringContaining("127.0.0.1 is a loopback address"),
    });
    expect(r.connections).toBe(0);
  });

  it.skipIf(!ipv6Available)("refuses ::1", async () => {
    const r = await receiver(undefined, "::1");
    const result = await client(PRODUCTION, NO_DNS).post(`http://[::1]:${r.port}/`, BODY, {});
    expect(result).toMatchObject({ ok: false, error: "refused_target" });
    expect(r.connections).toBe(0);
  });

  // What reaches the client is the WHATWG URL parser's normal form, 127.0.0.1 or [::ffff:7f00:1].
  it.each([
    "http://2130706433:PORT/",
    "http://0x7f.1:PORT/",
    "http://0177.0.0.1:PORT/",
    "http://[::ffff:127.0.0.1]:PORT/",
  ])("refuses the IP literal %s without asking DNS", async (template) => {
    const r = await receiver();
    const result = await client(PRODUCTION, NO_DNS).post(template.replace("PORT", String(r.port)), BODY, {});
    expect(result).toMatchObject({ ok: false, error: "refused_target" });
    expect(r.connections).toBe(0);
  });

  it("connects to a numeric spelling of 127.0.0.1 when private targets are allowed", async () => {
    const r = await receiver();
    const result = await client(DEVELOPMENT, NO_DNS).post(`http://2130706433:${r.port}/`, BODY, {});
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(r.requests[0]!.headers.host).toBe(`127.0.0.1:${r.port}`);
  });

  it("refuses a hostname that resolves to a private address", async () => {
    const r = await receiver();
    const dns = scriptedLookup(["127.0.0.1"]);
    const result = await client(PRODUCTION, dns.lookup).post(`http://innocent.test:${r.port}/`, BODY, {});
    expect(result).toMatchObject({
      ok: false,
      error: "refused_target",
      // The name only: a refusal never tells the caller what an internal name resolves to.
      message:
        "innocent.test resolves to an address that is not public; set MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 to allow it",
    });
    expect(r.connections).toBe(0);
  });

  it("refuses a hostname when any of its addresses is refused, even if another is public", async () => {
    const r = await receiver();
    const dns = scriptedLookup(["8.8.8.8", "127.0.0.1"]);
    const result = await client(PRODUCTION, dns.lookup).post(`http://mixed.test:${r.port}/`, BODY, {});
    expect(result).toMatchObject({ ok: false, error: "refused_target" });
    expect(r.connections).toBe(0);
  });

  it("refuses metadata addresses even with private targets allowed", async () => {
    const dns = scriptedLookup(["169.254.169.254"]);
    const result = await client(DEVELOPMENT, dns.lookup).post("http://metadata.test/latest/", BODY, {});
    expect(result).toMatchObject({
      ok: false,
      error: "refused_target",
      message: "metadata.test resolves to an address that is not public; webhooks may never target it",
    });
  });

  it("pins the vetted address: a resolver that changes its answer (DNS rebinding) gets no say", async () => {
    // First answer loopback (allowed here), every later answer the metadata address. A client that
    // looked the name up again between vetting and connecting would connect to 169.254.169.254
    // (failing) instead of reaching the receiver.
    const r = await receiver();
    const dns = scriptedLookup(["127.0.0.1"], ["169.254.169.254"]);
    const outbound = client(DEVELOPMENT, dns.lookup);
    const first = await outbound.post(`http://rebind.test:${r.port}/`, BODY, {});
    expect(first).toMatchObject({ ok: true, statusCode: 200 });
    expect(dns.calls).toEqual(["rebind.test"]);
    expect(r.requests).toHaveLength(1);
    // the next delivery resolves again, and this time the answer is refused
    const second = await outbound.post(`http://rebind.test:${r.port}/`, BODY, {});
    expect(second).toMatchObject({ ok: false, error: "refused_target" });
    expect(dns.calls).toHaveLength(2);
    expect(r.connections).toBe(1);
  });
});

describe("OutboundClient: failures", () => {
  it("invalid_url for what is not an http(s) URL", async () => {
    const outbound = client(DEVELOPMENT, NO_DNS);
    for (const url of ["ftp://127.0.0.1/", "not a url", "file:///etc/passwd"]) {
      expect(await outbound.post(url, BODY, {})).toMatchObject({ ok: false, error: "invalid_url" });
    }
  });

  it("dns_failed when the name does not resolve or resolves to nothing", async () => {
    const notFound = Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.test"), { code: "ENOTFOUND" });
    const failing = await client(PRODUCTION, scriptedLookup(notFound).lookup).post(
      "http://nowhere.test/",
      BODY,
      {},
    );
    expect(failing).toMatchObject({
      ok: false,
      error: "dns_failed",
      message: expect.stringContaining("ENOTFOUND"),
    });
    const empty = await client(PRODUCTION, scriptedLookup([]).lookup).post("http://empty.test/", BODY, {});
    expect(empty).toMatchObject({ ok: false, error: "dns_failed", message: "empty.test: no addresses" });
  });

  it("connect_failed when nothing listens", async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const result = await client(DEVELOPMENT, NO_DNS).post(`http://127.0.0.1:${closed}/`, BODY, {});
    expect(result).toMatchObject({
      ok: false,
      error: "connect_failed",
      message: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("connect_timeout when the connection is not accepted in time (a listener with a full backlog)", async () => {
    const port = await unresponsiveListener();
    const result = await client({ ...DEVELOPMENT, connectTimeoutMs: 300 }, NO_DNS).post(
      `http://127.0.0.1:${port}/`,
      BODY,
      {},
    );
    expect(result).toMatchObject({
      ok: false,
      error: "connect_timeout",
      message: "no connection within 300 ms",
    });
  });

  it("response_timeout when the receiver takes the request and never answers", async () => {
    const r = await receiver(() => {});
    const result = await client({ ...DEVELOPMENT, responseTimeoutMs: 300 }, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({
      ok: false,
      error: "response_timeout",
      message: "no complete response within 300 ms",
    });
    expect(r.requests).toHaveLength(1);
  });

  it("response_timeout when the status arrives but the body never completes", async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
    });
    const result = await client({ ...DEVELOPMENT, responseTimeoutMs: 300 }, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({ ok: false, error: "response_timeout" });
  });

  it("network_error when the receiver drops the connection after taking the request", async () => {
    const r = await receiver((req) => req.socket.destroy());
    const result = await client(DEVELOPMENT, NO_DNS).post(r.url(), BODY, {});
    expect(result).toMatchObject({ ok: false, error: "network_error" });
    expect(r.requests).toHaveLength(1);
  });

  it("close() ends what is in flight with network_error and refuses later calls", async () => {
    const r = await receiver(() => {});
    const outbound = new OutboundClient(DEVELOPMENT, { lookup: NO_DNS });
    const pending = outbound.post(r.url(), BODY, {});
    await waitFor(() => r.requests.length === 1);
    await outbound.close();
    expect(await pending).toMatchObject({
      ok: false,
      error: "network_error",
      message: "outbound client closed",
    });
    expect(await outbound.post(r.url(), BODY, {})).toMatchObject({ ok: false, error: "network_error" });
    expect(r.requests).toHaveLength(1);
  });
});

const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe("OutboundClient: https", () => {
  it.skipIf(!hasOpenssl)(
    "connects to the vetted address with the original name for SNI and certificate checks",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "meetbot-tls-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const [key, cert] = [path.join(dir, "key.pem"), path.join(dir, "cert.pem")];
      execFileSync(
        "openssl",
        [
          ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
          ...["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=hook.test"],
          ...["-addext", "subjectAltName=DNS:hook.test"],
        ],
        { stdio: "ignore" },
      );
      // The name the client asks for in its TLS hello, recorded before certificates come into it.
      const serverNames: string[] = [];
      const server = https.createServer({
        key: readFileSync(key),
        cert: readFileSync(cert),
        SNICallback: (name, callback) => {
          serverNames.push(name);
          callback(null, undefined);
        },
      });
      server.on("tlsClientError", () => {});
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise((resolve) => server.close(resolve)));
      const { port } = server.address() as net.AddressInfo;
      const dns = scriptedLookup(["127.0.0.1"]);

      const result = await client(DEVELOPMENT, dns.lookup).post(`https://hook.test:${port}/`, BODY, {});
      // a self-signed certificate is not trusted: a real certificate check took place
      expect(result).toMatchObject({
        ok: false,
        error: "connect_failed",
        message: expect.stringMatching(/self-signed certificate/),
      });
      expect(dns.calls).toEqual(["hook.test"]);
      expect(serverNames).toEqual(["hook.test"]);
    },
  );
});

/**
 * A listener that never accepts: its event loop (a worker thread) is blocked, and once the
 * kernel's accept queue holds what backlog 1 allows, new connection attempts get no answer at all.
 */
async function unresponsiveListener(): Promise<number> {
  const release = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     const server = require("node:net").createServer();
     server.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
       server.close();
       process.exit(0);
     });`,
    { eval: true, workerData: release },
  );
  const port = await new Promise<number>((resolve) => worker.once("message", resolve));
  const fillers: net.Socket[] = [];
  cleanups.push(async () => {
    for (const socket of fillers) socket.destroy();
    Atomics.store(release, 0, 1);
    Atomics.notify(release, 0);
    await new Promise((resolve) => worker.once("exit", resolve));
  });
  // fill the accept queue until an attempt hangs
  for (let i = 0; i < 16; i++) {
    const socket = net.connect(port, "127.0.0.1");
    fillers.push(socket);
    const connected = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 200);
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (!connected) return port;
  }
  throw new Error("the listener kept accepting connections");
}

async function waitFor(condition: () => boolean): Promise<void> {
  await vi.waitFor(
    () => {
      if (!condition()) throw new Error("condition not met yet");
    },
    { timeout: 2_000, interval: 10 },
  );
}
