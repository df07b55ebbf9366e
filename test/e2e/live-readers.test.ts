import type { Browser, Page } from "playwright";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readCaptions, readChat } from "../../platforms/live.js";
import { MEET_LIVE_HOOKS } from "../../platforms/meet/selectors.js";
import { TEAMS_LIVE_HOOKS } from "../../platforms/teams/selectors.js";
import { ZOOM_LIVE_HOOKS } from "../../platforms/zoom/selectors.js";
import { launchTestChromium, type SharedPage, sharedPage } from "../helpers/mock-browser.js";

/**
 * The in-page readers of captions and chat (platforms/live.ts) in real Chromium, on the layouts
 * the notes describe beyond what the mock pages draw: Meet's real message groups (`.Ss4fHf`, the
 * sender in a nested header), a lone run, Teams' authors inside the first message of a run, Zoom's
 * namesakes told apart by their avatars' colours and a caption line without a text element.
 */
let browser: Browser;
let shared: SharedPage;
let page: Page;
beforeAll(async () => {
  browser = await launchTestChromium();
  // Code transformed for the test may name its functions with esbuild's helper.
  shared = await sharedPage(browser, (page) => page.addInitScript("window.__name = (f) => f"));
  page = shared.page;
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  page = await shared.reset();
});

const show = (html: string) => page.setContent(`<!doctype html><body>${html}</body>`);

describe("readChat", () => {
  it("Meet: a run's sender carried down its group, the headerless run is the bot's, the pinned copy left out", async () => {
    await show(`
      <div class="Sd72u" data-message-id="spaces/s/messages/1"><div>Pinned by the host</div><div>Hello</div></div>
      <div class="grp"><div class="HNucUd"><div class="poVWob">Alice</div><div>10:01</div></div>
        <div class="RLrADb" data-message-id="spaces/s/messages/1"><div class="jO4O1" jsname="dTKtvb">Hello</div></div>
        <div class="RLrADb" data-message-id="spaces/s/messages/2"><div class="jO4O1" jsname="dTKtvb">Second</div></div>
      </div>
      <div class="grp"><div class="RLrADb" data-message-id="spaces/s/messages/3"><div class="jO4O1">Mine</div></div></div>
      <div class="grp"><div class="HNucUd"><div class="poVWob">Bob</div></div>
        <div class="RLrADb" data-message-id="spaces/s/messages/4"><div jsname="dTKtvb">From Bob</div></div>
      </div>
      <textarea aria-label="Send a message"></textarea>`);
    expect(await page.evaluate(readChat, MEET_LIVE_HOOKS.chat)).toEqual({
      open: true,
      messages: [
        { id: "spaces/s/messages/1", text: "Hello", sender: { name: "Alice", nth: 0 }, own: false },
        { id: "spaces/s/messages/2", text: "Second", sender: { name: "Alice", nth: 0 }, own: false },
        { id: "spaces/s/messages/3", text: "Mine", sender: { self: true }, own: true },
        { id: "spaces/s/messages/4", text: "From Bob", sender: { name: "Bob", nth: 0 }, own: false },
      ],
    });
  });

  it("Meet: real groups with the sender in a nested header and the id deep inside, a lone run", async () => {
    await show(`
      <div class="Ss4fHf" jsname="Ypafjf"><div><div class="poVWob">Alice</div><div class="MuzmKe">10:00</div></div>
        <div class="beTDc"><div class="er6Kjc"><div class="ptNLrf"><div data-message-id="m1"><div jsname="dTKtvb"><div>Hi all</div></div></div></div></div></div>
      </div>
      <textarea aria-label="Send a message" style="display:none"></textarea>`);
    expect(await page.evaluate(readChat, MEET_LIVE_HOOKS.chat)).toEqual({
      open: false,
      messages: [{ id: "m1", text: "Hi all", sender: { name: "Alice", nth: 0 }, own: false }],
    });
  });

  it("Teams: the author inside the first message of a run, own messages by their class, lines kept", async () => {
    await show(`
      <div role="list">
        <div class="fui-ChatMessage" data-tid="chat-pane-message" data-mid="1"><div data-tid="message-author-name">Alice</div><div data-tid="messageBodyContent"><div>One</div></div></div>
        <div class="fui-ChatMessage" data-tid="chat-pane-message" data-mid="2"><div data-tid="messageBodyContent"><div>Two</div></div></div>
        <div class="fui-ChatMyMessage" data-tid="chat-pane-message" data-mid="3"><div data-tid="messageBodyContent"><p>Mine</p><p>on two lines</p></div></div>
        <div class="fui-ChatMessage" data-tid="chat-pane-message" data-mid="4"><div data-tid="message-author-name">Bob</div><div data-tid="messageBodyContent">Three</div></div>
      </div>
      <div contenteditable="true" aria-label="Type a message"></div>`);
    expect(await page.evaluate(readChat, TEAMS_LIVE_HOOKS.chat)).toEqual({
      open: true,
      messages: [
        { id: "1", text: "One", sender: { name: "Alice", nth: 0 }, own: false },
        { id: "2", text: "Two", sender: { name: "Alice", nth: 0 }, own: false },
        { id: "3", text: "Mine\non two lines", sender: { self: true }, own: true },
        { id: "4", text: "Three", sender: { name: "Bob", nth: 0 }, own: false },
      ],
    });
  });

  it("Zoom: runs under their sender, Me for the bot's own, the element id", async () => {
    await show(`
      <div class="chat-container__chat-list">
        <div class="chat-item-container"><div class="chat-item__sender">Alice</div>
          <div class="new-chat-message__container" id="chat-message-a"><div class="new-chat-message__content">A1</div></div>
          <div class="new-chat-message__container" id="chat-message-b"><div class="new-chat-message__content">A2</div></div>
        </div>
        <div class="chat-item-container"><div class="chat-item__sender">Me</div>
          <div class="new-chat-message__container" id="chat-message-c"><div class="new-chat-message__content">mine</div></div>
        </div>
      </div>`);
    const { messages } = await page.evaluate(readChat, ZOOM_LIVE_HOOKS.chat);
    expect(messages.map((m) => [m.id, m.text, m.own ? "self" : (m.sender as { name: string }).name])).toEqual(
      [
        ["chat-message-a", "A1", "Alice"],
        ["chat-message-b", "A2", "Alice"],
        ["chat-message-c", "mine", "self"],
      ],
    );
  });
});

describe("readCaptions", () => {
  it("Meet: a block per turn with its speaker, You for the bot, the block's key kept while its text is rewritten", async () => {
    await show(`
      <div role="region" aria-label="Captions"><div aria-live="polite">
        <div class="nMcdL"><div class="adE6rb"><img alt=""><span class="NWpY1d">Alice</span></div><div class="ygicle">I will send</div></div>
        <div class="nMcdL"><div class="adE6rb"><img alt=""><span class="NWpY1d">You</span></div><div class="ygicle">ok</div></div>
      </div></div>`);
    const first = await page.evaluate(readCaptions, MEET_LIVE_HOOKS.captions);
    expect(first.on).toBe(true);
    expect(first.entries.map((e) => [e.text, e.speaker])).toEqual([
      ["I will send", { name: "Alice", nth: 0 }],
      ["ok", { self: true }],
    ]);
    await page.evaluate(() => {
      (document.querySelector(".ygicle") as HTMLElement).textContent = "I will";
    });
    const second = await page.evaluate(readCaptions, MEET_LIVE_HOOKS.captions);
    expect(second.entries[0]).toEqual({ ...first.entries[0], text: "I will" });
    expect(new Set(second.entries.map((e) => e.key)).size).toBe(2);
  });

  it("Teams: authors and texts paired by document order", async () => {
    await show(`
      <div data-tid="closed-caption-renderer-wrapper">
        <div class="fui-ChatMessageCompact"><span data-tid="author">Alice</span><span data-tid="closed-caption-text">One</span></div>
        <div class="fui-ChatMessageCompact"><span data-tid="closed-caption-text">Two</span></div>
        <div class="fui-ChatMessageCompact"><span data-tid="author">Bob</span><span data-tid="closed-caption-text">Three</span></div>
      </div>`);
    const { entries } = await page.evaluate(readCaptions, TEAMS_LIVE_HOOKS.captions);
    expect(entries.map((e) => [e.text, e.speaker])).toEqual([
      ["One", { name: "Alice", nth: 0 }],
      ["Two", { name: "Alice", nth: 0 }],
      ["Three", { name: "Bob", nth: 0 }],
    ]);
  });

  it("Zoom: speakers by avatar against the roster, namesakes by colour, the bot by its tag, a line without a text element", async () => {
    const entry = (name: string, avatar: string, tag = "") =>
      `<li class="participants-li"><div class="participants-item__item-layout">${avatar}<span class="participants-item__display-name">${name}</span><span class="participants-item__name-label">${tag}</span></div></li>`;
    await show(`
      <ul>
        ${entry("Alice", '<img class="participants-item__avatar" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">')}
        ${entry("Bob", '<span class="participants-item__avatar" style="background-color: rgb(200, 0, 0)">B</span>')}
        ${entry("Bob", '<span class="participants-item__avatar" style="background-color: rgb(0, 0, 200)">B</span>')}
        ${entry("Note Bot", '<span class="participants-item__avatar" style="background-color: rgb(0, 90, 0)">NB</span>', "(Me)")}
      </ul>
      <div id="live-transcription-subtitle">
        <div class="live-transcription-subtitle__item"><img class="zmu-caption-speaker-icon" src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><span class="live-transcription-subtitle__text">from Alice</span></div>
        <div class="live-transcription-subtitle__item"><span class="zmu-caption-speaker-icon" style="background-color: rgb(0, 0, 200)">B</span><span class="live-transcription-subtitle__text">from the second Bob</span></div>
        <div class="live-transcription-subtitle__item"><span class="zmu-caption-speaker-icon" style="background-color: rgb(0, 90, 0)">NB</span>from the bot, no text element</div>
      </div>`);
    const { entries } = await page.evaluate(readCaptions, ZOOM_LIVE_HOOKS.captions);
    expect(entries.map((e) => [e.text, e.speaker])).toEqual([
      ["from Alice", { name: "Alice", nth: 0 }],
      ["from the second Bob", { name: "Bob", nth: 1 }],
      ["from the bot, no text element", { self: true }],
    ]);
  });
});
