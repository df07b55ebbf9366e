import type { Locator, Page } from "playwright";
import type { MeetingInfo } from "../../src/core/index.js";
import { type JoinNote, JoinRefused, LEAVE_TIMEOUT_MS, type PlatformAdapter } from "../adapter.js";
import {
  clickFirstClickable,
  exactly,
  firstVisible,
  ignoreNote,
  shortReason,
  type Variants,
} from "../variants.js";
import { turnOnMeetCaptions } from "./captions.js";
import { openMeetChat, sendMeetChat } from "./chat.js";
import { turnOffMeetIncomingVideo } from "./incoming-video.js";
import { MEET_HOOKS, MEET_LIVE_HOOKS, MEET_SIGN_IN } from "./selectors.js";
import { meetSnapshot } from "./snapshot.js";

const FORM_TIMEOUT_MS = 15_000;
/**
 * How long one click may wait for its target (Playwright retries meanwhile while something covers
 * it, so a toast of a second is outlasted) before the pop-ups are looked at again: a dialog that
 * opened after they were dismissed never goes away by itself. Not shorter: a busy page can take
 * a second to settle, and a click given up on for that only delays the join.
 */
const CLICK_ATTEMPT_MS = 3_000;
/** Kept short: the recording starts only after this step. Two attempts. */
const PEOPLE_TIMEOUT_MS = 5_000;
/** From the click on People to its entries on screen. */
const ROSTER_RENDER_MS = 2_000;
/** Pop-ups dismissed in one go: enough for a stack of them, bounded in case one keeps coming back. */
const MAX_POPUP_ROUNDS = 4;

export const meetAdapter: PlatformAdapter = {
  platform: "google",
  hooks: MEET_HOOKS,
  signIn: MEET_SIGN_IN,
  live: {
    captions: MEET_LIVE_HOOKS.captions,
    chat: MEET_LIVE_HOOKS.chat,
    microphone: MEET_LIVE_HOOKS.microphone,
    camera: MEET_LIVE_HOOKS.camera,
    turnOnCaptions: turnOnMeetCaptions,
    openChat: openMeetChat,
    sendChat: sendMeetChat,
    turnOffIncomingVideo: turnOffMeetIncomingVideo,
  },
  snapshot: meetSnapshot,

  meetingUrl(info: MeetingInfo): string {
    if (!info.meetingUrl) throw new Error("a Google Meet bot needs meetingInfo.meetingUrl");
    return info.meetingUrl;
  },

  async join(page: Page, { displayName, note = ignoreNote, confirmSignedIn, camera = false }): Promise<void> {
    if (confirmSignedIn) {
      await confirmSignedIn();
      // The meeting shows the account's own name: there is none to type.
      note("nameInput", "signed in: no name to type");
      await dismissPopups(page, note);
    } else {
      const name = page.locator(MEET_HOOKS.nameInput).first();
      await name.waitFor({ timeout: FORM_TIMEOUT_MS });
      await dismissPopups(page, note);
      // fill() types into the field even under a pop-up; only clicks can land on what covers a control.
      await name.fill(displayName, { timeout: FORM_TIMEOUT_MS });
    }
    // Joining muted and camera-off (on, when the bot shows a picture): the bot only listens. The
    // toggles flip their label once clicked, so a missing toggle means it is already as wanted.
    const toggles = [
      ["microphone", MEET_HOOKS.microphoneOff],
      ["camera", camera ? MEET_HOOKS.cameraOn : MEET_HOOKS.cameraOff],
    ] as const;
    for (const [hook, selector] of toggles) {
      const toggle = page.locator(selector).first();
      if (await toggle.isVisible()) {
        const flipped = async () => !(await toggle.isVisible());
        await clickPast(page, toggle, { hook, note, timeoutMs: FORM_TIMEOUT_MS, done: flipped });
        note(hook, `clicked ${selector}`);
      } else {
        note(hook, `no ${selector}: already ${hook === "camera" && camera ? "on" : "off"}`);
      }
    }
    const offered = [...MEET_HOOKS.joinButtonTexts, ...MEET_HOOKS.switchHereTexts];
    const anyCta = page.getByRole("button", { name: exactly(offered) });
    await anyCta.filter({ visible: true }).first().waitFor({ timeout: FORM_TIMEOUT_MS });
    // In the list's order, not the page's; "Switch here" never (it would pull the account's other
    // session out of the call).
    const cta = await firstVisible(buttonsNamed(page, MEET_HOOKS.joinButtonTexts));
    if (!cta) {
      const switchHere = await firstVisible(buttonsNamed(page, MEET_HOOKS.switchHereTexts));
      if (switchHere) {
        note("joinButton", `only "${switchHere.variant}": not taken`);
        throw new JoinRefused(
          "LOGIN_UNAVAILABLE",
          `the account is already in this call elsewhere and the page offers only "${switchHere.variant}", which would take it away from there`,
        );
      }
      throw new Error(`the call-to-action (${MEET_HOOKS.joinButtonTexts.join(" / ")}) went away`);
    }
    note("joinButton", cta.variant);
    // Once clicked it is disabled, then replaced by the lobby or the call.
    const enabled = page.getByRole("button", { name: exactly([cta.variant]), disabled: false });
    const asked = async () => (await enabled.filter({ visible: true }).count()) === 0;
    await clickPast(page, cta.locator, { hook: "joinButton", note, timeoutMs: FORM_TIMEOUT_MS, done: asked });
  },

  /**
   * Meet may render the participant list only while the People panel is open. If it stays
   * closed (the button could not be clicked), the snapshot names participants from the tiles.
   */
  async afterAdmission(page: Page, { note = ignoreNote } = {}): Promise<void> {
    // Entries by their own hook, wherever the panel puts them: its container's label drifts.
    const shownEntries = page.locator(MEET_HOOKS.rosterEntry).filter({ visible: true });
    const shown = async () => (await shownEntries.count()) > 0;
    if (await shown()) {
      note("roster", "already open");
      return;
    }
    const people = page.locator(MEET_HOOKS.peopleButton).first();
    await clickPast(page, people, { hook: "peopleButton", note, timeoutMs: PEOPLE_TIMEOUT_MS, done: shown });
    await shownEntries.first().waitFor({ timeout: ROSTER_RENDER_MS });
    note("roster", "opened with peopleButton");
  },

  async leave(page: Page): Promise<string | null> {
    const leave = page.locator(MEET_HOOKS.leaveCall).first();
    if (!(await leave.isVisible().catch(() => false))) return "no Leave call button on screen";
    const gone = async () => !(await leave.isVisible());
    return clickPast(page, leave, {
      hook: "leaveCall",
      note: ignoreNote,
      timeoutMs: LEAVE_TIMEOUT_MS,
      done: gone,
    }).then(
      () => null,
      (error: unknown) => `Leave call did not go through: ${shortReason(error)}`,
    );
  },
};

/** One role=button locator per text, named by it, visible ones only. */
function buttonsNamed(page: Page, texts: readonly string[]): Variants {
  return texts.map((text) => [
    text,
    page.getByRole("button", { name: exactly([text]) }).filter({ visible: true }),
  ]);
}

interface ClickPast {
  /** The step, for the notes of attempts that did not go through. */
  hook: string;
  note: JoinNote;
  timeoutMs: number;
  /**
   * Whether the click already had its effect. Checked before every attempt: a click whose
   * attempt timed out may still have landed, and a toggle must not be clicked twice.
   */
  done: () => Promise<boolean>;
}

/**
 * Clicks `target` whatever opens over it: before each attempt the pop-ups on top are dismissed,
 * and an attempt that stays intercepted (by a toast, or a dialog that opened meanwhile) gives up
 * after CLICK_ATTEMPT_MS so the pop-ups are looked at again, until `timeoutMs`.
 */
async function clickPast(
  page: Page,
  target: Locator,
  { hook, note, timeoutMs, done }: ClickPast,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 && (await done())) return;
    await dismissPopups(page, note);
    try {
      await target.click({ timeout: CLICK_ATTEMPT_MS });
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      note(hook, `attempt ${attempt} did not go through: ${shortReason(error)}`);
    }
  }
}

/**
 * Dismisses the pop-ups that can cover the form, whatever their order or stacking: each round
 * clicks the one on top (clickFirstClickable), so a stack takes a round per layer.
 */
async function dismissPopups(page: Page, note: JoinNote): Promise<void> {
  const popups = buttonsNamed(page, MEET_HOOKS.dismissButtonTexts);
  for (let round = 0; round < MAX_POPUP_ROUNDS; round++) {
    const dismissed = await clickFirstClickable(popups);
    if (dismissed === null) return;
    note("popup", dismissed);
  }
}
