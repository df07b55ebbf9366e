import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adapterFor } from "../../platforms/index.js";
import type { BotConfig } from "../core/index.js";
import { BotLifecycle } from "./lifecycle.js";
import { baseLogger, botLogger } from "./logger.js";
import { Reporter } from "./reporter.js";

/**
 * How long a finished runner keeps trying to deliver its last events to an unreachable control
 * plane before it exits. They stay in the spool file either way.
 */
const FINAL_DELIVERY_TIMEOUT_MS = Number(process.env.MEETBOT_FINAL_DELIVERY_TIMEOUT_MS ?? 120_000);

export interface RunOptions {
  /** Use this X display (the developer's own) instead of a private Xvfb. */
  headedDisplay?: string;
}

/**
 * Runs one bot to its end; resolves with the process exit code: 0 for DONE or a requested stop
 * (SIGTERM/SIGINT: the bot left, finalized and reported as asked), 1 for any other FATAL.
 */
export async function runBot(config: BotConfig, opts: RunOptions = {}): Promise<number> {
  const workDir = config.workDir ?? join(tmpdir(), "meetbot", `bot-${config.botId}`);
  await mkdir(workDir, { recursive: true });
  const reporter = new Reporter(config, workDir, baseLogger(config.botId).child({ component: "reporter" }));
  const log = botLogger(config.botId, reporter);
  const lifecycle = new BotLifecycle(
    config,
    workDir,
    adapterFor(config.meetingInfo.platform),
    reporter,
    log,
    opts,
  );

  let stopRequested = false;
  const onSignal = (signal: string) => {
    stopRequested = true;
    log.info({ signal }, "stop requested: leaving the call and finalizing the recording");
    lifecycle.requestStop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  // Heartbeats only when the queue is empty: pending events already prove the bot is alive.
  const heartbeat = setInterval(() => {
    if (reporter.idle) reporter.report({ type: "heartbeat", data: {} });
  }, config.heartbeatInterval);

  const outcome = await lifecycle.run();
  clearInterval(heartbeat);
  const delivered = await reporter.flush(FINAL_DELIVERY_TIMEOUT_MS);
  if (!delivered) log.error({ workDir }, "control plane unreachable: undelivered events remain in the spool");
  reporter.stop();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  return outcome.status === "DONE" || stopRequested ? 0 : 1;
}
