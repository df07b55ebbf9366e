// Sums vitest JSON reports into the one closing line CI reads: "N passed, N failed".
// Each report (e.g. test-results/postgres.json: the integration suite on PostgreSQL) also gets a
// line of its own, so that a failure shows which run it came from. Every failed test is named
// there too, with the first line of its error: CI keeps only the tail of a run's output, and a
// failure lost above it cannot be told from another. A test that failed and then passed on its retry
// (the end-to-end runs allow one) counts as passed and is named with a "↻" and its first error, so
// that a flaky test stays in sight.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
const MESSAGE_CHARS = 240;

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
    for (const test of failedTests)
      failures.push(`  ✗ ${name} ${testFile} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`);
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
  lines.push(
    `  ${name}: ${report.numPassedTests} passed${runRetried ? ` (${runRetried} on retry)` : ""}, ${runFailed} failed`,
  );
  passed += report.numPassedTests;
  failed += runFailed;
}
console.log(`\n${[...retried, ...failures, ...lines].join("\n")}`);
console.log(`tests: ${passed} passed, ${failed + missing} failed`);
process.exit(failed + missing > 0 || passed === 0 ? 1 : 0);
