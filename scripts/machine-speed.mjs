// How fast this machine does what the end-to-end tests do most: fault in fresh memory (every
// Chromium, ffmpeg and runner started), start a process, enter the kernel. Printed by `make test`
// before its runs and kept in test-results/machine.json for the summary, so that a slow run can be
// told from a slow machine. It also decides how many end-to-end files, and tests within a file, run
// at once here. Usage: node scripts/machine-speed.mjs [figures.json] (its fields: the figures,
// e2eAlone and e2eAloneConcurrency, e2eWorkers, e2eConcurrency, and `line`, what it printed).
//
// Why it matters: the sandboxes this project runs in are not all alike. One kind (a
// paravirtualized guest whose page tables the hypervisor shadows, seen 2026-11-29) takes 14-18 µs
// to fault in a page, ~1 µs for a system call and 5 ms to start /bin/true, and there the unit and
// integration tests used 3.6 times the CPU they use on the machines of earlier runs (397 core-s
// against 111). Starting a bot is mostly that work (Chromium alone faults in ~300 MB). Two
// end-to-end files at once then starved each other's bots (run queue 70-80, tests timing out at
// 150 s); one file at a time passed but for the file that starts four video bots at once, whose
// recorders fell seconds behind. One file and three tests at a time: faster (e2e 1825 s against
// 2095), but that file still failed once in `make test`; alone it passed at three and at two.
// One file and two tests passed (1728 s), with a quarter of the CPU idle: most files run their
// tests one after another, and a lone test mostly waits on its scripted meeting. Two files and one
// test at a time kept the CPU 90 % busy (1530 s), but two files that each hold several video bots
// (the leave-on-request call beside the three-platform outage) starved each other's pages: a
// Leave click and a chat message timed out at 10 s. So there the files with many bots at once
// run first, one at a time (two tests at once, as passed), and the rest two files at a time.
import { spawnSync } from "node:child_process";
import { fstatSync, writeFileSync } from "node:fs";

const PAGE_BYTES = 4096;
// Above glibc's largest mmap threshold (32 MB), so each buffer is fresh pages, never reused heap.
const FAULT_BYTES = 64 * 1024 * 1024;
// The least of a few tries: a busy moment only ever adds time.
const TRIES = 3;
const SYSCALLS = 100_000;
// A page fault this slow (µs) marks the shadow-paged kind above; ordinary guests are far below it.
const SLOW_FAULT_US = 5;
// The end-to-end files that hold several bots at once (the matrix's and the drift cells side by
// side, four video bots, three platforms in one outage), and the pause file, whose bot's live
// recognizer must hear every word of a line while it plays (beside another file's bots it misheard
// "report" in the first try of both slow clean-clone runs of 2026-11-29): on a slow machine these
// run on their own.
const BUSY_FILES = [
  ...["platform-matrix", "signed-in-bots", "ui-drift", "meet-bot-lifecycle", "platform-outage"],
  "recording-pause",
];

/** One line for a person: "machine: page fault 0.9 µs, … (ordinary: end-to-end 2 file(s), …)". */
function describe(figures) {
  const rest = `${figures.e2eWorkers} file(s), up to ${figures.e2eConcurrency} test(s) at once`;
  const kind = figures.e2eAlone.length
    ? `slow: end-to-end ${figures.e2eAlone.length} files one at a time, up to ${figures.e2eAloneConcurrency} tests at once, then ${rest}`
    : `ordinary: end-to-end ${rest}`;
  return (
    `machine: page fault ${figures.pageFaultMicros} µs, system call ${figures.systemCallMicros} µs, ` +
    `process start ${figures.processStartMillis} ms (${kind})`
  );
}

/** The least time `work` took over a few tries, in µs. */
function leastMicros(work) {
  let least = Infinity;
  for (let i = 0; i < TRIES; i++) {
    const start = process.hrtime.bigint();
    work();
    least = Math.min(least, Number(process.hrtime.bigint() - start) / 1000);
  }
  return least;
}

/** µs to fault in one fresh page: a large zeroed buffer is mapped lazily, touched once a page. */
function faultMicros() {
  let least = Infinity;
  for (let i = 0; i < TRIES; i++) {
    // A new buffer each try (a touched page faults no more), allocated outside the timed part.
    const bytes = new Uint8Array(FAULT_BYTES);
    const start = process.hrtime.bigint();
    for (let offset = 0; offset < FAULT_BYTES; offset += PAGE_BYTES) bytes[offset] = 1;
    least = Math.min(least, Number(process.hrtime.bigint() - start) / 1000);
  }
  return least / (FAULT_BYTES / PAGE_BYTES);
}

/** µs for one cheap system call, with Node's own small overhead. */
const syscallMicros = () =>
  leastMicros(() => {
    for (let i = 0; i < SYSCALLS; i++) fstatSync(0);
  }) / SYSCALLS;

/** ms to start and reap a process that does nothing. */
const processStartMillis = () => leastMicros(() => spawnSync("true")) / 1000;

const fault = faultMicros();
const slow = fault > SLOW_FAULT_US;
const figures = {
  pageFaultMicros: Number(fault.toFixed(1)),
  systemCallMicros: Number(syscallMicros().toFixed(2)),
  processStartMillis: Number(processStartMillis().toFixed(1)),
  e2eAlone: slow ? BUSY_FILES.map((name) => `test/e2e/${name}.test.ts`) : [],
  e2eAloneConcurrency: 2,
  e2eWorkers: 2,
  e2eConcurrency: slow ? 1 : 6,
};
const line = describe(figures);
const outputFile = process.argv[2];
if (outputFile) writeFileSync(outputFile, `${JSON.stringify({ ...figures, line })}\n`);
console.log(line);
