import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { BotConfig } from "../core/index.js";
import type { BotBrowser } from "./browser.js";
import { uploadArtifact } from "./upload.js";

/**
 * A screenshot, the page's HTML and the Playwright trace, so a failure can be understood after
 * the fact: kept in `dir` and uploaded; returns the names the control plane has.
 */
export async function keepFailureArtifacts(
  browser: BotBrowser,
  dir: string,
  config: Pick<BotConfig, "botId" | "upload" | "callback">,
  log: Logger,
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const kept: Array<[string, string]> = [];
  const keep = async (name: string, write: (path: string) => Promise<unknown>) => {
    const path = join(dir, name);
    try {
      await write(path);
      kept.push([name, path]);
    } catch (error) {
      log.warn({ err: (error as Error).message, artifact: name }, "could not save a failure artifact");
    }
  };
  const { page, context } = browser;
  if (!page.isClosed()) {
    await keep("failure.png", (path) => page.screenshot({ path, timeout: 5_000 }));
    await keep("failure.html", async (path) => writeFile(path, await page.content()));
  }
  await keep("trace.zip", (path) => context.tracing.stop({ path }));
  const uploaded: string[] = [];
  for (const [name, path] of kept) {
    try {
      await uploadArtifact(config, name, path, log);
      uploaded.push(name);
    } catch (error) {
      log.warn({ err: (error as Error).message, artifact: path }, "failure artifact kept locally only");
    }
  }
  return uploaded;
}
