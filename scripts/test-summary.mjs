// Sums vitest JSON reports into the one closing line CI reads: "N passed, N failed".
// Each report (e.g. test-results/postgres.json: the integration suite on PostgreSQL) also gets a
// line of its own, so that a failure shows which run it came from. Every failed test is named
// there too, with the first line of its error (and of its retry's, when that differs): CI keeps only the tail of a run's output, and a
// failure lost above it cannot be told from another. A test that failed and then passed on its retry
// (the end-to-end runs allow one) counts as passed and is named with a "↻" and its first error, so
// that a flaky test stays in sight. Where the Makefile marked the machine's CPU counters before and
// after a run (<report>.cpu: two /proc/stat "cpu" lines), the run's line also says its wall time and
// the CPU the whole machine spent meanwhile, which is what the suite's time budget runs out of.
// Where the reports' folder holds machine.json (scripts/machine-speed.mjs), its line comes first:
// the same suite takes three times as long on some machines as on others.
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";

const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
// Long enough for an assertion that compared two small values (vitest.config.ts lets chai show 300
// characters of each): what the test saw comes first.
const MESSAGE_CHARS = 480;

/** The first non-empty line of a failure message, without colours, cut to fit one line. */
function firstLine(message) {
  const line = (message ?? "")
    .replace(ANSI_ESCAPE, "")
    .split("\n")
    .map((part) => part.trim())
    .find((part) => part.length > 0);
  if (!line) return "(no message)";
  return line.length > MESSAGE_CHARS ? `${line.slice(0, MESSAGE_CHARS)}…` : line;
}

/** Clock ticks per second in /proc/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * " · 195 s, 381 core-s (98 % of 2 cores busy)" from a run's two CPU marks, or "" without them.
 * Busy: user, nice, system, irq and softirq time; the rest of the total is idle, iowait and steal.
 */
function cpuUse(markFile) {
  if (!existsSync(markFile)) return "";
  const marks = readFileSync(markFile, "utf8")
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).slice(1).map(Number));
  if (marks.length !== 2 || marks.some((m) => m.length < 7 || m.some(Number.isNaN))) return "";
  const [before, after] = marks;
  const delta = after.map((value, i) => value - before[i]);
  const [user, nice, system, , , irq, softirq] = delta;
  const busy = user + nice + system + irq + softirq;
  const total = delta.slice(0, 8).reduce((sum, value) => sum + value, 0);
  if (total <= 0) return "";
  const cores = cpus().length;
  const wallSeconds = total / TICKS_PER_SECOND / cores;
  const percent = Math.round((100 * busy) / total);
  return ` · ${Math.round(wallSeconds)} s, ${Math.round(busy / TICKS_PER_SECOND)} core-s (${percent} % of ${cores} cores busy)`;
}

let passed = 0;
let failed = 0;
let missing = 0;
const lines = [];
const failures = [];
const retried = [];
for (const file of process.argv.slice(2)) {
  const name = path.basename(file, ".json");
  if (!existsSync(file)) {
    console.error(`test-summary: no report at ${file} (did the run crash?)`);
    lines.push(`  ${name}: no report`);
    missing += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  let runFailed = 0;
  let runRetried = 0;
  for (const result of report.testResults) {
    const testFile = path.relative(process.cwd(), result.name);
    const failedTests = result.assertionResults.filter((a) => a.status === "failed");
    for (const test of failedTests) {
      const [first, ...later] = test.failureMessages ?? [];
      // A retry that failed differently is a second clue (e.g. the first attempt's leftovers).
      const last = later.at(-1);
      const onRetry =
        last && firstLine(last) !== firstLine(first) ? `; on its retry: ${firstLine(last)}` : "";
      failures.push(`  ✗ ${name} ${testFile} > ${test.fullName}: ${firstLine(first)}${onRetry}`);
    }
    runFailed += failedTests.length;
    const passedOnRetry = result.assertionResults.filter(
      (a) => a.status === "passed" && a.failureMessages?.length,
    );
    for (const test of passedOnRetry)
      retried.push(
        `  ↻ ${name} ${testFile} > ${test.fullName}: passed on retry after ${firstLine(test.failureMessages[0])}`,
      );
    runRetried += passedOnRetry.length;
    // A file that failed without a failing test (it did not load, or a hook threw or timed out)
    // counts as one failure.
    if (result.status === "failed" && failedTests.length === 0) {
      failures.push(`  ✗ ${name} ${testFile} (outside any test): ${firstLine(result.message)}`);
      runFailed += 1;
    }
  }
  const cpu = cpuUse(file.replace(/\.json$/, ".cpu"));
  lines.push(
    `  ${name}: ${report.numPassedTests} passed${runRetried ? ` (${runRetried} on retry)` : ""}, ${runFailed} failed${cpu}`,
  );
  passed += report.numPassedTests;
  failed += runFailed;
}
const machineFile = path.join(path.dirname(process.argv[2] ?? "."), "machine.json");
if (existsSync(machineFile)) lines.unshift(`  ${JSON.parse(readFileSync(machineFile, "utf8")).line}`);
console.log(`\n${[...retried, ...failures, ...lines].join("\n")}`);
console.log(`tests: ${passed} passed, ${failed + missing} failed`);
process.exit(failed + missing > 0 || passed === 0 ? 1 : 0);
