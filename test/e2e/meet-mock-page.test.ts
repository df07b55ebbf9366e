import { describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { meetAdapter } from "../../platforms/meet/index.js";
import { isOnTop } from "../../platforms/variants.js";
import type { Page } from "playwright";
import {
  captionEntries,
  collectNotes,
  expectCaptionGrew,
  expectPictureStops,
  host,
  page,
  snapshotOf,
  text,
  useMockBrowser,
  WAIT,
  watchCaptions,
} from "../helpers/mock-browser.js";

// The hooks as real-Meet adapters use them (see docs/notes/platform-hooks.md).
const NAME_INPUT = 'div[jscontroller] input[type="text"][aria-label="Your name"]';
const CALL_CONTROLS = 'div[role="region"][aria-label="Call controls"]';
const LEAVE_CALL = `${CALL_CONTROLS} button[aria-label="Leave call"]`;
const PEOPLE = 'button[aria-label^="People"]';
const ROSTER_ENTRIES = '[aria-label="Participants"] [data-participant-id]';
/** The remote participants' tiles; the attendee's own is marked `[data-self-name]`. */
const TILE_NAMES = "div[data-participant-id]:has(canvas):not(:has([data-self-name])) span.notranslate";
const SELF_TILE = "div[data-participant-id]:has(canvas):has([data-self-name])";

let codeCounter = 0;

const { control } = useMockBrowser("google");

function newCode(): string {
  codeCounter += 1;
  const letters = codeCounter
    .toString(26)
    .split("")
    .map((digit) => String.fromCharCode(97 + Number.parseInt(digit, 26)))
    .join("")
    .padStart(3, "a");
  return `eee-abcd-${letters}`;
}

const meetingState = (code: string): Promise<MeetingState> => control("GET", code);

/** Type the name and click the call-to-action, as a bot does. */
async function askToJoin(name = "Meetbot", cta = "Ask to join") {
  await page.locator(NAME_INPUT).fill(name);
  await page.locator("button", { has: page.locator(`span:text-is("${cta}")`) }).click();
}

async function openAndJoinLobby(code: string, name = "Meetbot") {
  await control("PUT", code, "", { admit: "manual" });
  await page.goto(`${host.url}/meet/${code}`);
  await askToJoin(name);
  await text("Asking to be let in…").waitFor(WAIT);
}

async function rosterNames(): Promise<(string | null)[]> {
  return page.locator(ROSTER_ENTRIES).evaluateAll((nodes) => nodes.map((n) => n.getAttribute("aria-label")));
}

/** Names on the remote participants' tiles (not the attendee's own), in order, once they equal `expected`. */
async function expectTiles(expected: string[]) {
  await expect.poll(() => page.locator(TILE_NAMES).allTextContents(), WAIT).toEqual(expected);
}

async function expectRoster(expected: string[]) {
  await expect.poll(rosterNames, WAIT).toEqual(expected);
}

/** <audio> elements currently playing a participant's stream. */
const playingAudio = () =>
  page.evaluate(() => [...document.querySelectorAll("audio")].filter((a) => a.srcObject !== null).length);

describe("pre-join", () => {
  it("has the real page's hooks: name input, mic/camera toggles, Ask to join, an <audio>", async () => {
    const code = newCode();
    await control("PUT", code, "", { admit: "manual" });
    await page.goto(`${host.url}/meet/${code}`);

    expect(await page.locator(NAME_INPUT).count()).toBe(1);
    expect(await page.locator("audio").count()).toBeGreaterThanOrEqual(1);
    const cta = page.locator("button", { has: page.locator('span:text-is("Ask to join")') });
    expect(await cta.count()).toBe(1);
    expect(await page.locator('span:text-is("Join now")').count()).toBe(0);
    // As on the real site, there is nothing to ask before a name is typed.
    expect(await cta.isDisabled()).toBe(true);
    await page.locator(NAME_INPUT).fill("Meetbot");
    expect(await cta.isEnabled()).toBe(true);

    await page.locator('button[aria-label="Turn off microphone"]').click();
    expect(await page.locator('button[aria-label="Turn on microphone"]').count()).toBe(1);
    expect(await page.locator('button[aria-label="Turn off microphone"]').count()).toBe(0);
    await page.locator('button[aria-label="Turn off camera"]').click();
    expect(await page.locator('button[aria-label="Turn on camera"]').count()).toBe(1);
    await page.locator('button[aria-label="Turn on camera"]').click();
    expect(await page.locator('button[aria-label="Turn off camera"]').count()).toBe(1);

    expect(await page.locator(CALL_CONTROLS).count()).toBe(0);
  });

  it("reads Join now when admission is open (from the query string)", async () => {
    await page.goto(`${host.url}/meet/${newCode()}?admit=open`);
    expect(await page.locator("button span").allTextContents()).toContain("Join now");
    expect(await page.locator('span:text-is("Ask to join")').count()).toBe(0);
  });
});

describe("lobby and call", () => {
  it("lobby shows Leave call but not People; admission brings People, the roster and tiles", async () => {
    const code = newCode();
    await openAndJoinLobby(code, "Note Taker");

    await text("You’ll join the call when someone lets you in").waitFor(WAIT);
    expect(await page.locator(LEAVE_CALL).count()).toBe(1);
    expect(await page.locator(PEOPLE).count()).toBe(0);
    expect((await meetingState(code)).attendees).toMatchObject([{ name: "Note Taker", state: "lobby" }]);

    await control("POST", code, "/admit");
    await page.locator(PEOPLE).waitFor(WAIT);
    expect(await page.locator(PEOPLE).getAttribute("aria-label")).toBe("People - 3");
    expect(await page.locator('button[aria-label="Chat with everyone"]').count()).toBe(1);
    expect(await page.locator(LEAVE_CALL).count()).toBe(1);
    expect(await text("Asking to be let in…").count()).toBe(0);

    await expectRoster(["Note Taker", "Alice Example", "Bob Example"]);
    expect(await page.locator(`${ROSTER_ENTRIES}[data-self-name]`).getAttribute("aria-label")).toBe(
      "Note Taker",
    );
    await expectTiles(["Alice Example", "Bob Example"]);
    // The attendee's own tile, first, as on the real site: its name, Meet's self mark, its own id.
    const self = page.locator(SELF_TILE);
    expect(await self.locator("span.notranslate").allTextContents()).toEqual(["Note Taker"]);
    expect(await self.getAttribute("data-participant-id")).toBe("a-1");
    expect(
      await page.locator("div[data-participant-id]:has(canvas)").first().getAttribute("data-participant-id"),
    ).toBe("a-1");

    // The roster is always in the DOM; the People button shows and hides it.
    const roster = page.locator('[aria-label="Participants"]');
    expect(await roster.isVisible()).toBe(false);
    await page.locator(PEOPLE).click();
    expect(await roster.isVisible()).toBe(true);
    await page.locator(PEOPLE).click();
    expect(await roster.isVisible()).toBe(false);
  });

  it("participants added and removed through the control API come and go", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await control("POST", code, "/admit");
    await expectRoster(["Meetbot", "Alice Example", "Bob Example"]);

    const zed = await control("POST", code, "/participants", { name: "Zed Newcomer" });
    await expectRoster(["Meetbot", "Alice Example", "Bob Example", "Zed Newcomer"]);
    await expectTiles(["Alice Example", "Bob Example", "Zed Newcomer"]);
    expect(await page.locator(PEOPLE).getAttribute("aria-label")).toBe("People - 4");

    await control("DELETE", code, `/participants/${zed.id}`);
    await control("DELETE", code, "/participants/p-1");
    await expectRoster(["Meetbot", "Bob Example"]);
    await expectTiles(["Bob Example"]);
    expect(await page.locator(PEOPLE).getAttribute("aria-label")).toBe("People - 2");
    await expect.poll(playingAudio, WAIT).toBe(1);
  });

  it("remote participants send moving pictures and bursts of sound through <audio>", async () => {
    const code = newCode();
    await control("PUT", code, "", { admit: "open", participants: 2 });
    await page.goto(`${host.url}/meet/${code}`);
    await askToJoin("Meetbot", "Join now");
    await expectTiles(["Alice Example", "Bob Example"]);

    await expect.poll(playingAudio, WAIT).toBe(2);
    const audioRunning = await page.evaluate(() =>
      [...document.querySelectorAll("audio")]
        .filter((a) => a.srcObject)
        .every((a) => !a.paused && (a.srcObject as MediaStream).getAudioTracks()[0]?.readyState === "live"),
    );
    expect(audioRunning).toBe(true);

    const canvas = page.locator('div[data-participant-id="p-1"] canvas');
    const first = await canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
    await expect
      .poll(() => canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL()), WAIT)
      .not.toBe(first);

    // Bursts: each tile is marked speaking at some point and silent at another.
    for (const id of ["p-1", "p-2"]) {
      const tile = page.locator(`div[data-participant-id="${id}"]:has(canvas)`);
      await expect.poll(() => tile.getAttribute("data-audio-level"), WAIT).not.toBe("0");
      await expect.poll(() => tile.getAttribute("data-audio-level"), WAIT).toBe("0");
    }
  });

  it("auto admission from the query string needs no control call", async () => {
    await page.goto(`${host.url}/meet/${newCode()}?admitAfterMs=200&participants=1`);
    await askToJoin();
    await page.locator(PEOPLE).waitFor(WAIT);
    await expectRoster(["Meetbot", "Alice Example"]);
  });
});

describe("outcomes", () => {
  it("deny shows the denial text and Return to home screen, without the toolbar", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await control("POST", code, "/deny");
    await text("Someone in the call denied your request to join").waitFor(WAIT);
    expect(await page.locator('button:has-text("Return to home screen")').count()).toBe(1);
    expect(await page.locator(CALL_CONTROLS).count()).toBe(0);
  });

  it("end shows The call ended and stops all media", async () => {
    const code = newCode();
    await page.goto(`${host.url}/meet/${code}?admit=open`);
    await askToJoin("Meetbot", "Join now");
    await page.locator(PEOPLE).waitFor(WAIT);
    await expect.poll(playingAudio, WAIT).toBe(2);

    await control("POST", code, "/end");
    await text("The call ended").waitFor(WAIT);
    expect(await page.locator(CALL_CONTROLS).count()).toBe(0);
    expect(await page.locator("canvas").count()).toBe(0);
    expect(await playingAudio()).toBe(0);
    expect(await page.locator('button:has-text("Return to home screen")').count()).toBe(1);
  });

  it("remove shows the removal text", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await control("POST", code, "/admit");
    await page.locator(PEOPLE).waitFor(WAIT);
    await control("POST", code, "/remove");
    await text("You've been removed from the meeting").waitFor(WAIT);
    expect(await page.locator(CALL_CONTROLS).count()).toBe(0);
    expect(await playingAudio()).toBe(0);
  });

  it("Leave call shows You left the meeting and the host sees the attendee left", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await control("POST", code, "/admit");
    await page.locator(PEOPLE).waitFor(WAIT);
    await page.locator(LEAVE_CALL).click();
    await text("You left the meeting").waitFor(WAIT);
    expect(await page.locator(CALL_CONTROLS).count()).toBe(0);
    await expect.poll(async () => (await meetingState(code)).attendees[0]?.state, WAIT).toBe("left");
  });

  it("the adapter's leave() clicks Leave call; once out of the call it says there is none to click", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await control("POST", code, "/admit");
    await page.locator(PEOPLE).waitFor(WAIT);
    expect(await meetAdapter.leave(page)).toBeNull();
    await expect.poll(async () => (await meetingState(code)).attendees[0]?.leftBy, WAIT).toBe("leave");
    await text("You left the meeting").waitFor(WAIT);
    expect(await meetAdapter.leave(page)).toBe("no Leave call button on screen");
  });

  it("closing the page makes the attendee leave", async () => {
    const code = newCode();
    await openAndJoinLobby(code);
    await page.close();
    await expect.poll(async () => (await meetingState(code)).attendees[0]?.state, WAIT).toBe("left");
  });
});

describe("dead ends", () => {
  it("an invalid code shows Check your meeting code and no join form", async () => {
    await page.goto(`${host.url}/meet/not-a-meeting`);
    await text("Check your meeting code").waitFor(WAIT);
    expect(await text("Invalid video call name").count()).toBe(1);
    expect(await page.locator(NAME_INPUT).count()).toBe(0);
    expect(await page.locator("button span").allTextContents()).not.toContain("Ask to join");
  });

  it("page=not_found shows the same page for a valid code", async () => {
    await page.goto(`${host.url}/meet/${newCode()}?page=not_found`);
    await text("Check your meeting code").waitFor(WAIT);
    expect(await page.locator(NAME_INPUT).count()).toBe(0);
  });

  it("page=blocked shows There is a problem connecting to this video call", async () => {
    await page.goto(`${host.url}/meet/${newCode()}?page=blocked`);
    await text("There is a problem connecting to this video call").waitFor(WAIT);
    expect(await page.locator(NAME_INPUT).count()).toBe(0);
  });

  it("page=sign_in shows the Google sign-in wall", async () => {
    await page.goto(`${host.url}/meet/${newCode()}?page=sign_in`);
    await page.locator('h1:text-is("Sign in")').waitFor(WAIT);
    expect(await page.getByText("to continue to your Google Account").count()).toBe(1);
    expect(await page.locator(NAME_INPUT).count()).toBe(0);
  });
});

describe("captions and chat (docs/notes/live-meeting.md)", () => {
  const CAPTIONS_ON = 'button[aria-label="Turn on captions"]';
  const CAPTIONS_OFF = 'button[aria-label="Turn off captions"]';
  const REGION = 'div[role="region"][aria-label="Captions"]';
  const CHAT_BUTTON = 'button[aria-label="Chat with everyone"]';
  const COMPOSER = 'textarea[aria-label="Send a message"]';
  const SEND = 'button[aria-label="Send a message"]';
  const MESSAGES = ".RLrADb[data-message-id]";
  // Short lines keep the test short; six words still show the growth.
  const LINES = [
    { participant: "Alice Example", text: "Please send the report by Friday" },
    // A loaded page plays a line later than the host put it on air, and the next line cuts it
    // short (its caption stays half grown): 3 s apart, the first plays out whole.
    { participant: "Bob Example", text: "We will ship the new version", silenceBeforeMs: 3000 },
  ];

  /** Opens the meeting in `target` and joins it (admission is open) as `name`. */
  async function joinOn(target: Page, code: string, name: string) {
    await target.goto(`${host.url}/meet/${code}`);
    await target.locator(NAME_INPUT).fill(name);
    await target.locator("button", { has: target.locator('span:text-is("Join now")') }).click();
    await target.locator(PEOPLE).waitFor(WAIT);
  }

  /** Each message in the list as [sender header of its group or null, text, id]. */
  const chatList = (target: Page) =>
    target
      .locator(`.chat-list ${MESSAGES}`)
      .evaluateAll((nodes) =>
        nodes.map((n) => [
          n.parentElement?.querySelector(".HNucUd .poVWob")?.textContent ?? null,
          n.querySelector(".jO4O1")?.textContent ?? "",
          n.getAttribute("data-message-id"),
        ]),
      );

  it("captions: on by the button (per page), the reader's block grows word by word, one is rewritten, c turns them off", async () => {
    const code = newCode();
    await control("PUT", code, "", {
      admit: "open",
      script: LINES,
      // Started below once both pages are in (a fallback only: a loaded machine's join takes seconds).
      scriptStartAfterMs: 60_000,
      captionRewrites: [1],
    });
    await joinOn(page, code, "Meetbot");
    // Off until the bot turns them on, as on the real page.
    expect(await page.locator(REGION).count()).toBe(0);
    await watchCaptions(page, { block: ".nMcdL", speaker: ".adE6rb span.NWpY1d", text: ".ygicle" });
    await page.locator(CAPTIONS_ON).click();
    await page.locator(CAPTIONS_OFF).waitFor(WAIT);
    const other = await page.context().newPage();
    await joinOn(other, code, "Other Bot");
    expect(await page.locator(`${REGION} .nMcdL`).count()).toBe(0);
    expect(await page.locator('ul[aria-label="Meeting language"] li[data-value="en-US"]').count()).toBe(1);
    await control("POST", code, "/script/start");

    const blocks = () => page.locator(".nMcdL").allTextContents();
    await expect.poll(blocks, { timeout: 30_000 }).toEqual(LINES.map((l) => `${l.participant}${l.text}`));
    const [alice, bob] = await captionEntries(page);
    expect([alice?.speaker, bob?.speaker]).toEqual(["Alice Example", "Bob Example"]);
    expectCaptionGrew(alice, LINES[0]!.text);
    expectCaptionGrew(bob, LINES[1]!.text, true);
    expect(await page.locator(".nMcdL .adE6rb img").count()).toBe(2);

    // Per page: the other attendee never turned them on.
    expect(await other.locator(REGION).count()).toBe(0);
    expect(await other.locator(CAPTIONS_ON).count()).toBe(1);
    const state = await meetingState(code);
    expect(state.attendees.map((a) => [a.name, a.captionsOnAt !== null])).toEqual([
      ["Meetbot", true],
      ["Other Bot", false],
    ]);
    // Each page tells the host when it played each line: once the host put it on air, or later.
    for (const attendee of state.attendees) {
      expect(attendee.played.map((each) => each.line)).toEqual([0, 1]);
      attendee.played.forEach((each, i) =>
        expect(Date.parse(each.startedAt)).toBeGreaterThanOrEqual(Date.parse(state.spoken[i]!.startedAt)),
      );
    }

    // The shortcut turns them off again (not while typing in the chat: see below).
    await page.keyboard.press("c");
    await page.locator(CAPTIONS_ON).waitFor(WAIT);
    expect(await page.locator(REGION).count()).toBe(0);
    await expect.poll(async () => (await meetingState(code)).attendees[0]?.captionsOnAt, WAIT).toBeNull();
  });

  it("captions off for the meeting: the button is there but disabled, and c does nothing", async () => {
    const code = newCode();
    await control("PUT", code, "", { admit: "open", captions: "off", script: [LINES[0]] });
    await joinOn(page, code, "Meetbot");
    expect(await page.locator(CAPTIONS_ON).isDisabled()).toBe(true);
    await page.keyboard.press("c");
    expect(await page.locator(CAPTIONS_ON).count()).toBe(1);
    expect(await page.locator(REGION).count()).toBe(0);
  });

  it("chat: a sent message reaches every page with its sender, a scripted one appears once, an over-long one is refused", async () => {
    const code = newCode();
    await control("PUT", code, "", { admit: "open" });
    await joinOn(page, code, "Meetbot");
    const other = await page.context().newPage();
    await joinOn(other, code, "Other Bot");
    // Posted once both are in: an attendee sees the messages since its own admission.
    await control("POST", code, "/chat", {
      participantId: "p-1",
      text: "Welcome, the agenda is pinned",
      pinned: true,
    });
    await page.locator(CHAT_BUTTON).click();
    expect(await page.locator(CHAT_BUTTON).getAttribute("aria-pressed")).toBe("true");

    // The host's message for Alice, under her name, once (a pinned copy carries its id too).
    await expect.poll(() => chatList(page), WAIT).toHaveLength(1);
    const [sender, body, id] = (await chatList(page))[0] ?? [];
    expect([sender, body]).toEqual(["Alice Example", "Welcome, the agenda is pinned"]);
    expect(await page.locator(`.Sd72u[data-message-id="${id}"]`).count()).toBe(1);
    expect(id).toMatch(/^spaces\/[\w-]+\/messages\/\d{16,}$/);

    // Typed (its "c"s are no captions shortcut there), Enter sends, the composer clears; the
    // own run has no sender header.
    await page.locator(COMPOSER).pressSequentially("Hello, can you hear me");
    expect(await page.locator(CAPTIONS_OFF).count()).toBe(0);
    await page.locator(COMPOSER).press("Enter");
    await expect.poll(() => page.locator(COMPOSER).inputValue(), WAIT).toBe("");
    await page.locator(COMPOSER).fill("And a second line");
    await page.locator(SEND).click();
    await expect.poll(() => chatList(page), WAIT).toHaveLength(3);
    const list = await chatList(page);
    expect(list.slice(1).map(([header, body]) => [header, body])).toEqual([
      [null, "Hello, can you hear me"],
      [null, "And a second line"],
    ]);
    const state = await meetingState(code);
    expect(state.chat.map((m) => [m.id, m.sender, m.senderId, m.text, m.fromAttendee])).toEqual([
      [id, "Alice Example", "p-1", "Welcome, the agenda is pinned", false],
      [list[1]![2], "Meetbot", "a-1", "Hello, can you hear me", true],
      [list[2]![2], "Meetbot", "a-1", "And a second line", true],
    ]);
    // The other page shows the bot's run under the bot's name.
    await other.locator(CHAT_BUTTON).click();
    await expect
      .poll(() => chatList(other), WAIT)
      .toEqual([
        ["Alice Example", "Welcome, the agenda is pinned", id],
        ["Meetbot", "Hello, can you hear me", list[1]![2]],
        ["Meetbot", "And a second line", list[2]![2]],
      ]);

    // Past Meet's 500 characters: refused, the text stays, nothing is sent.
    const long = "x".repeat(501);
    await page.locator(COMPOSER).fill(long);
    expect(await page.locator(SEND).isDisabled()).toBe(true);
    expect(await page.locator(".chat-limit").isVisible()).toBe(true);
    await page.locator(COMPOSER).press("Enter");
    expect(await page.locator(COMPOSER).inputValue()).toBe(long);
    expect((await meetingState(code)).chat).toHaveLength(3);
  });
});

describe("the adapter on the mock", () => {
  const snapshot = () => snapshotOf(meetAdapter, "Adapter Bot");

  /**
   * Opens a fresh meeting with `scenario`, lets `prepare` touch the form first, then has the
   * adapter join; answers what the join noted.
   */
  async function adapterJoins(scenario: Record<string, unknown>, prepare = async () => {}) {
    const code = newCode();
    await control("PUT", code, "", scenario);
    const meetingUrl = `${host.url}/meet/${code}`;
    await page.goto(meetingUrl);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "prejoin", evidence: "nameInput" });
    await prepare();
    const { notes, note } = collectNotes();
    await meetAdapter.join(page, {
      displayName: "Adapter Bot",
      info: { platform: "google", meetingUrl },
      note,
    });
    return { code, notes };
  }

  it("join() notes which variant of each join hook matched; the snapshot names what decided each phase", async () => {
    const { code, notes } = await adapterJoins({ admit: "manual" });
    expect(notes).toEqual([
      ["microphone", 'clicked [aria-label="Turn off microphone"]'],
      ["camera", 'clicked [aria-label="Turn off camera"]'],
      ["joinButton", "Ask to join"],
    ]);
    await expect
      .poll(snapshot, WAIT)
      .toMatchObject({ phase: "lobby", evidence: 'texts.lobby "Asking to be let in"' });

    await control("POST", code, "/admit");
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", evidence: "peopleButton" });
    await control("POST", code, "/end");
    await expect
      .poll(snapshot, WAIT)
      .toMatchObject({ phase: "ended", evidence: 'texts.ended "The call ended"' });
  });

  it("join() notes the other call-to-action, and toggles already off", async () => {
    const { notes } = await adapterJoins({ admit: "open" }, async () => {
      await page.locator('button[aria-label="Turn off microphone"]').click();
      await page.locator('button[aria-label="Turn off camera"]').click();
    });
    expect(notes).toEqual([
      ["microphone", 'no [aria-label="Turn off microphone"]: already off'],
      ["camera", 'no [aria-label="Turn off camera"]: already off'],
      ["joinButton", "Join now"],
    ]);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", evidence: "peopleButton" });
  });
});

describe("incoming video off (an audio-only bot's step)", () => {
  /** The page in an open meeting with two participants, their tiles playing. */
  async function inCallWithTwo() {
    const code = newCode();
    await control("PUT", code, "", { admit: "open", participants: 2 });
    await page.goto(`${host.url}/meet/${code}`);
    await askToJoin("Meetbot", "Join now");
    await page.locator(PEOPLE).waitFor(WAIT);
  }

  it("More options → Settings → Video → Receive resolution → Audio only: the tiles stop; again it leaves it so", async () => {
    await inCallWithTwo();
    const turnOff = meetAdapter.live!.turnOffIncomingVideo!;
    const notes: string[] = [];
    const canvas = page
      .locator("div[data-participant-id]:has(canvas):not(:has([data-self-name])) canvas")
      .first();
    await expectPictureStops(canvas, async () => {
      expect(await turnOff(page, { note: (hook) => notes.push(hook) })).toBeNull();
    });
    expect(await page.getByRole("dialog").count()).toBe(0);
    // Already audio only: the dialog opens and closes, nothing chosen.
    expect(await turnOff(page, { note: (hook) => notes.push(hook) })).toBeNull();
    expect({ notes, dialogs: await page.getByRole("dialog").count() }).toEqual({
      notes: ["incomingVideoItem"],
      dialogs: 0,
    });
  });

  it("a step that fails leaves no menu or dialog over the toolbar, and Escape closes the dialog", async () => {
    await inCallWithTwo();
    // The list opens but shows no choice: the last step times out with the dialog open.
    await page.addStyleTag({ content: '[role="option"] { display: none !important; }' });
    const why = await meetAdapter.live!.turnOffIncomingVideo!(page, { note: () => {} });
    expect(why).toMatch(/^Meet: no its Audio only choice \(/);
    expect(await page.locator('[role="dialog"], [role="menu"]').count()).toBe(0);
    // A trial click fails when something covers the button.
    await page.getByRole("button", { name: "Leave call" }).click({ trial: true, timeout: 5_000 });

    await page.getByRole("button", { name: "More options" }).click();
    await page.getByRole("menuitem", { name: "Settings" }).click();
    await page.getByRole("dialog", { name: "Settings" }).waitFor(WAIT);
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("dialog").count(), WAIT).toBe(0);
  });
});

describe("drifted layouts (ui=, fixtures/meet/ui-variants.ts) and the adapter on them", () => {
  const snapshot = () => snapshotOf(meetAdapter, "Adapter Bot");
  const named = (label: string) => page.getByRole("button", { name: label, exact: true });
  const MIC_OFF = ["microphone", 'clicked [aria-label="Turn off microphone"]'];
  const CAMERA_OFF = ["camera", 'clicked [aria-label="Turn off camera"]'];

  /** A fresh meeting in the drifted layout `ui`, its pre-join form on screen; answers its code. */
  async function openDrifted(ui: string, scenario: Record<string, unknown> = {}) {
    const code = newCode();
    await control("PUT", code, "", { admit: "manual", ...scenario, ui: [ui] });
    await page.goto(`${host.url}/meet/${code}`);
    await page.locator(NAME_INPUT).waitFor(WAIT);
    return code;
  }

  /** The adapter's join or afterAdmission on the page; answers what it noted. */
  async function adapter(step: "join" | "afterAdmission") {
    const { notes, note } = collectNotes();
    if (step === "join") {
      await meetAdapter.join(page, {
        displayName: "Adapter Bot",
        info: { platform: "google", meetingUrl: page.url() },
        note,
      });
    } else {
      await meetAdapter.afterAdmission?.(page, { note });
    }
    return notes;
  }

  it("meet-alt-join-texts: div toggles and Ask to join anyway (an icon beside it), which the adapter clicks", async () => {
    await openDrifted("meet-alt-join-texts");
    expect(await page.locator('div[role="button"][aria-label="Turn off microphone"]').count()).toBe(1);
    expect(await page.locator('button[aria-label="Turn off microphone"]').count()).toBe(0);
    expect(await page.locator("button span").allTextContents()).toEqual(["Ask to join anyway"]);
    // The div toggles work as the buttons do (the form is gone once the adapter asked to join).
    const micToggle = page.locator('div[role="button"][aria-label$=" microphone"]');
    await micToggle.click();
    expect(await micToggle.getAttribute("aria-label")).toBe("Turn on microphone");
    expect(await micToggle.getAttribute("data-is-muted")).toBe("true");
    await micToggle.click();
    expect(await micToggle.getAttribute("aria-label")).toBe("Turn off microphone");

    expect(await adapter("join")).toEqual([MIC_OFF, CAMERA_OFF, ["joinButton", "Ask to join anyway"]]);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
  });

  it("meet-other-device: Switch here, then Join here too; the adapter takes Join here too", async () => {
    await openDrifted("meet-other-device", { admit: "open" });
    expect(await page.locator("button span").allTextContents()).toEqual([
      "Microphone",
      "Camera",
      "Switch here",
      "Join here too",
    ]);
    expect(await adapter("join")).toEqual([MIC_OFF, CAMERA_OFF, ["joinButton", "Join here too"]]);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", evidence: "peopleButton" });
  });

  it("meet-dialogs-stacked: the modal covers Got it, which covers the form; the adapter dismisses the top one first", async () => {
    await openDrifted("meet-dialogs-stacked");
    const cta = page.locator("button.cta");
    expect(await isOnTop(named("Continue without microphone and camera"))).toBe(true);
    expect(await isOnTop(named("Got it"))).toBe(false);
    expect(await named("Got it").isVisible()).toBe(true);
    expect(await isOnTop(cta)).toBe(false);

    expect(await adapter("join")).toEqual([
      ["popup", "Continue without microphone and camera"],
      ["popup", "Got it"],
      MIC_OFF,
      CAMERA_OFF,
      ["joinButton", "Ask to join"],
    ]);
    expect(await page.locator('[role="dialog"]').count()).toBe(0);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
  });

  it("meet-modal-on-toggle: the modal opens mid-form; the adapter dismisses it before the next click", async () => {
    await openDrifted("meet-modal-on-toggle");
    expect(await page.locator('[role="dialog"]').count()).toBe(0);
    expect(await adapter("join")).toEqual([
      MIC_OFF,
      ["popup", "Continue without microphone and camera"],
      CAMERA_OFF,
      ["joinButton", "Ask to join"],
    ]);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
  });

  it("meet-roster-closed: no roster in the DOM until People opens it, labelled otherwise; tiles name the participants meanwhile", async () => {
    const code = await openDrifted("meet-roster-closed");
    await adapter("join");
    // The click's request reaches the mock host a moment later: admit once it is waiting there.
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
    await control("POST", code, "/admit");
    const participants = [
      { id: "p-1", name: "Alice Example" },
      { id: "p-2", name: "Bob Example" },
    ];
    // From the tiles: no entry is rendered yet, and nothing is labelled "Participants".
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", participants });
    expect(await page.locator("[data-participant-id][aria-label]").count()).toBe(0);

    expect(await adapter("afterAdmission")).toEqual([["roster", "opened with peopleButton"]]);
    const entries = page.locator(
      '[aria-label="In the meeting"] [aria-label="Contributors"] [data-participant-id]',
    );
    expect(await entries.evaluateAll((nodes) => nodes.map((n) => n.getAttribute("aria-label")))).toEqual([
      "Adapter Bot",
      "Alice Example",
      "Bob Example",
    ]);
    expect(await page.locator('[aria-label="Participants"]').count()).toBe(0);
    expect((await snapshot()).participants).toEqual(participants);

    await page.locator(PEOPLE).click();
    expect(await page.locator("[data-participant-id][aria-label]").count()).toBe(0);
  });

  it("someone who takes the bot's name is listed, from the tiles and from the roster; the bot, marked self, never", async () => {
    const code = await openDrifted("meet-roster-closed", { participants: 1 });
    await adapter("join");
    // The click's request reaches the mock host a moment later: admit once it is waiting there.
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
    await control("POST", code, "/admit");
    await control("POST", code, "/participants", { name: "Adapter Bot" });
    await control("POST", code, "/participants", { name: "Adapter Bot (You)" });
    const participants = [
      { id: "p-1", name: "Alice Example" },
      { id: "p-2", name: "Adapter Bot" },
      { id: "p-3", name: "Adapter Bot (You)" },
    ];
    // The tiles: two say "Adapter Bot"; the bot's own (a-1) is the one with the self mark.
    await expectTiles(["Alice Example", "Adapter Bot", "Adapter Bot (You)"]);
    expect(await page.locator(`${SELF_TILE} span.notranslate`).allTextContents()).toEqual(["Adapter Bot"]);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", participants });
    // Both namesakes sound, and are heard as speakers like anyone.
    for (const id of ["p-2", "p-3"]) {
      await expect.poll(async () => (await snapshot()).speakers?.includes(id), WAIT).toBe(true);
    }

    // The roster: the same people, the bot's entry (the one with the self mark) left out.
    await adapter("afterAdmission");
    const entries = page.locator('[aria-label="Contributors"] [data-participant-id]');
    expect(
      await entries.evaluateAll((nodes) =>
        nodes.map((n) => [n.getAttribute("aria-label"), n.hasAttribute("data-self-name")]),
      ),
    ).toEqual([
      ["Adapter Bot", true],
      ["Alice Example", false],
      ["Adapter Bot", false],
      ["Adapter Bot (You)", false],
    ]);
    expect((await snapshot()).participants).toEqual(participants);
  });

  it("meet-alert-and-toasts: a toast covers the call-to-action, then People, for a moment; an alert stays; the adapter gets through", async () => {
    const code = await openDrifted("meet-alert-and-toasts");
    const cta = page.locator("button.cta");
    await page.locator(NAME_INPUT).fill("Adapter Bot");
    await page.locator('[aria-label="Turn off microphone"]').click();
    expect(await page.getByRole("status").textContent()).toBe("Your microphone is off");
    expect(await isOnTop(cta)).toBe(false);
    await page.getByRole("status").waitFor({ state: "detached", ...WAIT });
    expect(await isOnTop(cta)).toBe(true);

    expect(await adapter("join")).toEqual([
      ["microphone", 'no [aria-label="Turn off microphone"]: already off'],
      CAMERA_OFF,
      ["joinButton", "Ask to join"],
    ]);
    // The click's request reaches the mock host a moment later: admit once it is waiting there.
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "lobby" });
    await control("POST", code, "/admit");
    await page.locator(PEOPLE).waitFor(WAIT);
    expect(await page.getByRole("status").textContent()).toBe("Your camera is off");
    expect(await isOnTop(page.locator(PEOPLE))).toBe(false);
    expect(await page.getByRole("alert").count()).toBe(1);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "in_call", evidence: "peopleButton" });
    expect((await snapshot()).participants.map((p) => p.name)).toEqual(["Alice Example", "Bob Example"]);

    expect(await adapter("afterAdmission")).toEqual([["roster", "opened with peopleButton"]]);
    expect(await page.locator(ROSTER_ENTRIES).first().isVisible()).toBe(true);
  });
});
