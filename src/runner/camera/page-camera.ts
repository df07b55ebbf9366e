import type { BrowserContext } from "playwright";

/**
 * The bot's camera: a canvas the runner paints, handed to the meeting page as its camera. Chromium
 * has no camera here (its fake capture device beeps into the call and shows a test pattern), so
 * an init script, in every frame before the page's own scripts, wraps
 * `navigator.mediaDevices.getUserMedia`: a request with `video` gets a fresh
 * `canvas.captureStream()` track (a cached stream breaks `replaceTrack`: docs/notes/live-meeting.md), and its
 * `audio`, if any, still comes from the real microphone (the bot's PulseAudio source). Without a
 * picture the canvas is black: the join flows turn such a camera off at pre-join, as they did
 * when there was no camera at all, and a page that let it go asks for it again when the bot
 * turns it on in the call. `enumerateDevices` lists the camera, so a page that looks for one
 * before asking finds it.
 *
 * The picture travels as the server's PNG (never a user's file), base64: pulled by each new
 * document through a binding (so a navigation, or a frame that appears later, shows the current
 * picture from its first frame: getUserMedia waits for it), and pushed into the documents there
 * are when it changes.
 */

/** The page's way to ask the runner for the current picture (Playwright's binding). */
const PICTURE_BINDING = "__meetbotCameraPicture";
/** Where each document keeps its setter for the runner's pushes (a registered symbol: no name clash). */
const SETTER_KEY = "meetbot.camera";

export class PageCamera {
  /** The current picture, base64 PNG; null: the camera is black. */
  private picture: string | null = null;

  private constructor(private readonly context: BrowserContext) {}

  /** Installs the camera into every page of `context` (before any is opened). */
  static async install(context: BrowserContext): Promise<PageCamera> {
    const camera = new PageCamera(context);
    await context.exposeBinding(PICTURE_BINDING, () => camera.picture);
    await context.addInitScript(cameraInPage, { binding: PICTURE_BINDING, setterKey: SETTER_KEY });
    return camera;
  }

  /** Paints `png` (the server's PNG) on the camera from now on, in every document. */
  async show(png: Buffer): Promise<void> {
    this.picture = png.toString("base64");
    await this.push();
  }

  /** The camera shows black again (it is off by then: nobody sees it). */
  async clear(): Promise<void> {
    this.picture = null;
    await this.push();
  }

  /** Every frame that has the camera paints the current picture; resolves once they have. */
  private async push(): Promise<void> {
    const frames = this.context.pages().flatMap((page) => page.frames());
    await Promise.all(
      frames.map((frame) =>
        frame
          .evaluate(
            ({ key, picture }) =>
              (window as unknown as Record<symbol, ((p: string | null) => Promise<void>) | undefined>)[
                Symbol.for(key)
              ]?.(picture),
            { key: SETTER_KEY, picture: this.picture },
          )
          // A frame navigating or gone: its next document pulls the picture itself.
          .catch(() => {}),
      ),
    );
  }
}

/**
 * Runs in every document before its scripts (serialized: self-contained). Installs the canvas
 * camera described above.
 */
function cameraInPage({ binding, setterKey }: { binding: string; setterKey: string }): void {
  const devices = navigator.mediaDevices;
  // No secure context (http on another host than localhost): the page has no devices to wrap.
  if (!devices?.getUserMedia) return;
  const WIDTH = 1280;
  const HEIGHT = 720;
  /** "NEEDS to be 30 or Google Meet complains" (docs/notes/live-meeting.md): the frame rate the track declares. */
  const DECLARED_FPS = 30;
  /**
   * A canvas track only carries a frame when the canvas is drawn, and a track that stops carrying
   * frames freezes or goes black on the far side: the picture is drawn again on a timer (timers
   * are not throttled in the bot's window: Playwright starts Chromium without background
   * throttling). 10 times a second is plenty for a still picture, at a tenth of a 30 fps redraw.
   */
  const REDRAW_MS = 100;
  const CAMERA_ID = "meetbot-camera";
  const GROUP_ID = "meetbot-camera-group";
  const CAMERA_LABEL = "meetbot camera";

  // Sized only while a track is live: a 1280x720 canvas holds 3.5 MB once drawn, and every frame
  // of every document gets this script, most of which never ask for a camera (or let it go at
  // pre-join). A canvas of no size holds nothing (a lone bot's renderer: 54 → 50 MB of its own).
  const canvas = document.createElement("canvas");
  canvas.width = 0;
  canvas.height = 0;
  const painter = canvas.getContext("2d");
  let picture: ImageBitmap | null = null;
  const live = new Set<MediaStreamTrack>();
  let timer: ReturnType<typeof setInterval> | null = null;

  /** Black, with the picture fitted in the middle (its proportions kept). */
  const paint = () => {
    if (!painter || live.size === 0) return;
    painter.fillStyle = "#000";
    painter.fillRect(0, 0, WIDTH, HEIGHT);
    if (!picture) return;
    const scale = Math.min(WIDTH / picture.width, HEIGHT / picture.height);
    const w = picture.width * scale;
    const h = picture.height * scale;
    painter.drawImage(picture, (WIDTH - w) / 2, (HEIGHT - h) / 2, w, h);
  };
  /** Redraws while a track is live; stops once the page has let every one go (camera off). */
  const tick = () => {
    for (const track of live) if (track.readyState === "ended") live.delete(track);
    if (live.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
      canvas.width = 0;
      canvas.height = 0;
      return;
    }
    paint();
  };

  const setPicture = async (base64: string | null) => {
    let next: ImageBitmap | null = null;
    if (base64) {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      // From a Blob, not an <img src="data:">: no page's Content-Security-Policy stands in the way.
      next = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
    }
    picture?.close();
    picture = next;
    paint();
  };
  Object.defineProperty(window, Symbol.for(setterKey), { value: setPicture });
  const pull = (window as unknown as Record<string, () => Promise<string | null>>)[binding];
  const ready = (pull ? pull() : Promise.resolve(null)).then(setPicture).catch(() => {});

  const cameraTrack = (): MediaStreamTrack => {
    if (canvas.width !== WIDTH) {
      canvas.width = WIDTH;
      canvas.height = HEIGHT;
    }
    // A fresh stream per request: one cached stream breaks a page's replaceTrack.
    const [track] = canvas.captureStream(DECLARED_FPS).getVideoTracks();
    if (!track) throw new DOMException("the camera gave no track", "NotReadableError");
    const settings = track.getSettings.bind(track);
    // Pages match a track to its device by these, and show its label as the camera's name.
    track.getSettings = () => ({ ...settings(), deviceId: CAMERA_ID, groupId: GROUP_ID });
    Object.defineProperty(track, "label", { value: CAMERA_LABEL });
    live.add(track);
    paint();
    timer ??= setInterval(tick, REDRAW_MS);
    return track;
  };

  const getUserMedia = devices.getUserMedia.bind(devices);
  devices.getUserMedia = async (constraints?: MediaStreamConstraints) => {
    if (!constraints?.video) return getUserMedia(constraints);
    // The microphone as the page asked for it: refused or missing, the whole request fails, as it would.
    const stream = constraints.audio ? await getUserMedia({ audio: constraints.audio }) : new MediaStream();
    await ready;
    stream.addTrack(cameraTrack());
    return stream;
  };

  const enumerateDevices = devices.enumerateDevices.bind(devices);
  devices.enumerateDevices = async () => {
    const list = await enumerateDevices();
    if (list.some((device) => device.kind === "videoinput")) return list;
    // Labels show only once the page was given a device; then the camera has one too.
    const label = list.some((device) => device.label !== "") ? CAMERA_LABEL : "";
    const fields = { deviceId: CAMERA_ID, groupId: GROUP_ID, kind: "videoinput" as const, label };
    const camera = Object.create(MediaDeviceInfo.prototype) as MediaDeviceInfo;
    for (const [name, value] of Object.entries(fields)) {
      Object.defineProperty(camera, name, { value, enumerable: true });
    }
    Object.defineProperty(camera, "toJSON", { value: () => ({ ...fields }) });
    return [...list, camera];
  };
}
