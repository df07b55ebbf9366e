/**
 * Whether a test of the running file has failed (any attempt, a retried one too), as the setup
 * file (each-file.ts) hears it: helpers that clean up after a file keep what explains a failure.
 * Outside vitest (the benches) nothing ever fails here.
 */
let failed = false;

export function noteTestFailed(): void {
  failed = true;
}

export function forgetTestFailures(): void {
  failed = false;
}

export function aTestFailed(): boolean {
  return failed;
}
