import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import type { LogLevel, RunnerSettings } from "../core/index.js";
import type { Reporter } from "./reporter.js";

const PINO_LEVEL_NAMES: Record<number, LogLevel> = { 40: "warn", 50: "error", 60: "error" };

/** The runner's logger before the reporter exists (and the reporter's own, to avoid loops). */
export function baseLogger(botId: number | null, level: RunnerSettings["logLevel"]): Logger {
  return pino({ level, base: { botId } });
}

/**
 * The bot's logger: JSON lines to stdout, and every warn or error line also reported to the
 * control plane as a log event, so GET /v1/bots/{id}/logs shows what went wrong.
 */
export function botLogger(botId: number, level: RunnerSettings["logLevel"], reporter: Reporter): Logger {
  const toControlPlane = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        const line = JSON.parse(chunk.toString()) as { level: number; msg?: string; err?: unknown };
        const level = PINO_LEVEL_NAMES[line.level];
        if (level) {
          const detail = line.err
            ? `: ${typeof line.err === "string" ? line.err : JSON.stringify(line.err)}`
            : "";
          reporter.report({
            type: "log",
            data: { level, message: `${line.msg ?? ""}${detail}`.slice(0, 4000) },
          });
        }
      } catch {
        // not a JSON line; nothing to report
      }
      done();
    },
  });
  return pino(
    { level, base: { botId } },
    pino.multistream([
      { level: "trace", stream: process.stdout },
      { level: "warn", stream: toControlPlane },
    ]),
  );
}
