import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { type PlatformName, mockMeeting } from "../helpers/mock-meetings.js";
import { commandOutcome, eventually, startStack } from "../helpers/stack.js";

/**
 * The bot's camera with real bots in real Chromium against the mock pages of all
 * three platforms, which see the bot's camera as a real meeting does (the colour it shows): a bot
 * created with output.image joins with its camera on, showing that picture; POST /output-image
 * changes the picture; DELETE turns the camera off; POST turns it on again (the page asks for a
 * camera again, as real pages do once they let theirs go).
 */
let stack: Awaited<ReturnType<typeof startStack>>;
let dir: string;
const pictures: Record<"red" | "green", Buffer> = {} as Record<"red" | "green", Buffer>;
beforeAll(async () => {
  stack = await startStack();
  dir = await mkdtemp(join(tmpdir(), "meetbot-picture-"));
  for (const colour of ["red", "green"] as const) {
    const file = join(dir, `${colour}.png`);
    const c = colour === "red" ? "0xff0000" : "0x00ff00";
    execFileSync("ffmpeg", [
      "-y",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      `color=c=${c}:s=640x360`,
      "-frames:v",
      "1",
      file,
    ]);
    pictures[colour] = await readFile(file);
  }
});
afterAll(async () => {
  await stack?.close();
  await rm(dir, { recursive: true, force: true });
});

/** One meeting per platform and attempt (a retried test's first bot may still be in its call). */
const meeting = (platform: PlatformName, attempt: number) =>
  mockMeeting(stack.mock.url, platform, "pic", attempt);

interface Camera {
  on: boolean;
  color: { r: number; g: number; b: number } | null;
  changes: Array<{ at: string; on: boolean }>;
}

const cameraOf = async (platform: PlatformName, id: string) =>
  ((await stack.control.state(platform, id)) as { attendees: Array<{ camera: Camera }> }).attendees[0]
    ?.camera;

/**
 * Waits until the meeting sees the bot's camera as `check` wants; answers what it saw. On a timeout
 * the error says what the meeting last saw and where the bot stands.
 */
const seen = async (
  platform: PlatformName,
  id: string,
  botId: number,
  what: string,
  check: (camera: Camera) => boolean,
) => {
  let last: Camera | undefined;
  try {
    return await eventually(
      async () => {
        last = await cameraOf(platform, id);
        return last && check(last) ? last : undefined;
      },
      what,
      20_000,
    );
  } catch (error) {
    const camera = last ? JSON.stringify({ on: last.on, color: last.color }) : "no attendee";
    throw new Error(
      `${(error as Error).message}; the meeting saw ${camera}; ${await stack.describeBot(botId)}`,
      { cause: error },
    );
  }
};

const isRed = (c: Camera) => c.on && c.color !== null && c.color.r > 200 && c.color.g < 60 && c.color.b < 60;
const isGreen = (c: Camera) =>
  c.on && c.color !== null && c.color.g > 200 && c.color.r < 60 && c.color.b < 60;

const outcomeOf = (botId: number, commandId: number) => commandOutcome(stack.api, botId, commandId, 30_000);

// One bot at a time: each paints and sends a camera, besides its recording.
describe.each(["google", "zoom", "teams"] as const)("on %s", { timeout: 120_000 }, (platform) => {
  it("joins showing output.image, shows another picture on POST, turns the camera off on DELETE and on again", async ({
    expect,
    task,
  }) => {
    const { id, meetingInfo } = meeting(platform, task.result?.retryCount ?? 0);
    await stack.control.configure(platform, id, { admit: "open", participants: 1, media: "silent" });
    const image = `data:image/png;base64,${pictures.red.toString("base64")}`;
    const bot = await stack.api.createBot({ meetingInfo, botDisplayName: "Picture Bot", output: { image } });
    await stack.api.deploy(bot.id);

    // On from the admission (the pre-join kept it on), showing the picture. A loaded machine may take
    // a while to join, so the picture's clock starts in the call.
    await stack.api.waitForStatus(bot.id, ["IN_CALL", "DONE", "FATAL"], { timeoutMs: 90_000 });
    const red = await seen(platform, id, bot.id, "the red picture", isRed);
    expect(red.changes[0]?.on).toBe(true);

    const shown = await outcomeOf(
      bot.id,
      (await stack.api.showImage(bot.id, pictures.green, "image/png")).commandId,
    );
    expect(shown, JSON.stringify(shown.error)).toMatchObject({
      status: "done",
      result: { shown: true, width: 640, height: 360 },
    });
    await seen(platform, id, bot.id, "the green picture", isGreen);

    const hidden = await outcomeOf(bot.id, (await stack.api.hideImage(bot.id)).commandId);
    expect(hidden, JSON.stringify(hidden.error)).toMatchObject({ status: "done", result: { wasOn: true } });
    const off = await seen(platform, id, bot.id, "the camera off", (c) => !c.on && c.color === null);
    expect(off.changes.map((c) => c.on)).toEqual([true, false]);

    // On again: the page, which let its camera go, asks for one again and gets the picture.
    const again = await outcomeOf(
      bot.id,
      (await stack.api.showImage(bot.id, pictures.red, "image/png")).commandId,
    );
    expect(again, JSON.stringify(again.error)).toMatchObject({ status: "done" });
    const back = await seen(platform, id, bot.id, "the red picture again", isRed);
    expect(back.changes.map((c) => c.on)).toEqual([true, false, true]);

    await stack.api.leave(bot.id);
  });
});
