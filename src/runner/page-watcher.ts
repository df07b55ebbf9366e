import { EventEmitter } from "node:events";
import type { Page } from "playwright";
import type { PageSnapshot, Phase, SnapshotHooks } from "../../platforms/adapter.js";
import { StableParticipantIds } from "./participant-ids.js";

/**
 * Turns the adapter's in-page `snapshot()` into a stream of changes, driven by the DOM itself:
 * a MutationObserver recomputes the snapshot on every change and hands it to Node only when it
 * differs. Nothing polls the page from outside, and a change is seen as soon as it renders.
 */
export class PageWatcher extends EventEmitter<{ change: [PageSnapshot] }> {
  current: PageSnapshot = { phase: "loading", participants: [] };
  /** Every reader of the roster (the call's events, speakers, captions) gets the same ids. */
  private readonly ids = new StableParticipantIds();

  static async attach(
    page: Page,
    snapshot: (hooks: SnapshotHooks) => PageSnapshot,
    hooks: SnapshotHooks,
  ): Promise<PageWatcher> {
    const watcher = new PageWatcher();
    await page.exposeFunction("__meetbotSnapshot", (json: string) => watcher.update(JSON.parse(json)));
    // Compiled code may reference esbuild's __name helper inside serialized functions.
    const read = `() => (${snapshot.toString()})(${JSON.stringify(hooks)})`;
    const script = `var __name = (f) => f; (${observe.toString()})(${read});`;
    await page.addInitScript({ content: script });
    return watcher;
  }

  /** A new reading of the page: from the page itself, or from a test standing in for it. */
  update(reading: PageSnapshot): void {
    const next = this.ids.stable(reading);
    this.current = next;
    this.emit("change", next);
  }

  /**
   * Resolves with the first snapshot (the current one included) whose phase is in `phases`;
   * rejects after `timeoutMs` or when `signal` aborts.
   */
  waitForPhase(phases: readonly Phase[], timeoutMs: number, signal?: AbortSignal): Promise<PageSnapshot> {
    return this.waitUntil((snap) => phases.includes(snap.phase), timeoutMs, signal, phases);
  }

  /**
   * Resolves with the first snapshot (the current one included) for which `test` holds; rejects
   * with a PhaseTimeout after `timeoutMs` (naming `wanted`) or when `signal` aborts.
   */
  waitUntil(
    test: (snap: PageSnapshot) => boolean,
    timeoutMs: number,
    signal?: AbortSignal,
    wanted: readonly Phase[] = [],
  ): Promise<PageSnapshot> {
    if (test(this.current)) return Promise.resolve(this.current);
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.off("change", onChange);
        signal?.removeEventListener("abort", onAbort);
      };
      const onChange = (snap: PageSnapshot) => {
        if (!test(snap)) return;
        done();
        resolve(snap);
      };
      const onAbort = () => {
        done();
        reject(signal?.reason ?? new Error("aborted"));
      };
      const timer = setTimeout(() => {
        done();
        reject(new PhaseTimeout(this.current.phase, wanted, timeoutMs));
      }, timeoutMs);
      this.on("change", onChange);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

export class PhaseTimeout extends Error {
  constructor(
    readonly lastPhase: Phase,
    wanted: readonly Phase[],
    timeoutMs: number,
  ) {
    super(`page stayed in phase "${lastPhase}" for ${timeoutMs} ms (waiting for ${wanted.join(" | ")})`);
  }
}

/** Runs in the page. */
function observe(snapshot: () => unknown): void {
  const w = window as unknown as { __meetbotSnapshot: (json: string) => void };
  let last = "";
  let scheduled = false;
  const check = () => {
    scheduled = false;
    let json: string;
    try {
      json = JSON.stringify(snapshot());
    } catch {
      return;
    }
    if (json === last) return;
    last = json;
    w.__meetbotSnapshot(json);
  };
  // Coalesce a burst of mutations (a re-rendered screen) into one check.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(check, 10);
  };
  const start = () => {
    new MutationObserver(schedule).observe(document, {
      subtree: true,
      childList: true,
      attributes: true,
      characterData: true,
    });
    check();
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}
