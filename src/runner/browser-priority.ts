import { readdirSync, readFileSync, writeFileSync } from "node:fs";

/**
 * The niceness of the bot's Chromium as a whole. On a machine shared by several bots, whoever
 * waits for a core loses something: ffmpeg's screen grab, a frame (it is timed by the wall clock,
 * and a late grab lands in the slot of the next); Chromium, only smoothness (a late frame is drawn
 * late, and the grab shows the previous one a little longer). So Chromium yields: at nice 5 it
 * weighs a third of a normal process when the cores are all busy, and the same as ever when they
 * are not. Its sound survives the wait: the call sink takes it in 100 ms blocks (media-env.ts). Raising a
 * priority needs privileges; lowering one does not, which is why it is Chromium that moves.
 *
 * Per-thread niceness would not hold: Chromium sets its own threads' niceness as their work
 * changes (its thread pool's threads return to 0). Playwright starts Chromium in a session of its
 * own, which Linux schedules as one group (autogroup) whose niceness Chromium never touches, and
 * that is what this sets. Autogroups apply outside control groups only: in a container per bot,
 * the container's CPU share is what separates bots.
 */
export const BROWSER_NICENESS = 5;

/**
 * Sets BROWSER_NICENESS on the scheduling group of the Chromium whose browser process is a child
 * of this process. False where that cannot be done (no autogroups: another kernel or platform).
 */
export function lowerBrowserPriority(): boolean {
  const browser = childProcesses(process.pid).find((pid) => isChromium(pid));
  if (browser === undefined) return false;
  try {
    writeFileSync(`/proc/${browser}/autogroup`, String(BROWSER_NICENESS));
    return true;
  } catch {
    return false;
  }
}

function isChromium(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--remote-debugging-pipe");
  } catch {
    return false;
  }
}

function childProcesses(parent: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name, which may hold spaces: state, then the parent's pid.
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === parent ? [Number(entry)] : [];
    } catch {
      return []; // the process ended meanwhile
    }
  });
}
