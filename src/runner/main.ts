import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { adapterFor } from "../../platforms/index.js";
import { type BotConfig, type RunnerSettings, screenOf } from "../core/index.js";
import { CommandChannel } from "./commands.js";
import { BotLifecycle } from "./lifecycle.js";
import { livePorts } from "./live-ports.js";
import { baseLogger, botLogger } from "./logger.js";
import { ConfigError, parseBotConfig } from "./config.js";
import { Reporter } from "./reporter.js";
import { prepareStage, type Stage } from "./stage.js";
import { reportAccountCheck } from "./upload.js";

/** How long a finished bot still waits for the command it is running to end (and report). */
const COMMANDS_GRACE_MS = 5000;

export interface RunOptions {
  /** Use this X display (the developer's own) instead of a private Xvfb. */
  headedDisplay?: string;
  /** A stage a warm runner prepared; the bot makes its own without one. */
  stage?: Stage;
}

/**
 * Runs one bot to its end; resolves with the process exit code: 0 for DONE or a requested stop
 * (SIGTERM/SIGINT: the bot left, finalized and reported as asked), 1 for any other FATAL.
 */
export async function runBot(config: BotConfig, opts: RunOptions = {}): Promise<number> {
  if (config.accountCheck) return runAccountCheck(config, opts);
  const workDir = config.workDir ?? join(tmpdir(), "meetbot", `bot-${config.botId}`);
  await mkdir(workDir, { recursive: true });
  const reporter = new Reporter(
    config,
    workDir,
    baseLogger(config.botId, config.logLevel).child({ component: "reporter" }),
  );
  const log = botLogger(config.botId, config.logLevel, reporter);
  const lifecycle = new BotLifecycle(
    config,
    workDir,
    adapterFor(config.meetingInfo.platform),
    livePorts({ config, reporter, log, workDir, ...opts }),
    log,
  );

  const stopCarryingOn = carryOnAfterStrayRejections(log);
  let stopRequested = false;
  const onSignal = (signal: string) => {
    stopRequested = true;
    log.info({ signal }, "stop requested: leaving the call and finalizing the recording");
    lifecycle.requestStop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  reporter.onEndedByServer((why) => {
    stopRequested = true;
    log.warn({ why }, "stopped by the control plane: leaving the call and finalizing the recording");
    lifecycle.requestStop();
  });
  // Commands from the control plane (leave, ...): a long poll the runner opens itself.
  const commands = new CommandChannel(
    config,
    (command) => lifecycle.handleCommand(command),
    reporter,
    log.child({ component: "commands" }),
  );
  commands.start();
  // Heartbeats only when the queue is empty: pending events already prove the bot is alive.
  const heartbeat = setInterval(() => {
    if (reporter.idle) reporter.report({ type: "heartbeat", data: {} });
  }, config.heartbeatInterval);

  const outcome = await lifecycle.run();
  clearInterval(heartbeat);
  await commands.stop(COMMANDS_GRACE_MS);
  const delivered = await reporter.flush(config.finalDeliveryTimeout);
  if (!delivered) log.error({ workDir }, "control plane unreachable: undelivered events remain in the spool");
  reporter.stop();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  stopCarryingOn();
  return outcome.status === "DONE" || stopRequested ? 0 : 1;
}

/**
 * A promise that fails with nobody to handle it is a bug, but a bot in a call has a recording to
 * finish: the runner logs it (the control plane gets the line too) and carries on, where Node's
 * default would end the process with the recording unfinalized and the bot left IN_CALL (a
 * runner once died so of a chat feed that failed with its browser). Answers the undo.
 */
export function carryOnAfterStrayRejections(log: Logger): () => void {
  const onRejection = (reason: unknown) => {
    const err = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
    log.error({ err }, "a failed promise nobody handled (a bug); the bot carries on");
  };
  process.on("unhandledRejection", onRejection);
  return () => process.off("unhandledRejection", onRejection);
}

/**
 * An account check (BotConfig.accountCheck): opens the meeting signed in, reports whether the
 * pre-join shows the account to the check's resultUrl, and exits: 0 once the answer (signed in or
 * not) was taken, 1 when the check could not tell or the report did not get through. No bot
 * events, no recording; the session is in no log line.
 */
export async function runAccountCheck(config: BotConfig, opts: RunOptions = {}): Promise<number> {
  const workDir = config.workDir ?? join(tmpdir(), "meetbot", `account-check-${config.botId}`);
  await mkdir(workDir, { recursive: true });
  const log = baseLogger(config.botId, config.logLevel).child({ accountCheck: config.accountCheck?.checkId });
  const reporter = { report: () => 0 };
  const lifecycle = new BotLifecycle(
    config,
    workDir,
    adapterFor(config.meetingInfo.platform),
    livePorts({ config, reporter, log, workDir, ...opts }),
    log,
  );
  const onSignal = () => lifecycle.requestStop();
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const report = await lifecycle.check();
    const taken = await reportAccountCheck(config, report, log);
    log.info(
      { signedIn: report.signedIn, failed: report.failure !== undefined, taken },
      "account check done",
    );
    return taken && report.failure === undefined ? 0 : 1;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}

/**
 * A warm runner: it prepares a stage (display, sound, a launched browser) before it knows its
 * bot, then reads the BotConfig as one JSON line on stdin. A launcher that keeps one ready
 * saves a deploy the process start, the imports and the browser launch: most of the time to
 * join. It starts with the settings the server puts in every BotConfig (browser, log level),
 * given as flags; a config for another recording size or browser gets a fresh stage. stdin
 * closing first, or SIGTERM, ends the runner quietly.
 */
export async function runWarm(opts: {
  width: number;
  height: number;
  executablePath: string;
  logLevel: RunnerSettings["logLevel"];
  headedDisplay?: string;
}): Promise<number> {
  const log = baseLogger(null, opts.logLevel).child({ warm: true });
  const stage = await prepareStage(opts, log);
  log.info("warm: ready, waiting for a bot config on stdin");
  const line = await Promise.race([readLine(process.stdin), untilSignal()]);
  if (line === null) {
    log.info("warm: no bot came (stdin closed or stop requested); exiting");
    await stage.close();
    return 0;
  }
  let config: BotConfig;
  try {
    config = parseBotConfig(line, "stdin");
  } catch (error) {
    await stage.close();
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`meetbot run --warm: ${error.message}\n`);
    return 2;
  }
  const screen = screenOf(config.recording);
  const fits =
    screen.width === stage.width &&
    screen.height === stage.height &&
    config.recording.video === stage.video &&
    (config.audioStream !== undefined) === stage.promptMicrophone &&
    config.browser.executablePath === stage.executablePath;
  if (!fits) await stage.close();
  return runBot(config, {
    ...(opts.headedDisplay ? { headedDisplay: opts.headedDisplay } : {}),
    ...(fits ? { stage } : {}),
  });
}

/** The first line of a stream, or null if it ends without one. */
function readLine(stream: NodeJS.ReadableStream): Promise<string | null> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      const end = text.indexOf("\n");
      if (end < 0) return;
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.pause();
      resolve(text.slice(0, end));
    };
    const onEnd = () => resolve(text.trim() ? text : null);
    stream.on("data", onData);
    stream.once("end", onEnd);
  });
}

function untilSignal(): Promise<null> {
  return new Promise((resolve) => {
    process.once("SIGTERM", () => resolve(null));
    process.once("SIGINT", () => resolve(null));
  });
}
