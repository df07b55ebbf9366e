import type { BotConfig, SubCode } from "../../core/index.js";

/**
 * How the control plane starts bot runners. Local child process by default; Docker containers or
 * Kubernetes Jobs implement the same port.
 */
export interface Launcher {
  /**
   * Starts a runner for this bot; rejects if it cannot start. With `config.accountCheck` it is an
   * account check's runner: `botId` is then the check's id, which may equal a running bot's, so
   * the launcher keeps it apart from bots' runners (stop, clean-up and failure reports never
   * reach it); it exits once it has reported.
   */
  launch(config: BotConfig): Promise<void>;
  /** SIGTERM to that runner if running (POST /v1/bots/{id}/kill, the watchdog). */
  stop(botId: number): Promise<void>;
  /**
   * Called once by the server that owns this launcher, before it serves: a launcher whose runners
   * outlive the server (containers, Jobs) re-adopts the running bots' runners, removes those of
   * bots that ended, and starts watching for runners that cannot run.
   */
  attach?(host: LauncherHost): Promise<void>;
  /** Releases what the launcher holds besides running bots (e.g. warm runners, watches). */
  close?(): Promise<void>;
}

/** What the control plane offers a launcher that watches its runners from outside. */
export interface LauncherHost {
  /**
   * The bot's runner cannot run or was ended from outside (its image cannot be pulled, it ran out
   * of memory, it was evicted, it could not be scheduled): the bot becomes FATAL with `subCode`,
   * unless it has already ended. Answers whether the bot was failed by this call.
   */
  runnerFailed(botId: number, subCode: SubCode, message: string): Promise<boolean>;
  /** The bots whose runner should be running now (launched and not ended). */
  runningBotIds(): Promise<number[]>;
  /** The server's log, for what the launcher sees happen to runners outside a request. */
  log?: LauncherLog;
}

export interface LauncherLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}
