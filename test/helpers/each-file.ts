/**
 * Runs before every test file (vitest's setupFiles), also when files share a worker's modules
 * (`--no-isolate`, as `make test` runs every file): it undoes what one file may leave for the
 * next. Cheap when nothing is loaded yet.
 */
import { beforeEach, vi } from "vitest";
import { forgetTestFailures, noteTestFailed } from "./test-outcome.js";

// The integration fixture's defaults, which a file's top-level `test.override` replaces.
globalThis.renewIntegrationTest?.();
// Environment variables stubbed with vi.stubEnv; timers and globals a file faked.
vi.unstubAllEnvs();
vi.unstubAllGlobals();
vi.useRealTimers();
// A file's helpers keep what explains a failure (stack.ts keeps its data dir).
forgetTestFailures();
beforeEach(({ onTestFailed }) => onTestFailed(noteTestFailed));
