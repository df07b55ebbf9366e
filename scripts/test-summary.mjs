// Sums vitest JSON reports into the one closing line CI reads: "N passed, N failed".
// Each report (e.g. test-results/postgres.json: the integration suite on PostgreSQL) also gets a
// line of its own, so that a failure shows which run it came from.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

let passed = 0;
let failed = 0;
let missing = 0;
const lines = [];
for (const file of process.argv.slice(2)) {
  const name = path.basename(file, ".json");
  if (!existsSync(file)) {
    console.error(`test-summary: no report at ${file} (did the run crash?)`);
    lines.push(`  ${name}: no report`);
    missing += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  // A file that failed without a failing test (it did not load, or a hook threw or timed out)
  // counts as one failure.
  const failedOutsideTests = report.testResults.filter(
    (r) => r.status === "failed" && !r.assertionResults.some((a) => a.status === "failed"),
  );
  const runFailed = report.numFailedTests + failedOutsideTests.length;
  lines.push(`  ${name}: ${report.numPassedTests} passed, ${runFailed} failed`);
  passed += report.numPassedTests;
  failed += runFailed;
}
console.log(`\n${lines.join("\n")}`);
console.log(`tests: ${passed} passed, ${failed + missing} failed`);
process.exit(failed + missing > 0 || passed === 0 ? 1 : 0);
