import { getCACertificates } from "node:tls";
import { Agent, type Dispatcher, getGlobalDispatcher } from "undici";
import type { BotConfig } from "../core/index.js";

const agents = new Map<string, Agent>();

/**
 * The undici dispatcher for requests to the control plane (callbacks, uploads): the global one
 * unless the BotConfig names certificates to trust, as a server serving HTTPS itself does. Those
 * are trusted besides Node's usual CAs (NODE_EXTRA_CA_CERTS included), each one as an anchor of
 * its own: a self-signed certificate, or a leaf signed by a private CA, is enough.
 */
export function controlPlaneDispatcher(callback: BotConfig["callback"]): Dispatcher {
  if (!callback.ca) return getGlobalDispatcher();
  let agent = agents.get(callback.ca);
  if (!agent) {
    agent = new Agent({
      connect: { ca: [...getCACertificates("default"), callback.ca], allowPartialTrustChain: true },
    });
    agents.set(callback.ca, agent);
  }
  return agent;
}
