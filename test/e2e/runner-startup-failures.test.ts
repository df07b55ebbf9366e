import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startStack } from "../helpers/stack.js";

let stack: Awaited<ReturnType<typeof startStack>> | undefined;
const pathDirs: string[] = [];
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  for (const dir of pathDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A PATH holding the tools a runner uses, except those named: as on a machine missing them. */
function pathWithout(missing: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "meetbot-path-"));
  pathDirs.push(dir);
  for (const tool of ["Xvfb", "pulseaudio", "pactl", "parec", "ffmpeg", "ffprobe", "chromium", "setpriv"]) {
    if (!missing.includes(tool)) symlinkSync(`/usr/bin/${tool}`, join(dir, tool));
  }
  return dir;
}

/**
 * Fault injection, not a stand-in: a Chromium whose first `crashes` starts die of SIGSEGV (a file
 * counts them), after which the real /usr/bin/chromium starts.
 */
function chromiumCrashingFirst(crashes: number): string {
  const dir = mkdtempSync(join(tmpdir(), "meetbot-chromium-"));
  pathDirs.push(dir);
  const program = join(dir, "chromium");
  const starts = join(dir, "starts");
  writeFileSync(
    program,
    `#!/bin/sh\necho >> '${starts}'\nif [ "$(wc -l < '${starts}')" -le ${crashes} ]; then kill -SEGV $$; fi\nexec /usr/bin/chromium "$@"\n`,
    { mode: 0o755 },
  );
  return program;
}

async function deployAndWait(s: NonNullable<typeof stack>, query = "") {
  const bot = await s.api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${s.mock.url}/meet/sta-rtfa-ils?admit=open${query}` },
  });
  await s.api.deploy(bot.id);
  return s.api.waitForStatus(bot.id, ["DONE", "FATAL"], { timeoutMs: 60_000 });
}

describe(
  "a runner whose tools fail to start ends FATAL with a clear subCode, never hangs",
  { timeout: 90_000 },
  () => {
    it("no Xvfb: MEDIA_SETUP_FAILED naming Xvfb", async () => {
      stack = await startStack({ env: { PATH: pathWithout(["Xvfb"]) } });
      const final = await deployAndWait(stack);
      expect(final.deploymentError?.code).toBe("MEDIA_SETUP_FAILED");
      expect(final.deploymentError?.message).toMatch(/Xvfb/);
    });

    it("no PulseAudio: MEDIA_SETUP_FAILED naming PulseAudio", async () => {
      stack = await startStack({ env: { PATH: pathWithout(["pulseaudio"]) } });
      const final = await deployAndWait(stack);
      expect(final.deploymentError?.code).toBe("MEDIA_SETUP_FAILED");
      expect(final.deploymentError?.message).toMatch(/PulseAudio/);
    });

    it("no Chromium: BROWSER_LAUNCH_FAILED", async () => {
      stack = await startStack({ env: { MEETBOT_CHROMIUM_PATH: "/nonexistent/chromium" } });
      const final = await deployAndWait(stack);
      expect(final.deploymentError?.code).toBe("BROWSER_LAUNCH_FAILED");
      expect(final.deploymentError?.message).toMatch(/Chromium failed to start/);
    });

    it("a Chromium that dies of a signal while starting is started once more; twice: BROWSER_LAUNCH_FAILED", async () => {
      stack = await startStack({ env: { MEETBOT_CHROMIUM_PATH: chromiumCrashingFirst(1) } });
      const recovered = await deployAndWait(stack, "&endAfterMs=3000");
      expect(recovered.status, JSON.stringify(recovered.deploymentError)).toBe("DONE");
      expect(await stack.describeBot(recovered.id, 200)).toContain("Chromium died while starting");
      await stack.close();

      stack = await startStack({ env: { MEETBOT_CHROMIUM_PATH: chromiumCrashingFirst(2) } });
      const failed = await deployAndWait(stack);
      expect(failed.deploymentError?.code).toBe("BROWSER_LAUNCH_FAILED");
      expect(failed.deploymentError?.message).toMatch(
        /^Chromium failed to start, again \(the first time it died of SIGSEGV\): /,
      );
    });
  },
);
