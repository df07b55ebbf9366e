import type { Page } from "playwright";

/**
 * Feeds a reading of the page to Node whenever it changes, driven by the DOM as the PageWatcher's
 * snapshot is: a MutationObserver runs `read` (a self-contained function, serialized with its
 * `hooks`) after each burst of changes and hands its result over only when it differs from the
 * last one. `coalesceMs`: how long a burst of changes is let settle before the page is read (the
 * latency it adds). Answers a function that stops it.
 */
export async function feedFromPage<H, R>(
  page: Page,
  name: string,
  read: (hooks: H) => R,
  hooks: H,
  onReading: (reading: R) => void,
  { coalesceMs = DEFAULT_COALESCE_MS }: { coalesceMs?: number } = {},
): Promise<() => void> {
  const binding = `__meetbotFeed_${name}`;
  let active = true;
  await page.exposeFunction(binding, (json: string) => {
    if (active) onReading(JSON.parse(json) as R);
  });
  const reader = `() => (${read.toString()})(${JSON.stringify(hooks)})`;
  // Compiled code may reference esbuild's __name helper inside serialized functions.
  const script = `var __name = (f) => f; (${observe.toString()})(${JSON.stringify(binding)}, ${reader}, ${coalesceMs});`;
  // This document now, and any the page loads later (a reconnect that reloads it).
  await page.addInitScript({ content: script });
  await page.evaluate(script);
  return () => {
    active = false;
    page.evaluate(`window[${JSON.stringify(`${binding}_stop`)}]?.()`).catch(() => {});
  };
}

/** Short: captions are wanted as they change, and reading them is cheap. */
const DEFAULT_COALESCE_MS = 20;

/** Runs in the page. */
function observe(binding: string, read: () => unknown, coalesceMs: number): void {
  // The page's own document only: a frame's empty reading would look like everything went away.
  if (window.top !== window) return;
  const w = window as unknown as Record<string, unknown>;
  let last = "";
  let scheduled = false;
  const check = () => {
    scheduled = false;
    let json: string;
    try {
      json = JSON.stringify(read());
    } catch {
      return;
    }
    if (json === last) return;
    // Looked up now: in a new document Playwright's binding may come after this script.
    const send = w[binding] as ((json: string) => void) | undefined;
    if (!send) return;
    last = json;
    send(json);
  };
  const observer = new MutationObserver(() => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(check, coalesceMs);
  });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  w[`${binding}_stop`] = () => observer.disconnect();
  check();
}
