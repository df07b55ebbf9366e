import dns from "node:dns/promises";
import net, { type LookupFunction, type Socket } from "node:net";
import { Agent, buildConnector, WebSocket } from "undici";
import { vetAddress } from "../../core/index.js";

/** The longest an opening handshake may take (DNS, TCP, TLS, the upgrade). */
const OPEN_TIMEOUT_MS = 10_000;

/** Why a connection could not be opened; `refused`: the address rule said no (no retry helps). */
export class ConnectRefused extends Error {}

/**
 * Opens the WebSocket to an agent, under the webhooks' address rule (core/net-address.ts): the
 * host name is resolved once here, every address is vetted (loopback and private ones only with
 * the server's MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS, which the BotConfig carries), and the socket
 * can only connect to those vetted addresses (no second lookup a rebinding DNS could answer
 * differently); the connected socket's peer is vetted once more. undici's WebSocket rather than
 * Node's global one: the same client, but it takes a dispatcher (the pinned lookup) and headers
 * (the token). Resolves once open; rejects with ConnectRefused or the network's error.
 */
export async function openAgentSocket(opts: {
  url: string;
  token?: string;
  allowPrivateTargets: boolean;
}): Promise<{ socket: WebSocket; close(): Promise<void> }> {
  const url = new URL(opts.url);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const policy = { allowPrivateTargets: opts.allowPrivateTargets };
  const literal = net.isIP(hostname) !== 0;
  const addresses = literal
    ? [{ address: hostname, family: net.isIP(hostname) }]
    : await dns.lookup(hostname, { all: true });
  if (addresses.length === 0) throw new Error(`${hostname}: no addresses`);
  for (const { address } of addresses) {
    const refusal = vetAddress(address, policy, literal ? undefined : hostname);
    if (refusal !== null) throw new ConnectRefused(refusal);
  }
  const pinned: LookupFunction = (_name, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  const connector = buildConnector({
    lookup: pinned,
    timeout: OPEN_TIMEOUT_MS,
  } as buildConnector.BuildOptions);
  const dispatcher = new Agent({
    connect: (options, callback) =>
      connector(options, (error, socket) => {
        if (error || !socket) return callback(error, null);
        const peer = (socket as Socket).remoteAddress;
        const refusal = peer ? vetAddress(peer, policy, literal ? undefined : hostname) : "no remote address";
        if (refusal === null) return callback(null, socket);
        socket.destroy();
        callback(new ConnectRefused(refusal), null);
      }),
  });
  const socket = new WebSocket(url, {
    dispatcher,
    ...(opts.token ? { headers: { authorization: `Bearer ${opts.token}` } } : {}),
  });
  socket.binaryType = "arraybuffer";
  const close = async () => {
    if (socket.readyState === WebSocket.CONNECTING || socket.readyState === WebSocket.OPEN)
      socket.close(1000);
    await dispatcher.destroy().catch(() => {});
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no WebSocket within ${OPEN_TIMEOUT_MS} ms`)),
        OPEN_TIMEOUT_MS,
      );
      socket.addEventListener("open", () => {
        clearTimeout(timer);
        resolve();
      });
      // The browser WebSocket API hides why a handshake failed (no connection, a refused upgrade,
      // a bad certificate look alike): the close that follows the error gives at least its code.
      socket.addEventListener("close", (event) => {
        clearTimeout(timer);
        reject(new Error(`the WebSocket did not open (no connection or no upgrade; code ${event.code})`));
      });
    });
  } catch (error) {
    await close();
    throw error;
  }
  return { socket, close };
}

/** The URL as logs and events may show it: scheme, host and port; never a path or query (a token may be in them). */
export function shownUrl(url: string): string {
  const { protocol, host } = new URL(url);
  return `${protocol}//${host}`;
}
