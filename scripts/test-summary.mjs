// Sums vitest JSON reports into the one closing line CI reads: "N passed, N failed".
import { existsSync, readFileSync } from "node:fs";

let passed = 0;
let failed = 0;
let missing = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.error(`test-summary: no report at ${file} (did the run crash?)`);
    missing += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  // A file that failed to load counts as a failure even though it ran no test.
  failed += report.testResults.filter((r) => r.status === "failed" && r.assertionResults.length === 0).length;
}
console.log(`\ntests: ${passed} passed, ${failed + missing} failed`);
process.exit(failed + missing > 0 || passed === 0 ? 1 : 0);
