import type { Browser, Page } from "playwright";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { LiveNote } from "../../platforms/live.js";
import { setCamera, toggleOn } from "../../platforms/live-actions.js";
import { turnOnMeetCaptions } from "../../platforms/meet/captions.js";
import { sendMeetChat } from "../../platforms/meet/chat.js";
import { turnOnTeamsCaptions } from "../../platforms/teams/captions.js";
import { turnOnZoomCaptions } from "../../platforms/zoom/captions.js";
import { launchTestChromium, type SharedPage, sharedPage } from "../helpers/mock-browser.js";

/**
 * The captions controls of each platform on the arrangements the notes describe and the mock pages
 * do not draw, in real Chromium: Teams' signed-in path (More → Language and speech → Show live
 * captions), Zoom's Captions item that opens a submenu (public bots click twice) under a More
 * button labelled "More", Meet's shortcut where the toolbar has no captions button (and its
 * language list), and Meet's "In-call messages" chat button with a `[role="textbox"]` composer.
 * Each page is a few lines of script that behave like the real control.
 */
let browser: Browser;
let shared: SharedPage;
let page: Page;
const notes: Array<[string, string]> = [];
const note: LiveNote = (hook, variant) => notes.push([hook, variant]);

beforeAll(async () => {
  browser = await launchTestChromium();
  shared = await sharedPage(browser);
  page = shared.page;
});
afterAll(async () => {
  await browser?.close();
});
beforeEach(() => {
  notes.length = 0;
});
afterEach(async () => {
  page = await shared.reset();
});

const show = (body: string, script: string) =>
  page.setContent(`<!doctype html><body>${body}<script>${script}</script></body>`);

/** Script helpers in the page: a menu item button, and a menu of items. */
const HELPERS = `
  const item = (label, role, action) => {
    const b = document.createElement("button");
    b.setAttribute("role", role);
    b.textContent = label;
    b.onclick = action;
    return b;
  };
  const menuOf = (...items) => {
    const m = document.createElement("div");
    m.setAttribute("role", "menu");
    m.append(...items);
    document.body.append(m);
    return m;
  };
`;

describe("turning captions on", () => {
  it("Teams, signed in: More → Language and speech → Show live captions", async () => {
    await show(
      `<div role="toolbar"><button id="callingButtons-showMoreBtn" aria-label="More">More</button></div><div id="stage"></div>`,
      `${HELPERS}
      let menu = null;
      document.getElementById("callingButtons-showMoreBtn").onclick = () => {
        if (menu) { menu.remove(); menu = null; return; }
        menu = menuOf(item("Meeting info", "menuitem", () => {}), item("Language and speech", "menuitem", () => {
          menu.append(menuOf(item("Show live captions", "menuitem", () => {
            document.querySelectorAll('[role="menu"]').forEach((m) => m.remove());
            menu = null;
            // Empty until someone speaks.
            document.getElementById("stage").innerHTML = '<div data-tid="closed-caption-renderer-wrapper"></div>';
          })));
        }));
      };`,
    );
    expect(await turnOnTeamsCaptions(page, { note })).toEqual({ on: true, language: null });
    expect(notes).toEqual([
      ["captionsMenu", "Language and speech"],
      ["captionsItem", "Show live captions"],
    ]);
    expect(await page.getByRole("menu").count()).toBe(0);
  });

  it("Zoom: a More button labelled More, Captions opening a submenu with Show Captions", async () => {
    await show(
      `<div id="wc-footer"><button aria-label="More">More</button></div><div id="host"></div>`,
      `${HELPERS}
      let menu = null;
      const close = () => { document.querySelectorAll('[role="menu"]').forEach((m) => m.remove()); menu = null; };
      document.querySelector("#wc-footer button").onclick = () => {
        if (menu) return close();
        menu = menuOf(item("Captions", "menuitem", () => {
          menu.append(menuOf(item("Show Captions", "menuitem", () => {
            close();
            document.getElementById("host").innerHTML = '<div id="live-transcription-subtitle"></div>';
          })));
        }));
      };`,
    );
    expect(await turnOnZoomCaptions(page, { note })).toEqual({ on: true, language: null });
    expect(notes).toEqual([
      ["captionsItem", "Captions"],
      ["captionsItem", "Show Captions"],
    ]);
  });

  it("Zoom: no captions item means the host has not enabled captions; the menu is closed again", async () => {
    await show(
      `<div id="wc-footer"><button aria-label="More meeting control">More</button></div>`,
      `${HELPERS}
      let menu = null;
      document.querySelector("#wc-footer button").onclick = () => {
        if (menu) { menu.remove(); menu = null; return; }
        menu = menuOf(item("Settings", "menuitem", () => {}));
      };`,
    );
    expect(await turnOnZoomCaptions(page, { note })).toEqual({
      on: false,
      reason: "Zoom's More menu has no captions item: the host has not enabled captions",
    });
    expect(await page.getByRole("menu").count()).toBe(0);
  });

  it("Meet: the shortcut c where the toolbar shows no captions button, then the language asked for", async () => {
    await show(
      `<ul role="listbox" aria-label="Meeting language">
        <li role="option" data-value="en-US" aria-selected="true">English</li>
        <li role="option" data-value="de-DE" aria-selected="false">German</li>
      </ul><div id="host"></div>`,
      `document.addEventListener("keydown", (e) => {
        if (e.key === "c") document.getElementById("host").innerHTML = '<div role="region" aria-label="Captions"></div>';
      });`,
    );
    expect(await turnOnMeetCaptions(page, { language: "de", note })).toEqual({ on: true, language: "de-DE" });
    expect(notes).toEqual([
      ["captionsButton", 'none shown: pressed "c"'],
      ["captionsLanguage", "de-DE"],
    ]);
  });

  it("Meet: a disabled captions button means captions are off for the meeting", async () => {
    await show(`<button aria-label="Turn on captions" disabled>Captions</button>`, "");
    expect(await turnOnMeetCaptions(page, { note })).toEqual({
      on: false,
      reason: "Meet's captions button is disabled: captions are off for this meeting",
    });
  });
});

describe("sending chat", () => {
  it("Meet: an 'In-call messages' button and a role=textbox composer, sent with Enter, done once it cleared", async () => {
    await show(
      `<button aria-label="In-call messages" aria-pressed="false">Chat</button><aside id="panel" hidden>
        <div role="textbox" contenteditable="true" aria-label="Send a message"></div></aside>`,
      `const sent = [];
      window.sent = sent;
      document.querySelector("button").onclick = () => { document.getElementById("panel").hidden = false; };
      const box = document.querySelector('[role="textbox"]');
      box.addEventListener("keydown", (e) => {
        if (e.key !== "Enter" || e.shiftKey) return;
        e.preventDefault();
        sent.push(box.innerText);
        setTimeout(() => box.replaceChildren(), 50);
      });`,
    );
    await sendMeetChat(page, "Two words", { note });
    expect(await page.evaluate(() => (window as unknown as { sent: string[] }).sent)).toEqual(["Two words"]);
    expect(notes).toEqual([
      ["chatButton", "clicked"],
      ["chatSend", "Enter"],
    ]);
  });
});

describe("a device toggle", () => {
  it("is clicked again when its first click did not take (the label still offers the same action)", async () => {
    await show(
      `<button id="video-button" aria-label="Turn camera off">Camera</button>`,
      `let clicks = 0;
      const button = document.getElementById("video-button");
      // The first click is lost, as on a starved page; the second turns the camera off.
      button.onclick = () => {
        clicks += 1;
        if (clicks > 1) button.setAttribute("aria-label", "Turn camera on");
      };`,
    );
    const hooks = { onButton: '[aria-label="Turn camera off"]', offButton: '[aria-label="Turn camera on"]' };
    await setCamera(page, hooks, false, note);
    expect(await toggleOn(page, hooks)).toBe(false);
    expect(notes).toEqual([
      ["camera", "turned off"],
      ["camera", "clicked again: 5000 ms after the click it still was on"],
    ]);
  });
});
