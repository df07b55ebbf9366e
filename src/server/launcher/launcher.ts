import type { BotConfig } from "../../core/index.js";

/**
 * How the control plane starts bot runners. Local child process by default; Docker containers or
 * Kubernetes Jobs implement the same port.
 */
export interface Launcher {
  /** Starts a runner for this bot; rejects if it cannot start. */
  launch(config: BotConfig): Promise<void>;
  /** SIGTERM to that runner if running (POST /v1/bots/{id}/kill, the watchdog). */
  stop(botId: number): Promise<void>;
  /** Releases what the launcher holds besides running bots (e.g. warm runners). */
  close?(): Promise<void>;
}
