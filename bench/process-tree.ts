import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** pid plus all its descendants, from /proc. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (!stat) continue;
    const list = children.get(stat.ppid) ?? [];
    list.push(Number(entry));
    children.set(stat.ppid, list);
  }
  const tree: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    tree.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function readStat(pid: number): { name: string; ppid: number; cpuTicks: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may contain spaces and parentheses; fields start after the last ')'.
    const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { name, ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

/** Proportional set size of one process in bytes (shared pages split among their users). */
function pss(pid: number): number {
  try {
    const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Samples a process tree's CPU (in cores) and PSS (bytes) for `durationMs`, once a second.
 * CPU is taken from the difference of consumed ticks between the first and last sample.
 */
export async function sampleTree(
  root: number,
  durationMs: number,
): Promise<{
  cores: number;
  pssBytes: number;
  processes: number;
  pssByName: Record<string, number>;
  /** Cores by process name, over the processes alive at both ends of the window. */
  coresByName: Record<string, number>;
}> {
  const ticksByPid = () => new Map(processTree(root).map((pid) => [pid, readStat(pid)] as const));
  const ticks = () => processTree(root).reduce((sum, pid) => sum + (readStat(pid)?.cpuTicks ?? 0), 0);
  const first = ticksByPid();
  const startTicks = ticks();
  const started = Date.now();
  const pssSamples: number[] = [];
  let processes = 0;
  let pssByName: Record<string, number> = {};
  while (Date.now() - started < durationMs) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const tree = processTree(root);
    processes = tree.length;
    pssByName = {};
    for (const pid of tree) {
      const name = readStat(pid)?.name ?? "?";
      pssByName[name] = (pssByName[name] ?? 0) + pss(pid);
    }
    pssSamples.push(Object.values(pssByName).reduce((a, b) => a + b, 0));
  }
  const seconds = (Date.now() - started) / 1000;
  const cores = (ticks() - startTicks) / CLOCK_TICKS / seconds;
  const coresByName: Record<string, number> = {};
  for (const [pid, stat] of ticksByPid()) {
    const before = first.get(pid);
    if (!stat || !before) continue;
    coresByName[stat.name] =
      (coresByName[stat.name] ?? 0) + (stat.cpuTicks - before.cpuTicks) / CLOCK_TICKS / seconds;
  }
  const pssBytes = pssSamples.reduce((a, b) => a + b, 0) / Math.max(1, pssSamples.length);
  return { cores, pssBytes, processes, pssByName, coresByName };
}
