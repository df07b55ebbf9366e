import type { Locator, Page } from "playwright";
import type { MeetingInfo, PlatformUrls } from "../../src/core/index.js";
import { type JoinNote, JoinRefused, LEAVE_TIMEOUT_MS, type PlatformAdapter } from "../adapter.js";
import { incomingVideoByMenu } from "../incoming-video.js";
import {
  alternatives,
  clickFirstClickable,
  exactly,
  firstVisible,
  ignoreNote,
  landedAnyway,
  shortReason,
  type Variants,
} from "../variants.js";
import { turnOnZoomCaptions } from "./captions.js";
import { openZoomChat, sendZoomChat } from "./chat.js";
import { ZOOM_HOOKS, ZOOM_LIVE_HOOKS, ZOOM_SIGN_IN } from "./selectors.js";
import { zoomSnapshot } from "./snapshot.js";
import { zoomMeeting, zoomWebBaseUrl, zoomWebClientUrl } from "./url.js";

const FORM_TIMEOUT_MS = 15_000;
/** How long the bot gives a dialog it may or may not get (the leave confirmation). */
const MAYBE_DIALOG_MS = 3_000;
/** How long the first visit's dialogs may stay unanswerable (covered, or slow to take a click). */
const FIRST_DIALOGS_MS = 5_000;
/** How long after admission a "Join Audio by Computer" dialog is still answered (or waited for, when covered). */
const LATE_AUDIO_DIALOG_MS = 15_000;

/**
 * How long an opened participants panel may take to show its first entry (the panel renders at
 * once on the mock, in a few hundred ms on the real client): short, so that a second click lands
 * in the bot's first busy seconds rather than in the talk after them.
 */
const PANEL_SHOWS_MS = 2_000;

/**
 * Opens the participants panel, whose entries name a caption's speaker (matched by avatar) and
 * the roster. A dialog or toast over the button delays the click (Playwright waits until the
 * button is on top). A click that did not take (a captions run once had every speaker unknown
 * after "opened", the panel not there) is made once more, but only after the entries still do not
 * show: the same button closes an open panel.
 */
async function openParticipantsPanel(page: Page, note: JoinNote): Promise<void> {
  const button = page.locator(ZOOM_HOOKS.participantsButton).first();
  const entry = page.locator(ZOOM_HOOKS.participantName).first();
  for (const attempt of ["opened", "opened on a second click"]) {
    try {
      await button.click({ timeout: FORM_TIMEOUT_MS });
      await entry.waitFor({ state: "visible", timeout: PANEL_SHOWS_MS });
      note("participantsPanel", attempt);
      return;
    } catch (error) {
      if (await entry.isVisible().catch(() => false)) return note("participantsPanel", attempt);
      if (attempt !== "opened") {
        note("participantsPanel", `not opened: ${(error as Error).message.split("\n")[0]}`);
      }
    }
  }
}

export const zoomAdapter: PlatformAdapter = {
  platform: "zoom",
  hooks: ZOOM_HOOKS,
  signIn: ZOOM_SIGN_IN,
  live: {
    captions: ZOOM_LIVE_HOOKS.captions,
    chat: ZOOM_LIVE_HOOKS.chat,
    microphone: ZOOM_LIVE_HOOKS.microphone,
    camera: ZOOM_LIVE_HOOKS.camera,
    turnOnCaptions: turnOnZoomCaptions,
    openChat: openZoomChat,
    sendChat: sendZoomChat,
    turnOffIncomingVideo: incomingVideoByMenu(ZOOM_LIVE_HOOKS.incomingVideo, "Zoom"),
  },
  snapshot: zoomSnapshot,

  meetingUrl(info: MeetingInfo, urls: PlatformUrls): string {
    return zoomWebClientUrl(zoomMeeting(info), zoomWebBaseUrl(urls.zoomWeb));
  },

  async join(
    page: Page,
    { displayName, info, note = ignoreNote, confirmSignedIn, camera = false },
  ): Promise<void> {
    await confirmSignedIn?.();
    await answerDialogs(page, note);
    const nameInput = page.locator(ZOOM_HOOKS.nameInput);
    if (!confirmSignedIn) {
      await nameInput.fill(displayName, { timeout: FORM_TIMEOUT_MS });
    } else if ((await nameInput.count()) > 0 && (await nameInput.first().inputValue()).trim() === "") {
      // Signed in, the field is filled with the account's name; a build that leaves it empty gets it.
      await nameInput.first().fill(displayName, { timeout: FORM_TIMEOUT_MS });
      note("nameInput", "signed in, but the field was empty: typed the display name");
    } else {
      note("nameInput", "signed in: the account's name stands");
    }
    const passcodeInput = await firstVisible(
      alternatives(ZOOM_HOOKS.passcodeInput).map((selector) => [selector, page.locator(selector)] as const),
    );
    note("passcodeInput", passcodeInput?.variant ?? "none shown");
    if (passcodeInput) {
      const { passcode } = zoomMeeting(info);
      if (!passcode)
        throw new JoinRefused("BAD_PASSCODE", "the meeting asks for a passcode and meetingInfo has none");
      await passcodeInput.locator.fill(passcode);
    }
    // Joining muted and camera-off (on, when the bot shows a picture): the bot only listens. The
    // toggles are labelled with their action, so a toggle that does not offer "Mute" / "Stop
    // Video" is already off (one that does not offer "Start Video", already on).
    await turnOff(
      page,
      note,
      "microphone",
      ZOOM_HOOKS.previewMicrophone,
      ZOOM_HOOKS.previewMicrophoneOnLabel,
    );
    if (camera) {
      await clickLabelled(
        page,
        note,
        "camera",
        ZOOM_HOOKS.previewCamera,
        ZOOM_HOOKS.previewCameraOffLabel,
        "on",
      );
    } else {
      await turnOff(page, note, "camera", ZOOM_HOOKS.previewCamera, ZOOM_HOOKS.previewCameraOnLabel);
    }
    await clickPastDialogs(page, page.locator(ZOOM_HOOKS.joinButtonReady).first(), FORM_TIMEOUT_MS, note);
  },

  /**
   * Joins computer audio (the meeting is silent until then, and the recording needs its sound)
   * and opens the participants panel (the roster exists only while it is open) unless its entries
   * are already shown somewhere: the same button closes an open panel.
   */
  async afterAdmission(page: Page, { note = ignoreNote } = {}): Promise<void> {
    const byClass = page.locator(ZOOM_HOOKS.joinAudioButton);
    const byText = page.getByRole("button", { name: ZOOM_HOOKS.joinAudioText, exact: true });
    // Usually the dialog is up on admission: its click is waited for, also while something lies
    // over the button (a toast, a slow first paint). Until computer audio is joined the bot hears
    // nothing, and the silence clock, which starts after this step, would count the bot's own
    // deafness as a silent call. The dialog can also come a moment later, and some accounts join
    // computer audio by themselves and never ask: then it is answered in the background if it
    // comes (the panel click below waits while it covers).
    const joinAudio = await firstVisible([
      [ZOOM_HOOKS.joinAudioButton, byClass],
      [`"${ZOOM_HOOKS.joinAudioText}"`, byText],
    ]);
    if (joinAudio) {
      await joinAudio.locator.click({ timeout: LATE_AUDIO_DIALOG_MS }).then(
        () => note("joinAudio", joinAudio.variant),
        (error: Error) => note("joinAudio", `not pressed: ${error.message.split("\n")[0]}`),
      );
    } else {
      note("joinAudio", "no dialog yet: answering it in the background if it comes");
      void byClass
        .or(byText)
        .first()
        .click({ timeout: LATE_AUDIO_DIALOG_MS })
        .then(() => note("joinAudio", "answered late"))
        .catch(() => {});
    }
    if (await page.locator(ZOOM_HOOKS.participantName).first().isVisible()) {
      note("participantsPanel", "already open");
      return;
    }
    // In the background: the recording starts after this step, and until the panel is open the
    // snapshot reads the tiles.
    void openParticipantsPanel(page, note);
  },

  async leave(page: Page): Promise<string | null> {
    const leave = page.locator(ZOOM_HOOKS.leaveButton).first();
    if (!(await leave.isVisible().catch(() => false))) return "no Leave button on screen";
    const clicked = await leave.click({ timeout: LEAVE_TIMEOUT_MS }).then(
      () => null,
      (error: unknown) => `Leave did not go through: ${shortReason(error)}`,
    );
    // In the call Leave asks for confirmation; on the waiting screens it leaves at once.
    const confirm = page.locator(ZOOM_HOOKS.leaveConfirm).first();
    await Promise.race([
      confirm.waitFor({ state: "visible", timeout: LEAVE_TIMEOUT_MS }),
      leave.waitFor({ state: "detached", timeout: LEAVE_TIMEOUT_MS }),
    ]).catch(() => {});
    if (!(await confirm.isVisible().catch(() => false))) return clicked;
    return confirm.click({ timeout: LEAVE_TIMEOUT_MS }).then(
      () => null,
      (error: unknown) => `the leave's confirmation did not go through: ${shortReason(error)}`,
    );
  },
};

/**
 * Accepts the cookie banner, the terms and the permission dialog, in whatever order and stacking
 * they show: what is on top first, and a click another dialog intercepts moves on to the next
 * candidate (the permission dialog's overlay can lie over the cookie banner). Notes each as a
 * "popup".
 */
async function clearDialogs(page: Page, note: JoinNote): Promise<void> {
  const dialogs = bannerAndTerms(page);
  // A click may bring the next dialog (terms, then permissions), so each round starts over:
  // "Allow" answered the permission dialog, so its other button is gone too. None clickable
  // (covered by something else): the caller's click waits, and clears again. A round per dialog
  // (the permission dialog's too), and two to spare.
  for (let round = 0; round < dialogs.length + 3; round++) {
    const clicked = await clickFirstClickable([...dialogs, ...(await permissionChoice(page))]);
    if (clicked === null) return;
    note("popup", clicked);
  }
}

/**
 * Answers the first visit's dialogs before the form is read: until the permission dialog is
 * answered, the preview's toggles show the devices off, and "Allow" then turns them on, so a
 * dialog answered only at Join would let the bot in unmuted. One that could not be answered yet
 * (a toast over it; a click that timed out on a starved page, each try at most a second) is tried
 * again for up to FIRST_DIALOGS_MS; past that, the form's clicks clear what is left
 * (clickPastDialogs).
 */
async function answerDialogs(page: Page, note: JoinNote): Promise<void> {
  const deadline = Date.now() + FIRST_DIALOGS_MS;
  const anyDialog = bannerAndTerms(page)
    .map(([, locator]) => locator)
    .reduce((all, locator) => all.or(locator))
    .or(page.getByRole("button", { name: exactly(ZOOM_HOOKS.permissionButtonTexts) }));
  do {
    await clearDialogs(page, note);
  } while (Date.now() < deadline && (await anyDialog.filter({ visible: true }).count()) > 0);
}

/** The cookie banner's and the terms' buttons, each a candidate (the permission dialog's: permissionChoice). */
const bannerAndTerms = (page: Page): Variants => [
  [`cookies ${ZOOM_HOOKS.cookieAccept}`, page.locator(ZOOM_HOOKS.cookieAccept)],
  [`terms ${ZOOM_HOOKS.termsAgree}`, page.locator(ZOOM_HOOKS.termsAgree)],
];

/**
 * The permission dialog's choice the bot prefers (ZOOM_HOOKS.permissionButtonTexts), as the one
 * candidate for it: offered side by side, a covered "Allow", or one whose click timed out on a
 * starved page, made way for "Continue without microphone and camera", after which the client
 * may not offer computer audio. A covered "Allow" is tried again in a later round instead.
 */
async function permissionChoice(page: Page): Promise<Variants> {
  for (const name of ZOOM_HOOKS.permissionButtonTexts) {
    const button = page.getByRole("button", { name, exact: true });
    if ((await button.filter({ visible: true }).count()) > 0) return [[`permissions "${name}"`, button]];
  }
  return [];
}

/** Clicks `target`, clearing a dialog that shows up late and covers it. */
async function clickPastDialogs(
  page: Page,
  target: Locator,
  timeoutMs: number,
  note: JoinNote,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let shown = false;
  for (;;) {
    await clearDialogs(page, note);
    shown ||= await target.isVisible().catch(() => false);
    try {
      await target.click({ timeout: Math.min(2_000, Math.max(1, deadline - Date.now())) });
      return;
    } catch (error) {
      // Retrying a click that landed would wait for a button that is gone until the deadline.
      if (shown && (await landedAnyway(target))) return;
      if (Date.now() >= deadline) throw error;
    }
  }
}

/** Turns a preview toggle off if it offers to; notes the form it was found in. */
function turnOff(page: Page, note: JoinNote, hook: string, toggle: string, onLabel: string) {
  return clickLabelled(page, note, hook, toggle, onLabel, "off");
}

/** Clicks the preview toggle while it offers `label` (its action); else it is already `state`. */
async function clickLabelled(
  page: Page,
  note: JoinNote,
  hook: string,
  toggle: string,
  label: string,
  state: "on" | "off",
) {
  const button = page.locator(`${toggle}[aria-label="${label}"]`).first();
  if (await button.isVisible()) {
    // A dialog left up (a starved page let every dialog click time out) would take the click.
    await clickPastDialogs(page, button, FORM_TIMEOUT_MS, note);
    note(hook, `clicked ${toggle} "${label}"`);
    return;
  }
  const any = page.locator(toggle).first();
  const shownLabel =
    (await any.count()) > 0
      ? await any.getAttribute("aria-label", { timeout: MAYBE_DIALOG_MS }).catch(() => null)
      : null;
  note(hook, shownLabel === null ? `no ${toggle}` : `already ${state}: ${toggle} "${shownLabel}"`);
}
