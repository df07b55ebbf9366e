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
 * Fault injection, not a stand-in: a Chromium that dies of SIGSEGV at each of its next starts that
 * `crashNext(n)` asked for (a file counts them down), and otherwise is the real /usr/bin/chromium.
 */
function crashingChromium(): { program: string; crashNext(starts: number): void } {
  const dir = mkdtempSync(join(tmpdir(), "meetbot-chromium-"));
  pathDirs.push(dir);
  const program = join(dir, "chromium");
  const crashes = join(dir, "crashes");
  writeFileSync(crashes, "0\n");
  writeFileSync(
    program,
    `#!/bin/sh\nleft=$(cat '${crashes}')\nif [ "$left" -gt 0 ]; then echo $((left - 1)) > '${crashes}'; kill -SEGV $$; fi\nexec /usr/bin/chromium "$@"\n`,
    { mode: 0o755 },
  );
  return { program, crashNext: (starts) => writeFileSync(crashes, `${starts}\n`) };
}

async function deployAndWait(s: NonNullable<typeof stack>, query = "") {
  const bot = await s.api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${s.mock.url}/meet/sta-rtfa-ils?admit=open${query}` },
    // What is under test is how the runner starts; a screen recording would only cost CPU.
    recording: { video: false },
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
      const chromium = crashingChromium();
      stack = await startStack({ env: { MEETBOT_CHROMIUM_PATH: chromium.program } });
      chromium.crashNext(1);
      const recovered = await deployAndWait(stack, "&endAfterMs=3000");
      expect(recovered.status, JSON.stringify(recovered.deploymentError)).toBe("DONE");
      expect(await stack.describeBot(recovered.id, 200)).toContain("Chromium died while starting");

      chromium.crashNext(2);
      const failed = await deployAndWait(stack);
      expect(failed.deploymentError?.code).toBe("BROWSER_LAUNCH_FAILED");
      expect(failed.deploymentError?.message).toMatch(
        /^Chromium failed to start, again \(the first time it died of SIGSEGV\): /,
      );
    });
  },
);
