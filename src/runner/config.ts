import { readFileSync } from "node:fs";
import { BotConfig } from "../core/index.js";

export class ConfigError extends Error {}

/**
 * Reads the BotConfig from `--config FILE` (`-`: all of stdin) or the BOT_CONFIG environment
 * variable and validates it. A bad config throws a ConfigError listing every bad field, one per
 * line. The launchers use a file or stdin: a config holds secrets (the callback token, a login's
 * session), and an environment variable is readable in /proc, `docker inspect` and a Pod's spec.
 */
export function loadBotConfig(opts: { file?: string; env?: NodeJS.ProcessEnv }): BotConfig {
  const env = opts.env ?? process.env;
  let text: string;
  let source: string;
  if (opts.file) {
    source = opts.file === "-" ? "stdin" : opts.file;
    try {
      // fd 0 read to its end: the launcher writes the config and closes the pipe.
      text = readFileSync(opts.file === "-" ? 0 : opts.file, "utf8");
    } catch (error) {
      throw new ConfigError(`cannot read config from ${source}: ${(error as Error).message}`);
    }
  } else if (env.BOT_CONFIG) {
    source = "BOT_CONFIG";
    text = env.BOT_CONFIG;
  } else {
    throw new ConfigError("no bot config: set BOT_CONFIG to the config's JSON or pass --config FILE");
  }
  return parseBotConfig(text, source);
}

/** Validates a BotConfig given as JSON text; `source` names where it came from in errors. */
export function parseBotConfig(text: string, source: string): BotConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = BotConfig.safeParse(json);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  throw new ConfigError(`invalid bot config in ${source}:\n${lines.join("\n")}`);
}
