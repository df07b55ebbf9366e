import { readFileSync } from "node:fs";
import { NOTES_SCRIPT } from "/work/main/test/helpers/meeting-notes.js";
import { startStack } from "/work/main/test/helpers/stack.js";
import { processTree } from "/work/main/bench/process-tree.js";

const VIDEO = process.env.P_VIDEO !== "0";
const PLATFORM = process.env.P_PLATFORM ?? "google";
function stat(pid: number) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch { return 0; }
}
function label(pid: number) {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const exe = cmd[0]!.split("/").pop();
    const type = cmd.find((a) => a.startsWith("--type="))?.slice(7);
    const sub = cmd.find((a) => a.startsWith("--utility-sub-type="))?.slice(19);
    return `${exe}${type ? ":" + type : ""}${sub ? ":" + sub.split(".").pop() : ""}`;
  } catch { return "?"; }
}
function pss(pid: number) {
  try { return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))![1]) / 1024; } catch { return 0; }
}
const stack = await startStack();
const id = "prf-abcd-xyz";
const script = [...NOTES_SCRIPT, ...NOTES_SCRIPT, ...NOTES_SCRIPT];
await stack.control.configure("google", id, { admit: "open", participants: Number(process.env.P_PARTICIPANTS ?? 2), script, scriptStartAfterMs: 2000, endAfterScript: true });
const bot = await stack.api.createBot({ meetingInfo: { platform: "google", meetingUrl: `${stack.mock.url}/meet/${id}` }, botDisplayName: "Prof", ...(VIDEO ? {} : { recording: { video: false } }) });
await stack.api.deploy(bot.id);
await stack.api.waitForStatus(bot.id, ["IN_CALL"], { timeoutMs: 60000 });
await new Promise((r) => setTimeout(r, 3000));
const root = stack.launcher.pid(bot.id)!;
console.log("ROOT", root);
const t0 = new Map(processTree(root).map((p) => [p, stat(p)]));
const S = Number(process.env.P_SECONDS ?? 15);
await new Promise((r) => setTimeout(r, S * 1000));
let total = 0, totalPss = 0;
const rows = [];
for (const p of processTree(root)) {
  const c = (stat(p) - (t0.get(p) ?? stat(p))) / 100 / S; total += c; const m = pss(p); totalPss += m;
  rows.push(`${label(p).padEnd(40)} pid ${p} cores ${c.toFixed(3)} pss ${m.toFixed(0)}`);
}
console.log(rows.join("\n"));
console.log(`TOTAL cores ${total.toFixed(3)} pss ${totalPss.toFixed(0)}`);
if (process.env.P_HOLD) await new Promise((r) => setTimeout(r, Number(process.env.P_HOLD) * 1000));
await stack.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 180000 }).catch(() => {});
const b = await stack.api.bot(bot.id);
console.log("status", b.status, "recording", JSON.stringify(b.recording));
await stack.close();
