import type { Locator, Page } from "playwright";
import { type JoinNote, LEAVE_TIMEOUT_MS, type PlatformAdapter } from "../adapter.js";
import { incomingVideoByMenu } from "../incoming-video.js";
import {
  alternatives,
  clickFirstClickable,
  exactly,
  firstVisible,
  ignoreNote,
  startsWith,
  type Variants,
} from "../variants.js";
import { turnOnTeamsCaptions } from "./captions.js";
import { openTeamsChat, sendTeamsChat } from "./chat.js";
import { TEAMS_HOOKS, TEAMS_LIVE_HOOKS, TEAMS_SIGN_IN } from "./selectors.js";
import { teamsSnapshot } from "./snapshot.js";
import { teamsMeetingUrl, withBotToken } from "./url.js";

const { launcher, prejoin, call, overlays } = TEAMS_HOOKS;

/** Teams' web client takes seconds to load after the launcher; a dead end counts as loaded. */
const CLIENT_LOAD_TIMEOUT_MS = 30_000;
const STEP_TIMEOUT_MS = 15_000;
/**
 * How long an opened People panel may take to show its roster before People is clicked again:
 * generous, as a second click on a panel that was only slow would close it.
 */
const ROSTER_RENDER_MS = 5_000;

export const teamsAdapter: PlatformAdapter = {
  platform: "teams",
  hooks: TEAMS_HOOKS,
  signIn: TEAMS_SIGN_IN,
  live: {
    captions: TEAMS_LIVE_HOOKS.captions,
    chat: TEAMS_LIVE_HOOKS.chat,
    microphone: TEAMS_LIVE_HOOKS.microphone,
    camera: TEAMS_LIVE_HOOKS.camera,
    turnOnCaptions: turnOnTeamsCaptions,
    openChat: openTeamsChat,
    sendChat: sendTeamsChat,
    turnOffIncomingVideo: incomingVideoByMenu(TEAMS_LIVE_HOOKS.incomingVideo, "Teams"),
  },
  snapshot: teamsSnapshot,

  meetingUrl: (info, urls, extras) => withBotToken(teamsMeetingUrl(info, urls.teamsWeb), extras?.botToken),

  async join(page: Page, { displayName, note = ignoreNote, confirmSignedIn, camera = false }): Promise<void> {
    const continueOnWeb = await firstVisible([
      [launcher.joinOnWeb, page.locator(launcher.joinOnWeb)],
      ...launcher.joinOnWebTexts.map(
        (text) => [`"${text}"`, page.getByRole("button", { name: exactly([text]) })] as const,
      ),
    ]);
    note("launcher", continueOnWeb?.variant ?? "none shown");
    if (continueOnWeb) {
      await clickPastOverlays(page, [[continueOnWeb.variant, continueOnWeb.locator]], {
        note,
        done: hidden(continueOnWeb.locator),
      });
    }

    // The web client loads its pre-join form, or says why there is none (meeting not found,
    // sign-in wall, ...). On a dead end the runner reads the page and reports it; not a join error.
    if (!(await showsJoinForm(page))) return;
    await confirmSignedIn?.();

    // Typing needs no click, so a dialog over the form does not stop it. Signed in, there is no
    // name to type: the meeting shows the account's.
    if (confirmSignedIn) note("nameInput", "signed in: no name to type");
    else await page.locator(prejoin.nameInput).fill(displayName, { timeout: STEP_TIMEOUT_MS });
    // The camera stays on only when the bot shows a picture.
    await setSwitch(page, note, "camera", prejoin.cameraSwitch, camera);
    await setSwitch(page, note, "microphone", prejoin.microphoneSwitch, false);
    // Computer audio with a muted microphone: the bot hears (and records) the meeting.
    const computerAudio = page.getByRole("radio", { name: startsWith(prejoin.computerAudioText) }).first();
    const offered = (await computerAudio.count()) > 0;
    if (offered && !(await computerAudio.isChecked())) {
      await clickPastOverlays(page, [[`"${prejoin.computerAudioText}"`, computerAudio]], {
        note,
        done: () => computerAudio.isChecked(),
      });
    }
    note("audioOption", offered ? `checked "${prejoin.computerAudioText}"` : "none offered");

    // Once clicked, Join now is disabled (or gone) while the request is out, or stays enabled
    // behind the no-audio/video confirmation, which is its effect too: a starved page's click that
    // landed but timed out, clicked again, asked twice and left the bot in the pre-join form.
    const join = page.locator(prejoin.joinButton).first();
    const proceed = page.getByRole("button", { name: prejoin.noAudioVideoContinueText, exact: true }).first();
    await clickPastOverlays(page, [[prejoin.joinButton, join]], {
      note,
      done: async () =>
        !(await join.isEnabled().catch(() => false)) || (await proceed.isVisible().catch(() => false)),
    });
    // With camera and microphone off Teams may ask "Are you sure you don't want audio or video?".
    if (await asksToConfirmNoAudioVideo(page)) {
      await clickPastOverlays(page, [[`"${prejoin.noAudioVideoContinueText}"`, proceed]], {
        note,
        done: hidden(proceed),
      });
      note("noAudioVideoConfirm", `clicked "${prejoin.noAudioVideoContinueText}"`);
    } else {
      note("noAudioVideoConfirm", "not asked");
    }
  },

  /**
   * Opens the People panel when no roster item is rendered: real pages render the roster only
   * while the panel is open, and it is often closed on admission. The stage tiles name the
   * others meanwhile, but the roster is the complete list (tiles are only those on the stage).
   */
  async afterAdmission(page: Page, { note = ignoreNote } = {}): Promise<void> {
    const items = page.locator(call.rosterItem);
    if ((await items.count()) > 0) {
      note("roster", "rendered");
      return;
    }
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const opened = await clickPastOverlays(
        page,
        call.peopleButton.map((selector) => [selector, page.locator(selector)] as const),
        { note, done: async () => (await items.count()) > 0 },
      );
      // The panel shows its roster as it opens. A toast that lands between Playwright's check of
      // what is under the pointer and its click takes the click instead: then nothing opened, and
      // People is clicked again (the likely cause of a loaded CI run's teams-toasts call that
      // ended with no participant, the failed step having been only a warning).
      const shown = await items
        .first()
        .waitFor({
          state: "attached",
          timeout: Math.max(1, Math.min(ROSTER_RENDER_MS, deadline - Date.now())),
        })
        .then(
          () => true,
          () => false,
        );
      if (shown) {
        note("roster", `opened with ${opened ?? "a click that timed out as it landed"}`);
        return;
      }
      if (Date.now() >= deadline) throw new Error("the People panel showed no roster");
      note("roster", "not shown after the click; clicking People again");
    }
  },

  async leave(page: Page): Promise<string | null> {
    // In the call and in the lobby the hang-up button leaves; a lobby without one has Cancel.
    // Best effort: whichever is on top, without waiting out what covers them.
    const buttons = [...alternatives(call.hangup), prejoin.cancelButton];
    const clicked = await clickFirstClickable(
      buttons.map((selector) => [selector, page.locator(selector)] as const),
      { clickTimeoutMs: LEAVE_TIMEOUT_MS },
    );
    return clicked === null ? "no hang-up or Cancel button could be clicked" : null;
  },
};

/**
 * Clicks one of `targets` (variants of one control), dismissing on the way whatever dialog, banner
 * or toast lies over it: each round clicks what is on top, a target first; a covered or
 * intercepted click moves to the next candidate, and a toast with no button is waited out by
 * the next round. Returns the target variant clicked, or null when `done` says the click's
 * effect is there although no click reported success; throws when neither happens within the step.
 *
 * Trap: on a loaded machine a click can land and still time out, so before trying again `done`
 * is asked (a second click would undo a switch, or wait forever for a dialog it closed).
 */
async function clickPastOverlays(
  page: Page,
  targets: Variants,
  { note, done }: { note: JoinNote; done: () => Promise<boolean> },
): Promise<string | null> {
  const names = new Set(targets.map(([variant]) => variant));
  const anyTarget = targets.map(([, locator]) => locator).reduce((all, locator) => all.or(locator));
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (let round = 0; ; round++) {
    if (round > 0 && (await done())) return null;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`could not click ${[...names].join(" or ")}: covered or gone`);
    // Nothing to click yet: wait for it rather than spin.
    await anyTarget.filter({ visible: true }).first().waitFor({ state: "visible", timeout: left });
    const clicked = await clickFirstClickable([...targets, ...(await dismissButtons(page))]);
    if (clicked !== null && names.has(clicked)) return clicked;
    if (clicked !== null) note("overlay", `dismissed: ${clicked}`);
  }
}

const hidden = (locator: Locator) => async () => !(await locator.isVisible().catch(() => false));

/** Every "Dismiss" of a dialog, banner or toast, each a candidate of its own (the visible ones count). */
async function dismissButtons(page: Page): Promise<Variants> {
  const buttons = page
    .locator(overlays.container)
    .getByRole("button", { name: exactly(overlays.dismissTexts) });
  const count = await buttons.count();
  return Array.from({ length: count }, (_, i) => [
    `"${overlays.dismissTexts.join('" / "')}" #${i + 1}`,
    buttons.nth(i),
  ]);
}

/** Waits until the pre-join form (true) or a screen that says why there is none (false). */
async function showsJoinForm(page: Page): Promise<boolean> {
  const verdict = await page.waitForFunction(
    ({ nameInput, joinButton, loginForm, phrases }) => {
      // A guest's form has the name field, a signed-in one only Join now.
      if (document.querySelector(nameInput) || document.querySelector(joinButton)) return "form";
      if (document.querySelector(loginForm)) return "other";
      const text = document.body?.innerText ?? "";
      // Anything else (the launcher, a loading client) means: keep waiting.
      return phrases.some((phrase) => text.includes(phrase)) ? "other" : false;
    },
    {
      nameInput: prejoin.nameInput,
      joinButton: prejoin.joinButton,
      loginForm: TEAMS_HOOKS.loginForm,
      phrases: Object.values(TEAMS_HOOKS.texts).flat(),
    },
    { timeout: CLIENT_LOAD_TIMEOUT_MS },
  );
  return (await verdict.jsonValue()) === "form";
}

/**
 * After Join now: true when the no-audio/video confirmation shows; false once the request went
 * out (the join button is gone or disabled, as it stays in the lobby).
 */
async function asksToConfirmNoAudioVideo(page: Page): Promise<boolean> {
  const verdict = await page.waitForFunction(
    ({ joinButton, continueText }) => {
      const buttons = [...document.querySelectorAll("button")];
      if (buttons.some((button) => button.textContent?.trim() === continueText)) return "modal";
      const join = document.querySelector(joinButton) as HTMLButtonElement | null;
      return !join || join.disabled ? "sent" : false;
    },
    { joinButton: prejoin.joinButton, continueText: prejoin.noAudioVideoContinueText },
    { timeout: STEP_TIMEOUT_MS },
  );
  return (await verdict.jsonValue()) === "modal";
}

/**
 * Turns one of Teams' device switches on or off. They report "on" through aria-checked or the
 * checked property; turning one off notes which of the two said so (or that it was already as
 * wanted, or missing).
 */
async function setSwitch(
  page: Page,
  note: JoinNote,
  hook: string,
  selector: string,
  on: boolean,
): Promise<void> {
  const toggle: Locator = page.locator(selector).first();
  if ((await toggle.count()) === 0) {
    note(hook, `no ${selector}`);
    return;
  }
  const readState = () =>
    toggle.evaluate((element) => ({
      ariaChecked: element.getAttribute("aria-checked") === "true",
      checked: (element as HTMLInputElement).checked === true,
    }));
  const isOn = async () => {
    const now = await readState();
    return now.ariaChecked || now.checked;
  };
  const state = await readState();
  const wanted = on ? "on" : "off";
  if ((state.ariaChecked || state.checked) === on) {
    note(hook, `already ${wanted}: ${selector}`);
    return;
  }
  await clickPastOverlays(page, [[selector, toggle]], { note, done: async () => (await isOn()) === on });
  note(
    hook,
    on
      ? `switched on: ${selector}`
      : `switched off: ${selector} (on by ${state.ariaChecked ? "aria-checked" : "checked"})`,
  );
}
