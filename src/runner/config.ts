import { readFileSync } from "node:fs";
import { BotConfig } from "../core/index.js";

export class ConfigError extends Error {}

/**
 * Reads the BotConfig from `--config FILE` or the BOT_CONFIG environment variable and validates
 * it. A bad config throws a ConfigError listing every bad field, one per line.
 */
export function loadBotConfig(opts: { file?: string; env?: NodeJS.ProcessEnv }): BotConfig {
  const env = opts.env ?? process.env;
  let text: string;
  let source: string;
  if (opts.file) {
    source = opts.file;
    try {
      text = readFileSync(opts.file, "utf8");
    } catch (error) {
      throw new ConfigError(`cannot read config file ${opts.file}: ${(error as Error).message}`);
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
