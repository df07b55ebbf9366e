import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
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

async function deployAndWait(s: NonNullable<typeof stack>) {
  const bot = await s.api.createBot({
    meetingInfo: { platform: "google", meetingUrl: `${s.mock.url}/meet/sta-rtfa-ils?admit=open` },
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
  },
);
