import dns, { type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import net, { type LookupFunction, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { vetAddress } from "../../core/net-address.js";

/**
 * The one way the server makes HTTP requests to user-chosen URLs (webhooks, bot callbackUrls,
 * calendar feeds).
 *
 * SSRF protection happens at connect time, for every attempt: the hostname is resolved once, every
 * resolved address is vetted (one refused address refuses the target: a name that mixes public
 * and private answers is not something a legitimate receiver needs), and the socket is then opened
 * with a lookup function that can only answer with those vetted addresses. There is no second DNS
 * query between the check and the connect, so DNS rebinding cannot swap in another address.
 * IP literals skip DNS and are vetted as they are (the WHATWG URL parser has already turned forms
 * like http://2130706433/ or http://0x7f.1/ into 127.0.0.1). As a last guard the connected
 * socket's remote address is vetted again.
 *
 * node:http rather than undici: each request gets its own connection, so its phases (connecting,
 * request written, response) are events on objects we hold, and the two timeouts can be measured
 * exactly as the spec words them. A webhook delivery is one small POST; connection reuse is not
 * worth the extra state. node:http never follows redirects and ignores proxy variables.
 */
export interface OutboundPolicy {
  allowPrivateTargets: boolean;
  /** DNS + TCP (+ TLS) until the connection is usable. Spec: 10 s. */
  connectTimeoutMs: number;
  /** From the connection being usable (the request is written right then) to the complete response. Spec: 30 s. */
  responseTimeoutMs: number;
  /** Read at most this much of the response body; the rest is not waited for. Default 64 KiB. */
  maxResponseBytes?: number;
}

export type OutboundError =
  | "invalid_url"
  | "refused_target"
  | "dns_failed"
  | "connect_failed"
  | "connect_timeout"
  | "response_timeout"
  | "network_error";

/**
 * responseTimeMs: whole milliseconds from the call to the result, DNS and connecting included.
 * truncated: the body was longer than maxResponseBytes (responseBody is its start).
 */
export type OutboundResult =
  | { ok: true; statusCode: number; responseBody: string; responseTimeMs: number; truncated: boolean }
  | { ok: false; error: OutboundError; message: string; responseTimeMs: number };

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** Headers the client sets itself: a caller's value for these would break framing or pinning. */
const OWN_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection"]);

export class OutboundClient {
  private readonly lookup: LookupFunction;
  private readonly inFlight = new Set<{ abort: () => void; done: Promise<unknown> }>();
  private closed = false;

  constructor(
    private readonly policy: OutboundPolicy,
    opts: { lookup?: LookupFunction } = {},
  ) {
    this.lookup = opts.lookup ?? dns.lookup;
  }

  /** POST `body` with `headers`. Never throws; never follows redirects (a 3xx comes back as it is). */
  post(url: string, body: string, headers: Record<string, string>): Promise<OutboundResult> {
    return this.request("POST", url, body, headers);
  }

  /** GET with `headers`, by the same rules as post (a calendar feed). */
  get(url: string, headers: Record<string, string>): Promise<OutboundResult> {
    return this.request("GET", url, null, headers);
  }

  private request(
    method: "GET" | "POST",
    url: string,
    body: string | null,
    headers: Record<string, string>,
  ): Promise<OutboundResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (this.closed) {
      return Promise.resolve({
        ok: false,
        error: "network_error",
        message: "outbound client is closed",
        responseTimeMs: 0,
      });
    }
    const target = parseTarget(url);
    if (typeof target === "string") {
      return Promise.resolve({ ok: false, error: "invalid_url", message: target, responseTimeMs: 0 });
    }
    const attempt = new Attempt(this.policy, this.lookup, target, method, body, headers, elapsed);
    const entry = { abort: () => attempt.abort(), done: attempt.result };
    this.inFlight.add(entry);
    return attempt.result.finally(() => this.inFlight.delete(entry));
  }

  /** Aborts what is in flight (those calls resolve with network_error) and refuses new calls. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = [...this.inFlight];
    for (const entry of pending) entry.abort();
    await Promise.all(pending.map((entry) => entry.done));
  }
}

/** Save-time check of a webhook or callback URL: null if acceptable, else a message for a 422. */
export function checkTargetUrl(
  url: string,
  policy: Pick<OutboundPolicy, "allowPrivateTargets">,
): string | null {
  const target = parseTarget(url);
  if (typeof target === "string") return target;
  if (target.literal) return vetAddress(target.hostname, policy);
  // Names are resolved and vetted at every delivery; only the one name that is loopback by
  // definition (RFC 6761) is worth refusing now, as an early, clear answer.
  const name = target.hostname.toLowerCase().replace(/\.$/, "");
  if (!policy.allowPrivateTargets && (name === "localhost" || name.endsWith(".localhost"))) {
    return `${target.hostname} is a loopback name; set MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 to allow it`;
  }
  return null;
}

interface Target {
  url: URL;
  /** Without IPv6 brackets. */
  hostname: string;
  literal: boolean;
}

function parseTarget(text: string): Target | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "not a valid URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http(s) URL";
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (hostname === "") return "the URL has no host";
  return { url, hostname, literal: net.isIP(hostname) !== 0 };
}

/** One POST: resolve and vet, connect to a vetted address, send, read the response; settles once. */
class Attempt {
  readonly result: Promise<OutboundResult>;
  private settle!: (result: OutboundResult) => void;
  private settled = false;
  private request: http.ClientRequest | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly policy: OutboundPolicy,
    private readonly lookup: LookupFunction,
    private readonly target: Target,
    private readonly method: "GET" | "POST",
    private readonly body: string | null,
    private readonly headers: Record<string, string>,
    private readonly elapsed: () => number,
  ) {
    this.result = new Promise((resolve) => (this.settle = resolve));
    this.startTimer("connect_timeout", policy.connectTimeoutMs, "no connection");
    void this.run();
  }

  abort(): void {
    this.fail("network_error", "outbound client closed");
  }

  private async run(): Promise<void> {
    const { hostname, literal } = this.target;
    let addresses: LookupAddress[];
    if (literal) {
      addresses = [{ address: hostname, family: net.isIP(hostname) }];
    } else {
      try {
        addresses = await resolveAll(this.lookup, hostname);
      } catch (err) {
        return this.fail("dns_failed", `${hostname}: ${describe(err)}`);
      }
      if (addresses.length === 0) return this.fail("dns_failed", `${hostname}: no addresses`);
    }
    for (const { address } of addresses) {
      const refusal = vetAddress(address, this.policy, literal ? undefined : hostname);
      if (refusal !== null) return this.fail("refused_target", refusal);
    }
    if (!this.settled) this.send(addresses);
  }

  private send(vetted: LookupAddress[]): void {
    const { url, hostname } = this.target;
    const secure = url.protocol === "https:";
    // Node calls this instead of DNS when it connects to a name: it can only answer the vetted list.
    const pinned: LookupFunction = (_name, options, callback) => {
      if (options.all) callback(null, vetted);
      else callback(null, vetted[0]!.address, vetted[0]!.family);
    };
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.headers)) {
      if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value;
    }
    headers.host = url.host;
    if (this.body !== null) headers["content-length"] = String(Buffer.byteLength(this.body));
    headers.connection = "close";
    let request: http.ClientRequest;
    try {
      request = (secure ? https : http).request({
        hostname,
        port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: this.method,
        headers,
        auth: url.username
          ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
          : undefined,
        lookup: pinned,
        agent: false,
      });
    } catch (err) {
      return this.fail("network_error", describe(err)); // e.g. a header value Node refuses
    }
    this.request = request;
    let connected = false;
    request.on("socket", (socket: Socket) => {
      socket.once(secure ? "secureConnect" : "connect", () => {
        const refusal = socket.remoteAddress
          ? vetAddress(socket.remoteAddress, this.policy, this.target.literal ? undefined : hostname)
          : "no remote address";
        if (refusal !== null) return this.fail("refused_target", refusal);
        connected = true;
        this.startTimer("response_timeout", this.policy.responseTimeoutMs, "no complete response");
      });
    });
    request.on("error", (err) => {
      this.fail(connected ? "network_error" : "connect_failed", describe(err));
    });
    request.on("response", (response) => this.read(response));
    request.end(this.body ?? undefined);
  }

  private read(response: http.IncomingMessage): void {
    const limit = this.policy.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = () =>
      this.succeed(
        response.statusCode ?? 0,
        Buffer.concat(chunks).subarray(0, limit).toString("utf8"),
        size > limit,
      );
    response.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) finish(); // enough: the rest of a large body is not waited for
    });
    response.on("end", finish);
    response.on("aborted", () => this.fail("network_error", "the connection closed mid-response"));
    response.on("error", (err) => this.fail("network_error", describe(err)));
  }

  private startTimer(error: OutboundError, ms: number, what: string): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fail(error, `${what} within ${ms} ms`), ms);
  }

  private succeed(statusCode: number, responseBody: string, truncated: boolean): void {
    this.finish({ ok: true, statusCode, responseBody, responseTimeMs: this.elapsed(), truncated });
  }

  private fail(error: OutboundError, message: string): void {
    this.finish({ ok: false, error, message, responseTimeMs: this.elapsed() });
  }

  private finish(result: OutboundResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.request?.destroy();
    this.settle(result);
  }
}

function resolveAll(lookup: LookupFunction, hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true }, (err, address, family) => {
      if (err) reject(err);
      else if (Array.isArray(address)) resolve(address);
      else resolve([{ address, family: family ?? net.isIP(address) }]);
    });
  });
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    if (err instanceof AggregateError && err.errors.length > 0) {
      return err.errors.map(describe).join("; ");
    }
    return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}
