import type { Logger } from "pino";
import type { Page } from "playwright";
import { setCamera, toggleOn } from "../../../platforms/live-actions.js";
import type { CameraHooks, LiveNote } from "../../../platforms/live.js";
import { ShowImagePayload } from "../../core/index.js";
import { CommandRefusal } from "../commands.js";

export interface BotCameraContext {
  page: Page;
  /** The platform's camera toggle in the call; null when the adapter has none. */
  hooks: CameraHooks | null;
  /** What the page's camera paints (page-camera.ts through the stage). */
  picture: { show(png: Buffer): Promise<void>; clear(): Promise<void> };
  /** Fetches a picture the server made (core OutputImage.imageId): the PNG's bytes. */
  fetchImage(imageId: string): Promise<Buffer>;
  log: Logger;
  note: LiveNote;
}

/**
 * The bot's camera in the call: a show_image command paints its picture on the page's camera and
 * turns the platform's camera on; hide_image turns it off, then lets the picture go (nobody sees
 * the black). Commands of the camera run one at a time in order (their command lane). The bot
 * option output.image is the same picture shown from the join on (`ensureOn` once in the call,
 * in case the pre-join left the camera off). No events: each command's result says what came of
 * it.
 */
export class BotCamera {
  private ended = false;

  constructor(private readonly ctx: BotCameraContext) {}

  /** The show_image command. Throws a CommandRefusal: CAMERA_UNAVAILABLE, NOT_IN_CALL, COMMAND_FAILED. */
  async show(rawPayload: Record<string, unknown>): Promise<{ shown: true; width: number; height: number }> {
    const parsed = ShowImagePayload.safeParse(rawPayload);
    if (!parsed.success)
      throw new CommandRefusal("COMMAND_FAILED", `a bad show_image payload: ${parsed.error.message}`);
    const { imageId, width, height } = parsed.data;
    this.refuseIfEnded();
    const hooks = this.requireHooks();
    const png = await this.ctx.fetchImage(imageId);
    this.refuseIfEnded();
    // The picture first: the camera never shows the black before it.
    await this.ctx.picture.show(png);
    await this.turn(hooks, true);
    this.ctx.log.info({ imageId, width, height }, "picture shown");
    return { shown: true, width, height };
  }

  /** The hide_image command: the camera off. Answers whether it was on. */
  async hide(): Promise<{ wasOn: boolean }> {
    this.refuseIfEnded();
    const hooks = this.requireHooks();
    const wasOn = (await toggleOn(this.ctx.page, hooks)) === true;
    await this.turn(hooks, false);
    await this.ctx.picture.clear();
    this.ctx.log.info({ wasOn }, "camera turned off");
    return { wasOn };
  }

  /**
   * The bot joined showing its output.image: the camera is on (the pre-join turned it on; if the
   * page did not take that, the call's toggle does). Never throws: a bot that cannot show its
   * picture still attends; the log says why.
   */
  async ensureOn(): Promise<void> {
    if (!this.ctx.hooks) {
      this.ctx.log.warn("the call has no camera toggle: the bot's picture is not shown");
      return;
    }
    await setCamera(this.ctx.page, this.ctx.hooks, true, this.ctx.note).catch((error: Error) =>
      this.ctx.log.warn({ err: error.message }, "could not turn the camera on for the bot's picture"),
    );
  }

  /** The call is over: later commands are refused NOT_IN_CALL. */
  end(): void {
    this.ended = true;
  }

  private refuseIfEnded(): void {
    if (this.ended) throw new CommandRefusal("NOT_IN_CALL", "the call is over");
  }

  private requireHooks(): CameraHooks {
    if (!this.ctx.hooks)
      throw new CommandRefusal("CAMERA_UNAVAILABLE", "this platform's call has no camera toggle");
    return this.ctx.hooks;
  }

  private async turn(hooks: CameraHooks, on: boolean): Promise<void> {
    try {
      await setCamera(this.ctx.page, hooks, on, this.ctx.note);
    } catch (error) {
      throw new CommandRefusal(
        "CAMERA_UNAVAILABLE",
        `could not turn the camera ${on ? "on" : "off"}: ${(error as Error).message}`,
      );
    }
  }
}
