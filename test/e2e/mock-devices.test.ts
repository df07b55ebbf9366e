import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { type MockHost, startMockHost } from "../../fixtures/host/server.js";
import { launchTestChromium, type SharedPage, sharedPage } from "../helpers/mock-browser.js";
import { MockControl } from "../helpers/stack.js";

/**
 * The mock meetings hear and see the attendee that joins them, as a real platform does: each
 * page takes Chromium's fake devices, fed a 440 Hz tone and a solid red picture made here with
 * ffmpeg, and the host records what it heard (levels, heard.wav) and saw (colour, camera.png)
 * while the microphone and camera were on, and every change of their states.
 */

const WAIT = { timeout: 10_000 };
const TONE_HZ = 440;
/** ffmpeg's sine has amplitude 1/8: an RMS of -21 dBFS. Silence reads -100. */
const LOUD_DBFS = -30;

type Attendee = MeetingState["attendees"][number];
type Devices = { microphone: boolean; camera: boolean };

/** How a test drives one platform's page: its join flow and its in-call toggles' hooks. */
interface Driver {
  platform: "google" | "zoom" | "teams";
  newId(): string;
  /** From the page's link into the call (admission is open), with the devices chosen at pre-join. */
  join(page: Page, id: string, devices: Devices): Promise<void>;
  /** The in-call toggles while the device is on and while it is off (the labels flip). */
  microphone: { on: string; off: string };
  camera: { on: string; off: string };
  /** What the page says when the host muted the attendee, and when it refuses an unmute. */
  mutedNotice: string;
  refusedNotice: string;
}

let counter = 0;
const next = () => (counter += 1);

const letter = (digit: string) => String.fromCharCode(97 + Number.parseInt(digit, 26));

const CALL_CONTROLS = 'div[role="region"][aria-label="Call controls"]';
const meet: Driver = {
  platform: "google",
  // Meet codes are letters only: the counter in base 26, as letters.
  newId: () => `dev-abcd-${[...next().toString(26).padStart(3, "0")].map(letter).join("")}`,
  async join(page, id, devices) {
    await page.goto(`${host.url}/meet/${id}`);
    await page.locator('input[aria-label="Your name"]').fill("Meetbot");
    // The pre-join toggles start on, as on the real page: turn off what the test wants off.
    if (!devices.microphone) await page.locator('.devices [aria-label="Turn off microphone"]').click();
    if (!devices.camera) await page.locator('.devices [aria-label="Turn off camera"]').click();
    await page.locator("button", { has: page.locator('span:text-is("Join now")') }).click();
    await page.locator(`${CALL_CONTROLS} button[aria-label="Leave call"]`).waitFor(WAIT);
  },
  microphone: {
    on: `${CALL_CONTROLS} button[aria-label="Turn off microphone"][data-is-muted="false"]`,
    off: `${CALL_CONTROLS} button[aria-label="Turn on microphone"][data-is-muted="true"]`,
  },
  camera: {
    on: `${CALL_CONTROLS} button[aria-label="Turn off camera"]`,
    off: `${CALL_CONTROLS} button[aria-label="Turn on camera"]`,
  },
  mutedNotice: "Alice Example muted you",
  refusedNotice: "You can't unmute yourself because the host muted you",
};

const zoom: Driver = {
  platform: "zoom",
  newId: () => String(82_000_000_000 + next()),
  async join(page, id, devices) {
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    await page.locator("#onetrust-accept-btn-handler").click();
    await page.locator("#wc_agree1").click();
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    // Allowed devices start on in the preview; its buttons are labelled with their action.
    if (!devices.microphone) await page.locator('#preview-audio-control-button[aria-label="Mute"]').click();
    if (!devices.camera) await page.locator('#preview-video-control-button[aria-label="Stop Video"]').click();
    await page.locator("#input-for-name").fill("Meetbot");
    await page.locator("button.preview-join-button:not(.disabled)").click();
    // Nothing is heard (either way) before the call's audio is joined.
    await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
  },
  microphone: {
    on: '#wc-footer button[aria-label="mute my microphone"]:text-is("Mute")',
    off: '#wc-footer button[aria-label="unmute my microphone"]:text-is("Unmute")',
  },
  camera: {
    on: '#wc-footer button[aria-label="stop my video"]:text-is("Stop Video")',
    off: '#wc-footer button[aria-label="start my video"]:text-is("Start Video")',
  },
  mutedNotice: "The host has muted you",
  refusedNotice: "You cannot unmute yourself because the host muted you",
};

const TEAMS_MIC = 'button#microphone-button[data-tid="microphone-button"]';
const teams: Driver = {
  platform: "teams",
  newId: () => `MockDevices${String(next()).padStart(4, "0")}`,
  async join(page, id, devices) {
    const context = encodeURIComponent(JSON.stringify({ Tid: "tenant-1", Oid: "organizer-1" }));
    await page.goto(`${host.url}/l/meetup-join/19%3ameeting_${id}%40thread.v2/0?context=${context}`);
    await page.locator('button[data-tid="joinOnWeb"]').click();
    await page.locator('input[data-tid="prejoin-display-name-input"]').fill("Meetbot");
    // Both switches start on.
    if (!devices.camera) await page.locator('[data-tid="toggle-video"]').click();
    if (!devices.microphone) await page.locator('[data-tid="toggle-mute"]').click();
    await page.locator('[data-tid="prejoin-join-button"]').click();
    if (!devices.camera && !devices.microphone) {
      await page.getByRole("button", { name: "Continue without audio or video", exact: true }).click();
    }
    await page.locator("#hangup-button").waitFor(WAIT);
  },
  microphone: {
    on: `${TEAMS_MIC}[aria-label="Mute (Ctrl+Shift+M)"][data-state="mic"]`,
    off: `${TEAMS_MIC}[aria-label="Unmute (Ctrl+Shift+M)"][data-state="mic-off"]`,
  },
  camera: {
    on: 'button#video-button[aria-label="Turn camera off"]',
    off: 'button#video-button[aria-label="Turn camera on"]',
  },
  mutedNotice: "Alice Example muted you",
  refusedNotice: "You can't unmute because the organizer muted you",
};

let host: MockHost;
let control: MockControl;
let browser: Browser;
let shared: SharedPage;
let page: Page;
let mediaDir: string;

beforeAll(async () => {
  // The fake devices' inputs: a tone (looped by Chromium) and a red picture, made at test time.
  mediaDir = mkdtempSync(join(tmpdir(), "meetbot-mock-devices-"));
  const tone = join(mediaDir, "tone.wav");
  const red = join(mediaDir, "red.y4m");
  const ffmpeg = (...args: string[]) => execFileSync("ffmpeg", ["-loglevel", "error", "-y", ...args]);
  ffmpeg("-f", "lavfi", "-i", `sine=frequency=${TONE_HZ}:sample_rate=48000:duration=2`, "-ac", "1", tone);
  ffmpeg("-f", "lavfi", "-i", "color=c=red:s=320x240:r=10:d=1", "-pix_fmt", "yuv420p", red);
  host = await startMockHost();
  control = new MockControl(host.url);
  browser = await launchTestChromium({
    extraArgs: [`--use-file-for-fake-audio-capture=${tone}`, `--use-file-for-fake-video-capture=${red}`],
  });
  shared = await sharedPage(browser);
  page = shared.page;
});

afterAll(async () => {
  await browser?.close();
  await host?.close();
  if (mediaDir) rmSync(mediaDir, { recursive: true, force: true });
});

afterEach(async () => {
  page = await shared.reset();
});

/** The host's record of the meeting's only attendee. */
async function attendee(platform: string, id: string): Promise<Attendee> {
  const state = (await control.state(platform, id)) as unknown as MeetingState;
  const [first] = state.attendees;
  if (!first) throw new Error(`no attendee in ${platform} meeting ${id}`);
  return first;
}

/** Polls the attendee's record until `check` holds; answers that record. */
async function until(platform: string, id: string, what: string, check: (a: Attendee) => boolean) {
  let last: Attendee | undefined;
  await expect
    .poll(
      async () => {
        last = await attendee(platform, id);
        return check(last);
      },
      { ...WAIT, message: `waiting for ${what}` },
    )
    .toBe(true);
  return last as Attendee;
}

const loud = (a: Attendee, fromMs = 0) =>
  a.heard.levels.filter((l) => l.atMs >= fromMs && l.dbfs > LOUD_DBFS);
/** Where a change happened, in ms from the admission (the heard clock's zero). */
const msIntoCall = (a: Attendee, at: string) => Date.parse(at) - Date.parse(a.admittedAt ?? at);

/** The samples of a 16 kHz mono 16-bit WAV, after checking that it is one. */
function samplesOf(wav: Buffer): Int16Array {
  expect(wav.toString("ascii", 0, 4)).toBe("RIFF");
  expect(wav.toString("ascii", 8, 12)).toBe("WAVE");
  expect(wav.readUInt16LE(22)).toBe(1); // mono
  expect(wav.readUInt32LE(24)).toBe(16_000);
  expect(wav.readUInt16LE(34)).toBe(16);
  const data = wav.subarray(44);
  const samples = new Int16Array(data.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = data.readInt16LE(i * 2);
  return samples;
}

const span = (samples: Int16Array, fromMs: number, toMs: number) =>
  samples.subarray(Math.round(fromMs * 16), Math.round(toMs * 16));
const peak = (samples: Int16Array) => samples.reduce((max, s) => Math.max(max, Math.abs(s)), 0);
/**
 * The dominant frequency of a steady tone: the median over 50 ms windows of their zero crossings,
 * counting only windows that are loud throughout. A starved page's capture may drop chunks (laid
 * out as zeros on the call's clock); those gaps say nothing about the pitch, a wrong sample rate
 * would shift every window.
 */
function frequency(samples: Int16Array): number {
  const WINDOW = 800; // 50 ms at 16 kHz: 44 crossings of 440 Hz, so ±10 Hz at worst
  const PERIOD = 40; // longer than a 440 Hz half-period (18 samples): a sine is never this long near 0
  const perWindow: number[] = [];
  for (let start = 0; start + WINDOW <= samples.length; start += WINDOW) {
    const window = samples.subarray(start, start + WINDOW);
    let crossings = 0;
    let quietRun = 0;
    let gap = false;
    for (let i = 0; i < window.length; i++) {
      quietRun = Math.abs(window[i] ?? 0) < 200 ? quietRun + 1 : 0;
      if (quietRun > PERIOD) gap = true;
      if (i > 0 && (window[i - 1] ?? 0) < 0 !== (window[i] ?? 0) < 0) crossings += 1;
    }
    if (!gap) perWindow.push(crossings / 2 / (WINDOW / 16_000));
  }
  expect(perWindow.length, "loud 50 ms windows in the tone's span").toBeGreaterThanOrEqual(3);
  perWindow.sort((a, b) => a - b);
  return perWindow[Math.floor(perWindow.length / 2)] ?? 0;
}

/** Long enough for several of the page's 200 ms sends, had it sent anything. */
const settle = () => page.waitForTimeout(1_000);

describe.each([meet, zoom, teams])("$platform", (driver) => {
  const { platform } = driver;

  it("hears the microphone while on and nothing while muted, sees the camera while on", async () => {
    const id = driver.newId();
    await control.configure(platform, id, { admit: "open" });
    await driver.join(page, id, { microphone: true, camera: true });
    await page.locator(driver.microphone.on).waitFor(WAIT);
    await page.locator(driver.camera.on).waitFor(WAIT);

    const heard = await until(platform, id, "the tone", (a) => loud(a).length >= 5);
    expect(heard.mic).toMatchObject({ muted: false, changes: [{ muted: false, by: "self" }] });
    const seen = await until(platform, id, "the red camera", (a) => a.camera.color !== null);
    expect(seen.camera.on).toBe(true);
    expect(seen.camera.color?.r).toBeGreaterThan(200);
    expect(seen.camera.color?.g).toBeLessThan(50);
    expect(seen.camera.color?.b).toBeLessThan(50);
    const png = await pictureOf(platform, id);
    expect(png.subarray(1, 4).toString("ascii")).toBe("PNG");
    expect(png.readUInt32BE(16)).toBe(320); // IHDR width

    // Muted from the call's own toggle: what the page had goes out first, then nothing.
    await page.locator(driver.microphone.on).click();
    await page.locator(driver.microphone.off).waitFor(WAIT);
    const muted = await attendee(platform, id);
    expect(muted.mic.muted).toBe(true);
    expect(muted.mic.changes.at(-1)).toMatchObject({ muted: true, by: "self" });
    await settle();
    expect((await attendee(platform, id)).heard.levels).toEqual(muted.heard.levels);

    // Unmuted again: heard again, after the silence.
    await page.locator(driver.microphone.off).click();
    await page.locator(driver.microphone.on).waitFor(WAIT);
    const unmutedAt = msIntoCall(muted, (await attendee(platform, id)).mic.changes.at(-1)?.at ?? "");
    const again = await until(platform, id, "the tone again", (a) => loud(a, unmutedAt).length >= 3);
    expect(again.mic.changes.map((c) => [c.muted, c.by])).toEqual([
      [false, "self"],
      [true, "self"],
      [false, "self"],
    ]);

    // heard.wav lays it on the call's clock: the tone, zeros while muted, the tone again.
    const samples = samplesOf(await control.heardWav(platform, id, "a-1"));
    const mutedAt = msIntoCall(again, again.mic.changes[1]?.at ?? "");
    const firstLoud = loud(again)[0]?.atMs ?? 0;
    // Within 5%: a wrong sample rate would be far off (16 kHz read as 48 kHz is a third).
    expect(Math.abs(frequency(span(samples, firstLoud + 100, mutedAt - 100)) - TONE_HZ)).toBeLessThan(22);
    expect(peak(span(samples, mutedAt + 100, unmutedAt - 100))).toBe(0);
    expect(peak(span(samples, unmutedAt + 200, unmutedAt + 400))).toBeGreaterThan(2000);

    // Camera off from the call: recorded, and no colour any more.
    await page.locator(driver.camera.on).click();
    await page.locator(driver.camera.off).waitFor(WAIT);
    const dark = await attendee(platform, id);
    expect(dark.camera).toMatchObject({ on: false, color: null });
    expect(dark.camera.changes.map((c) => c.on)).toEqual([true, false]);
  });

  it("joined muted and dark (as the bot joins): silent until unmuted; the host mutes it, it unmutes; camera on", async () => {
    const id = driver.newId();
    await control.configure(platform, id, { admit: "open" });
    await driver.join(page, id, { microphone: false, camera: false });
    await page.locator(driver.microphone.off).waitFor(WAIT);
    await page.locator(driver.camera.off).waitFor(WAIT);
    await settle();
    const silent = await attendee(platform, id);
    expect(silent.heard.levels).toEqual([]);
    expect(silent.mic).toMatchObject({ muted: true, changes: [{ muted: true, by: "self" }] });
    expect(silent.camera).toMatchObject({ on: false, color: null, changes: [{ on: false }] });
    const noPicture = await fetch(`${host.url}/control/meetings/${platform}/${id}/attendees/a-1/camera.png`);
    expect(noPicture.status).toBe(404);

    await page.locator(driver.microphone.off).click();
    await page.locator(driver.microphone.on).waitFor(WAIT);
    const unmuted = await until(platform, id, "the tone", (a) => loud(a).length >= 3);
    // Nothing was heard before the unmute: the first sound lies after it on the call's clock.
    const unmutedAt = msIntoCall(unmuted, unmuted.mic.changes.at(-1)?.at ?? "");
    expect(unmuted.heard.levels[0]?.atMs).toBeGreaterThanOrEqual(unmutedAt - 100);
    const samples = samplesOf(await control.heardWav(platform, id, "a-1"));
    expect(peak(span(samples, 0, unmutedAt - 100))).toBe(0);

    // The host mutes it: the toggle shows muted, the notice shows, hearing stops.
    const atMute = (await control.muteAttendee(platform, id)) as unknown as MeetingState;
    await page.locator(driver.microphone.off).waitFor(WAIT);
    await page.getByText(driver.mutedNotice, { exact: true }).waitFor(WAIT);
    const hostMuted = await attendee(platform, id);
    expect(hostMuted.mic.muted).toBe(true);
    expect(hostMuted.mic.changes.at(-1)).toMatchObject({ muted: true, by: "host" });
    await settle();
    expect((await attendee(platform, id)).heard.levels).toEqual(atMute.attendees[0]?.heard.levels);

    // By default the attendee may unmute itself again.
    await page.locator(driver.microphone.off).click();
    await page.locator(driver.microphone.on).waitFor(WAIT);
    const back = await attendee(platform, id);
    expect(back.mic.changes.map((c) => [c.muted, c.by])).toEqual([
      [true, "self"],
      [false, "self"],
      [true, "host"],
      [false, "self"],
    ]);
    const backAt = msIntoCall(back, back.mic.changes.at(-1)?.at ?? "");
    await until(platform, id, "the tone after the host's mute", (a) => loud(a, backAt).length >= 3);

    // The camera, let go while off, is taken again when turned on in the call.
    await page.locator(driver.camera.off).click();
    await page.locator(driver.camera.on).waitFor(WAIT);
    const red = await until(platform, id, "the camera", (a) => a.camera.color !== null);
    expect(red.camera.color?.r).toBeGreaterThan(200);
    expect(red.camera.changes.map((c) => c.on)).toEqual([false, true]);
    expect((await pictureOf(platform, id)).subarray(1, 4).toString("ascii")).toBe("PNG");
  });

  it("allowUnmute=false: after the host mutes it, the unmute click is refused with a notice", async () => {
    const id = driver.newId();
    await control.configure(platform, id, { admit: "open", allowUnmute: false });
    await driver.join(page, id, { microphone: true, camera: false });
    await until(platform, id, "the tone", (a) => loud(a).length >= 2);

    await control.muteAttendee(platform, id, "a-1");
    await page.locator(driver.microphone.off).waitFor(WAIT);
    await page.getByText(driver.mutedNotice, { exact: true }).waitFor(WAIT);

    await page.locator(driver.microphone.off).click();
    await page.getByText(driver.refusedNotice, { exact: true }).waitFor(WAIT);
    expect(await page.locator(driver.microphone.off).count()).toBe(1);
    expect(await page.locator(driver.microphone.on).count()).toBe(0);
    const refused = await attendee(platform, id);
    expect(refused.mic.muted).toBe(true);
    expect(refused.mic.changes.map((c) => [c.muted, c.by])).toEqual([
      [false, "self"],
      [true, "host"],
    ]);
  });
});

describe("teams-alt-labels", () => {
  it("labels the microphone as the new web client does: Unmute mic ↔ Mute mic", async () => {
    const id = teams.newId();
    await control.configure("teams", id, { admit: "open", ui: ["teams-alt-labels"] });
    const context = encodeURIComponent(JSON.stringify({ Tid: "tenant-1", Oid: "organizer-1" }));
    await page.goto(`${host.url}/l/meetup-join/19%3ameeting_${id}%40thread.v2/0?context=${context}`);
    // This layout's launcher button has no data-tid; its words are the hook.
    await page.getByRole("button", { name: "Join meeting from this browser" }).click();
    await page.locator('input[data-tid="prejoin-display-name-input"]').fill("Meetbot");
    await page.locator('[data-tid="toggle-mute"]').click();
    await page.locator('[data-tid="prejoin-join-button"]').click();
    await page.locator(`${TEAMS_MIC}[aria-label="Unmute mic"][data-state="mic-off"]`).click(WAIT);
    await page.locator(`${TEAMS_MIC}[aria-label="Mute mic"][data-state="mic"]`).waitFor(WAIT);
    await until("teams", id, "the tone", (a) => loud(a).length >= 2);
  });
});

/**
 * The camera's picture once the host has one: the page posts the colour and the PNG side by side,
 * and on a busy machine the colour may land first.
 */
async function pictureOf(platform: string, id: string): Promise<Buffer> {
  let png: Buffer | undefined;
  await expect
    .poll(
      async () => {
        png = await control.cameraPng(platform, id, "a-1").catch(() => undefined);
        return png !== undefined;
      },
      { timeout: 10_000 },
    )
    .toBe(true);
  return png as Buffer;
}
