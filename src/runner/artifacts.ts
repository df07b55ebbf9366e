import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { BotBrowser } from "./browser.js";
import type { SavedArtifact } from "./ports.js";

/**
 * A screenshot, the page's HTML and the Playwright trace, so a failure can be understood after
 * the fact: kept in `dir`; returns those that could be saved (the lifecycle uploads them).
 */
export async function saveFailureArtifacts(
  browser: BotBrowser,
  dir: string,
  log: Logger,
  opts: { trace: boolean } = { trace: true },
): Promise<SavedArtifact[]> {
  await mkdir(dir, { recursive: true });
  const saved: SavedArtifact[] = [];
  const keep = async (name: string, write: (path: string) => Promise<unknown>) => {
    const path = join(dir, name);
    try {
      await write(path);
      saved.push({ name, path });
    } catch (error) {
      log.warn({ err: (error as Error).message, artifact: name }, "could not save a failure artifact");
    }
  };
  const { page, context } = browser;
  if (!page.isClosed()) {
    await keep("failure.png", (path) => page.screenshot({ path, timeout: 5_000 }));
    await keep("failure.html", async (path) => writeFile(path, await page.content()));
  }
  // No trace unless one was started: a bot with a secret in its browser never traces.
  if (opts.trace) await keep("trace.zip", (path) => context.tracing.stop({ path }));
  return saved;
}
