import type { Locator, Page } from "playwright";
import type { JoinNote, PlatformAdapter } from "../adapter.js";
import { exactly, firstVisible, ignoreNote, startsWith } from "../variants.js";
import { TEAMS_HOOKS } from "./selectors.js";
import { teamsSnapshot } from "./snapshot.js";
import { teamsMeetingUrl } from "./url.js";

const { launcher, prejoin, call } = TEAMS_HOOKS;

/** Teams' web client takes seconds to load after the launcher; a dead end counts as loaded. */
const CLIENT_LOAD_TIMEOUT_MS = 30_000;
const STEP_TIMEOUT_MS = 15_000;

export const teamsAdapter: PlatformAdapter = {
  platform: "teams",
  hooks: TEAMS_HOOKS,
  snapshot: teamsSnapshot,

  meetingUrl: (info, urls) => teamsMeetingUrl(info, urls.teamsWeb),

  async join(page: Page, { displayName, note = ignoreNote }): Promise<void> {
    const continueOnWeb = await firstVisible([
      [launcher.joinOnWeb, page.locator(launcher.joinOnWeb)],
      ...launcher.joinOnWebTexts.map(
        (text) => [`"${text}"`, page.getByRole("button", { name: exactly([text]) })] as const,
      ),
    ]);
    note("launcher", continueOnWeb?.variant ?? "none shown");
    if (continueOnWeb) await continueOnWeb.locator.click({ timeout: STEP_TIMEOUT_MS });

    // The web client loads its pre-join form, or says why there is none (meeting not found,
    // sign-in wall, ...). On a dead end the runner reads the page and reports it; not a join error.
    if (!(await showsJoinForm(page))) return;

    await page.locator(prejoin.nameInput).fill(displayName, { timeout: STEP_TIMEOUT_MS });
    await switchOff(page, note, "camera", prejoin.cameraSwitch);
    await switchOff(page, note, "microphone", prejoin.microphoneSwitch);
    // Computer audio with a muted microphone: the bot hears (and records) the meeting.
    const computerAudio = page.getByRole("radio", { name: startsWith(prejoin.computerAudioText) });
    const offered = (await computerAudio.count()) > 0;
    if (offered) await computerAudio.first().check({ timeout: STEP_TIMEOUT_MS });
    note("audioOption", offered ? `checked "${prejoin.computerAudioText}"` : "none offered");

    await page.locator(prejoin.joinButton).first().click({ timeout: STEP_TIMEOUT_MS });
    // With camera and microphone off Teams may ask "Are you sure you don't want audio or video?".
    const asked = await asksToConfirmNoAudioVideo(page);
    note("noAudioVideoConfirm", asked ? `clicked "${prejoin.noAudioVideoContinueText}"` : "not asked");
    if (asked) {
      await page
        .getByRole("button", { name: prejoin.noAudioVideoContinueText, exact: true })
        .click({ timeout: STEP_TIMEOUT_MS });
    }
  },

  async leave(page: Page): Promise<void> {
    // In the call and in the lobby the hang-up button leaves; a lobby without one has Cancel.
    for (const selector of [call.hangup, prejoin.cancelButton]) {
      const button = page.locator(selector).first();
      if (await button.isVisible().catch(() => false)) {
        await button.click({ timeout: 3_000 }).catch(() => {});
        return;
      }
    }
  },
};

/** Waits until the pre-join form (true) or a screen that says why there is none (false). */
async function showsJoinForm(page: Page): Promise<boolean> {
  const verdict = await page.waitForFunction(
    ({ nameInput, loginForm, phrases }) => {
      if (document.querySelector(nameInput)) return "form";
      if (document.querySelector(loginForm)) return "other";
      const text = document.body?.innerText ?? "";
      // Anything else (the launcher, a loading client) means: keep waiting.
      return phrases.some((phrase) => text.includes(phrase)) ? "other" : false;
    },
    {
      nameInput: prejoin.nameInput,
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
 * Teams' device switches report "on" through aria-checked or the checked property; notes which
 * of the two said so (or that the switch was off, or missing).
 */
async function switchOff(page: Page, note: JoinNote, hook: string, selector: string): Promise<void> {
  const toggle: Locator = page.locator(selector).first();
  if ((await toggle.count()) === 0) {
    note(hook, `no ${selector}`);
    return;
  }
  const state = await toggle.evaluate((element) => ({
    ariaChecked: element.getAttribute("aria-checked") === "true",
    checked: (element as HTMLInputElement).checked === true,
  }));
  if (!state.ariaChecked && !state.checked) {
    note(hook, `already off: ${selector}`);
    return;
  }
  await toggle.click({ timeout: STEP_TIMEOUT_MS });
  note(hook, `switched off: ${selector} (on by ${state.ariaChecked ? "aria-checked" : "checked"})`);
}
