import type { Locator, Page } from "playwright";
import {
  type CameraHooks,
  ChatUnavailable,
  type LiveNote,
  type MicrophoneHooks,
  MutedByHost,
} from "./live.js";
import { exactly } from "./variants.js";

/**
 * The clicks and typing of the live meeting that are the same on every platform, given its hooks:
 * opening the chat panel, sending a message, finding a menu item. Node side (Playwright).
 */

/** How long the chat button may take to show once in the call (the toolbar can render late). */
const CHAT_BUTTON_MS = 5_000;
/**
 * A click on the chat's, a menu's or the captions' button, and from it to what it opens: 10 s, as a
 * starved page took over 5 s to let a chat message's send through (a chat command has 30 s).
 */
const OPEN_MS = 10_000;
/** A read of an element found a moment ago (it may have gone since: never the default 30 s). */
export const READ_MS = 2_000;
/** From Enter to the platform taking the message (the composer clears). */
const SEND_MS = 10_000;

export interface ChatActionHooks {
  /** The button that shows the chat panel. */
  openButton: string;
  /** The same button while the panel shows (it would close it): never clicked then. */
  openedButton: string;
  /** The composer: a textarea or a contenteditable editor. */
  composer: string;
  /** The send button (Enter is tried first). */
  sendButton: string;
  /** Buttons of tips that lie over the composer until dismissed (Zoom's guest tip). */
  tipDismissTexts: string[];
}

/** Whether a control says it cannot be used (`disabled`, `aria-disabled="true"`). */
export async function isDisabled(locator: Locator): Promise<boolean> {
  return locator
    .evaluate(
      (element) =>
        (element as HTMLButtonElement).disabled === true || element.getAttribute("aria-disabled") === "true",
      undefined,
      { timeout: READ_MS },
    )
    .catch(() => false);
}

/** The first visible element of a selector list. */
export const shown = (page: Page, selector: string): Locator =>
  page.locator(selector).filter({ visible: true }).first();

/** A visible menu item (any of `roles`) whose accessible name is one of `texts`. */
export function menuItem(
  page: Page,
  roles: readonly ("menuitem" | "menuitemcheckbox")[],
  texts: readonly string[],
) {
  return roles
    .map((role) => page.getByRole(role, { name: exactly(texts) }))
    .reduce((all, locator) => all.or(locator))
    .filter({ visible: true })
    .first();
}

export const isVisible = (locator: Locator) => locator.isVisible().catch(() => false);

/**
 * The first of `texts`, in their order, shown as a menu item: the most specific label first (a
 * submenu's "Show Captions" before the "Captions" item that opened it, both on screen).
 */
export async function preferredItem(
  page: Page,
  roles: readonly ("menuitem" | "menuitemcheckbox")[],
  texts: readonly string[],
): Promise<{ label: string; locator: Locator } | null> {
  for (const label of texts) {
    const locator = menuItem(page, roles, [label]);
    if (await isVisible(locator)) return { label, locator };
  }
  return null;
}

/**
 * Whether an element is in the page, shown or not. Captions regions are empty (so not visible)
 * until someone speaks: they are waited for by presence.
 */
export const isPresent = async (locator: Locator) => (await locator.count().catch(() => 0)) > 0;

/** Waits until `locator` is in the page; false after `timeoutMs`. */
export const appears = (locator: Locator, timeoutMs: number) =>
  locator
    .first()
    .waitFor({ state: "attached", timeout: timeoutMs })
    .then(
      () => true,
      () => false,
    );

/**
 * Shows the chat panel: dismisses a tip over the composer, and clicks the chat button only while
 * no composer is shown (the same button closes an open panel). Throws ChatUnavailable when the
 * call has no chat button or a disabled one, an Error when the panel does not open.
 */
export async function openChatPanel(page: Page, hooks: ChatActionHooks, note: LiveNote): Promise<void> {
  const composer = shown(page, hooks.composer);
  if (await dismissTip(page, hooks, note)) await composer.waitFor({ timeout: OPEN_MS }).catch(() => {});
  if (await isVisible(composer)) return;
  const button = shown(page, hooks.openButton);
  try {
    await button.waitFor({ state: "visible", timeout: CHAT_BUTTON_MS });
  } catch {
    throw new ChatUnavailable(`the call shows no chat button (${hooks.openButton})`);
  }
  if (await isDisabled(button)) throw new ChatUnavailable("the call's chat button is disabled");
  const opened = await button.evaluate((element, selector) => element.matches(selector), hooks.openedButton, {
    timeout: READ_MS,
  });
  if (opened) throw new Error("the chat button says the panel shows, but no composer is on screen");
  await button.click({ timeout: OPEN_MS });
  note("chatButton", "clicked");
  const tip = tipButton(page, hooks);
  await composer
    .or(tip)
    .first()
    .waitFor({ state: "visible", timeout: OPEN_MS })
    .catch(() => {
      throw new Error("the chat panel did not open");
    });
  if (await dismissTip(page, hooks, note)) await composer.waitFor({ timeout: OPEN_MS });
}

const tipButton = (page: Page, hooks: ChatActionHooks) =>
  page
    .getByRole("button", { name: exactly(hooks.tipDismissTexts) })
    .filter({ visible: true })
    .first();

async function dismissTip(page: Page, hooks: ChatActionHooks, note: LiveNote): Promise<boolean> {
  const tip = tipButton(page, hooks);
  if (!(await isVisible(tip))) return false;
  await tip.click({ timeout: OPEN_MS });
  note("chatTip", `dismissed with one of "${hooks.tipDismissTexts.join('", "')}"`);
  return true;
}

/**
 * Opens the panel, types `text` and sends it with Enter (the send button if Enter did not take):
 * done once the composer is empty again, the platform's sign that it took the message. Lines
 * after the first go in with Shift+Enter, which is a new line in every composer.
 */
export async function sendChatMessage(
  page: Page,
  hooks: ChatActionHooks,
  text: string,
  note: LiveNote,
): Promise<void> {
  await openChatPanel(page, hooks, note);
  const composer = shown(page, hooks.composer);
  const plain = await composer.evaluate(
    (element) => element instanceof HTMLTextAreaElement || element instanceof HTMLInputElement,
    undefined,
    { timeout: OPEN_MS },
  );
  if (plain) {
    await composer.fill(text);
  } else {
    // A rich editor (ProseMirror, CKEditor) takes typed input, not a value: real input events.
    await composer.fill("");
    for (const [i, line] of text.split(/\r?\n/).entries()) {
      if (i > 0) await composer.press("Shift+Enter");
      if (line) await page.keyboard.insertText(line);
    }
  }
  await composer.press("Enter");
  if (await composerCleared(page, hooks.composer, SEND_MS)) {
    note("chatSend", "Enter");
    return;
  }
  const send = shown(page, hooks.sendButton);
  if ((await isVisible(send)) && !(await isDisabled(send))) {
    await send.click({ timeout: OPEN_MS });
    if (await composerCleared(page, hooks.composer, SEND_MS)) {
      note("chatSend", "send button");
      return;
    }
  }
  throw new Error("the message stayed in the composer: the platform did not take it");
}

/** Waits until the shown composer is empty; false after `timeoutMs`. */
async function composerCleared(page: Page, selector: string, timeoutMs: number): Promise<boolean> {
  return page
    .waitForFunction(
      (composerSelector) => {
        const element = [...document.querySelectorAll(composerSelector)].find(
          (candidate) => candidate.getClientRects().length > 0,
        );
        if (!element) return false;
        const value =
          element instanceof HTMLTextAreaElement || element instanceof HTMLInputElement
            ? element.value
            : (element as HTMLElement).innerText;
        return value.trim() === "";
      },
      selector,
      { timeout: timeoutMs, polling: 100 },
    )
    .then(
      () => true,
      () => false,
    );
}

/**
 * From a click on a device toggle to its label flipping (or the host's refusal showing). The label
 * flips once the platform has taken the change (a round trip, and the device started or stopped):
 * a starved page took over 3 s for a camera off in one CI run and over 10 s in another. Inside a
 * command's deadline (30 s for the camera's).
 */
const TOGGLE_FLIP_MS = 20_000;
/**
 * A toggle still offering the same action this long after its click is clicked again: a starved
 * page once kept a camera on for 20 s after a click that Playwright reported done (the click, or
 * the page's request behind it, was lost). The platforms flip the label as the click lands, so a
 * label unchanged after seconds is a click not taken, not one still under way.
 */
const TOGGLE_RECLICK_MS = 5_000;

/** A device's toggle in the call, labelled with what a click would do (MicrophoneHooks, CameraHooks). */
type ToggleHooks = Pick<MicrophoneHooks, "onButton" | "offButton">;

/** Whether a device is on in the call, as its toggle says; null when neither label shows. */
export async function toggleOn(page: Page, hooks: ToggleHooks): Promise<boolean | null> {
  if (await isVisible(shown(page, hooks.onButton))) return true;
  if (await isVisible(shown(page, hooks.offButton))) return false;
  return null;
}

/** Whether the bot's microphone is on in the call, as its toggle says; null when neither label shows. */
export const microphoneOn = toggleOn;

/** Whether a notice that the host muted the bot is on screen. */
export async function hostMutedNotice(page: Page, hooks: MicrophoneHooks): Promise<boolean> {
  const notice = page.getByText(new RegExp(hooks.hostMutedPattern, "i")).filter({ visible: true }).first();
  return isVisible(notice);
}

/**
 * Turns a device on or off with the call's toggle, confirmed by the toggle's label flipping. While
 * turning on, `refused` is asked between looks: when it says so, the click did not take for a
 * reason the page gave, and that is thrown. Any other failure is an Error.
 */
async function flipToggle(
  page: Page,
  hooks: ToggleHooks,
  on: boolean,
  opts: { device: string; note: LiveNote; refused?: () => Promise<Error | null> },
): Promise<void> {
  const { device, note, refused } = opts;
  const state = await toggleOn(page, hooks);
  if (state === on) return;
  if (state === null) throw new Error(`the call shows no ${device} toggle`);
  const deadline = Date.now() + TOGGLE_FLIP_MS;
  const toggle = shown(page, on ? hooks.offButton : hooks.onButton);
  await toggle.click({ timeout: TOGGLE_FLIP_MS });
  note(device, on ? "turned on" : "turned off");
  let clickedAt = Date.now();
  for (;;) {
    const now = await toggleOn(page, hooks);
    if (now === on) return;
    const refusal = on && refused ? await refused() : null;
    if (refusal) throw refusal;
    if (Date.now() >= deadline) break;
    if (now === !on && Date.now() - clickedAt >= TOGGLE_RECLICK_MS) {
      await toggle.click({ timeout: Math.max(1, deadline - Date.now()) }).catch(() => {});
      note(
        device,
        `clicked again: ${TOGGLE_RECLICK_MS} ms after the click it still was ${on ? "off" : "on"}`,
      );
      clickedAt = Date.now();
    }
    await page.waitForTimeout(100);
  }
  throw new Error(`the ${device} did not turn ${on ? "on" : "off"}`);
}

/**
 * Turns the bot's microphone on or off with the call's toggle. Unmuting that does not take while
 * the host's notice shows throws MutedByHost; any other failure, an Error.
 */
export function setMicrophone(
  page: Page,
  hooks: MicrophoneHooks,
  on: boolean,
  note: LiveNote,
): Promise<void> {
  return flipToggle(page, hooks, on, {
    device: "microphone",
    note,
    refused: async () =>
      (await hostMutedNotice(page, hooks)) ? new MutedByHost("the host does not let the bot unmute") : null,
  });
}

/** Turns the bot's camera on or off with the call's toggle (confirmed by its label flipping). */
export function setCamera(page: Page, hooks: CameraHooks, on: boolean, note: LiveNote): Promise<void> {
  return flipToggle(page, hooks, on, { device: "camera", note });
}
