import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchTestChromium } from "../helpers/mock-browser.js";
import { deployedBot, registerUser, startTestServer, type TestServer } from "../helpers/server-harness.js";

const run = promisify(execFile);

let server: TestServer;
let browser: Browser;
let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "meetbot-share-"));
  server = await startTestServer();
  browser = await launchTestChromium({ ignoreDefaultArgs: ["--mute-audio"] });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** A real 3-second H.264 + AAC MP4 with its index up front, as a player wants it. */
async function makeMp4(): Promise<Uint8Array> {
  const file = path.join(scratch, "share.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440"],
    ...["-t", "3", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-movflags", "+faststart", file],
  ]);
  return new Uint8Array(await readFile(file));
}

describe("the public share page in Chromium", () => {
  it("plays the recording through the link, and is a 404 once the link is revoked", async () => {
    const user = await registerUser(server.api);
    const { botId, runner } = await deployedBot(server, user, { meetingTitle: "Design review" });
    await runner.status("JOINING_CALL");
    await runner.status("IN_CALL");
    await runner.status("CALL_ENDED", { subCode: "MEETING_ENDED" });
    expect((await runner.upload(await makeMp4(), 3000)).status).toBe(201);
    expect((await runner.status("DONE")).status).toBe(200);
    const share = await server.api.post(`/v1/recordings/${botId}/share`, { token: user.token, body: {} });
    expect(share.status).toBe(201);

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const blocked: string[] = [];
      page.on("console", (msg) => {
        if (msg.type() === "error") blocked.push(msg.text());
      });
      const opened = await page.goto(share.body.url);
      expect(opened?.status()).toBe(200);
      await expect.poll(() => page.locator("h1").textContent()).toBe("Design review");
      const video = page.locator("video");
      // The page has no script of its own: the test presses play, as a viewer would.
      await video.evaluate((v: HTMLVideoElement) => v.play());
      await page.waitForFunction(() => (document.querySelector("video")?.currentTime ?? 0) > 1, null, {
        timeout: 15_000,
      });
      expect(await video.evaluate((v: HTMLVideoElement) => v.error)).toBeNull();
      expect(await video.evaluate((v: HTMLVideoElement) => Math.round(v.duration))).toBe(3);
      expect(blocked).toEqual([]);

      expect((await server.api.delete(`/v1/recordings/${botId}/share`, { token: user.token })).status).toBe(
        204,
      );
      const revoked = await page.goto(share.body.url);
      expect(revoked?.status()).toBe(404);
    } finally {
      await context.close();
    }
  });
});
