import { describe, expect, it } from "vitest";
import type { MeetingState } from "../../fixtures/host/meetings.js";
import { zoomAdapter } from "../../platforms/zoom/index.js";
import { isOnTop } from "../../platforms/variants.js";
import { ZOOM_HOOKS as H } from "../../platforms/zoom/selectors.js";
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

// The real web client's hooks (see platforms/zoom/selectors.ts and docs/notes/platform-hooks.md).
const PANEL_NAMES = "#participants-ul .participants-item__display-name";
const TILE_NAMES = ".gallery-video-container__video-frame .video-avatar__avatar-footer";
const ACTIVE_TILE = ".gallery-video-container__video-frame--active";
const PARTICIPANTS_BUTTON = '#wc-footer button[aria-label^="open the participants list pane"]';
const MODAL_TITLE = ".zm-modal-body-title";
const H_MORE = '#wc-footer button[aria-label="More meeting control"]';

let idCounter = 0;

const { control } = useMockBrowser("zoom");

/** A fresh 11-digit meeting id per test, so meetings never carry over. */
function newId(): string {
  idCounter += 1;
  return String(81_000_000_000 + idCounter);
}

const meetingState = (id: string): Promise<MeetingState> => control("GET", id);
const attendeeStates = async (id: string) => (await meetingState(id)).attendees.map((a) => a.state);

/** The adapter's own reading of the page, run in it exactly as the runner's PageWatcher runs it. */
const snapshot = (selfName?: string) => snapshotOf(zoomAdapter, selfName);

const phase = async (selfName?: string) => (await snapshot(selfName)).phase;

/**
 * Listens to the first participant's own stream (an analyser, independent of the page's
 * indicator) and tells whether any tile was marked as the active speaker during one whole burst
 * of its sound: from silence, through the burst, to silence again.
 */
function markedDuringBurst(): Promise<boolean> {
  return page.evaluate(async (activeTile) => {
    const audio = document.querySelector("#audio-host audio") as HTMLAudioElement;
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    context.createMediaStreamSource(audio.srcObject as MediaStream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    const level = () => {
      analyser.getFloatTimeDomainData(samples);
      return samples.reduce((max, sample) => Math.max(max, Math.abs(sample)), 0);
    };
    const until = (condition: () => boolean) =>
      new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (!condition()) return;
          clearInterval(timer);
          resolve();
        }, 10);
      });
    await until(() => level() < 0.01);
    await until(() => level() > 0.05);
    let marked = document.querySelector(activeTile) !== null;
    const observer = new MutationObserver(() => {
      if (document.querySelector(activeTile)) marked = true;
    });
    observer.observe(document.body, { subtree: true, attributes: true, attributeFilter: ["class"] });
    await until(() => level() < 0.01);
    observer.disconnect();
    await context.close();
    return marked;
  }, ACTIVE_TILE);
}

/** <audio> elements playing a participant's stream, audibly. */
const audibleAudio = () =>
  page.evaluate(
    () =>
      [...document.querySelectorAll("#audio-host audio")].filter(
        (a) => (a as HTMLAudioElement).srcObject !== null && !(a as HTMLAudioElement).muted,
      ).length,
  );

/** What a person does on a first visit: cookies, terms, permissions; then the form. */
async function openForm(id: string, query = "pwd=") {
  await page.goto(`${host.url}/wc/${id}/join?${query}`);
  await page.locator(H.cookieAccept).click(WAIT);
  await page.locator(H.termsAgree).click(WAIT);
  await page.getByRole("button", { name: "Allow", exact: true }).click(WAIT);
}

async function typeNameAndJoin(name = "Meetbot") {
  await page.locator(H.nameInput).fill(name);
  await page.locator(H.joinButtonReady).click(WAIT);
}

/** Into the call as a person would: join audio and open the participants panel. */
async function settleIn() {
  await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
  await page.locator(PARTICIPANTS_BUTTON).click(WAIT);
  await page.locator("#participants-ul").waitFor(WAIT);
}

async function joinWaitingRoom(id: string, name = "Meetbot") {
  await control("PUT", id, "", { admit: "manual" });
  await openForm(id);
  await typeNameAndJoin(name);
  await text("Please wait, the meeting host will let you in soon.").waitFor(WAIT);
}

async function joinOpenCall(id: string, scenario: Record<string, unknown> = {}) {
  await control("PUT", id, "", { admit: "open", ...scenario });
  await openForm(id);
  await typeNameAndJoin();
  await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
}

describe("pre-join", () => {
  it("shows cookie banner, terms and permission dialog, then the form with the real hooks", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual" });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    expect(await phase()).toBe("prejoin");

    expect(await page.locator(H.cookieAccept).isVisible()).toBe(true);
    await page.locator(H.cookieAccept).click();
    // The terms cover the form: nothing below can be clicked until they are accepted.
    expect(await page.locator(H.termsAgree).isVisible()).toBe(true);
    await page.locator(H.termsAgree).click();
    const allow = page.getByRole("button", { name: "Allow", exact: true });
    expect(await allow.isVisible()).toBe(true);
    expect(await page.getByRole("button", { name: "Continue without microphone and camera" }).count()).toBe(
      1,
    );
    await allow.click();

    // Allowed devices start on; the toggles are labelled with their action.
    const mic = page.locator(H.previewMicrophone);
    const camera = page.locator(H.previewCamera);
    expect(await mic.getAttribute("aria-label")).toBe("Mute");
    expect(await camera.getAttribute("aria-label")).toBe("Stop Video");
    await mic.click();
    await camera.click();
    expect(await mic.getAttribute("aria-label")).toBe("Unmute");
    expect(await camera.getAttribute("aria-label")).toBe("Start Video");

    // Join is disabled (class and attribute) until a name is typed.
    const join = page.locator(H.joinButton);
    expect(await join.count()).toBe(1);
    expect(await join.isDisabled()).toBe(true);
    expect(await join.getAttribute("class")).toContain("disabled");
    expect(await page.locator(H.joinButtonReady).count()).toBe(0);
    await page.locator(H.nameInput).fill("Meetbot");
    expect(await join.isEnabled()).toBe(true);
    expect(await join.getAttribute("class")).not.toContain("disabled");
    // The link carried a pwd (even empty), and the meeting has no passcode: no passcode field.
    expect(await page.locator(H.passcodeInput).count()).toBe(0);
    expect(await page.locator(H.footer).count()).toBe(0);
    expect(await phase()).toBe("prejoin");
  });

  it("refusing permissions leaves microphone and camera off", async () => {
    const id = newId();
    await page.goto(`${host.url}/wc/${id}/join`);
    await page.locator(H.termsAgree).click();
    await page.getByRole("button", { name: "Continue without microphone and camera" }).click();
    expect(await page.locator(H.previewMicrophone).getAttribute("aria-label")).toBe("Unmute");
    expect(await page.locator(H.previewCamera).getAttribute("aria-label")).toBe("Start Video");
  });

  it("asks for the passcode when the link has no pwd, and Join needs it", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", passcode: "4711" });
    await page.goto(`${host.url}/wc/${id}/join`);
    await page.locator(H.termsAgree).click();
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    const passcode = page.locator('input[placeholder*="passcode"]');
    expect(await passcode.count()).toBe(1);
    await page.locator(H.nameInput).fill("Meetbot");
    expect(await page.locator(H.joinButton).isDisabled()).toBe(true);
    await passcode.fill("4711");
    await page.locator(H.joinButtonReady).click();
    await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
    expect(await phase()).toBe("in_call");
  });

  it("a wrong passcode gets Zoom's 'Passcode wrong' with the passcode box, and no attendee", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", passcode: "right" });
    await openForm(id, "pwd=wrong");
    expect(await page.locator(H.passcodeInput).count()).toBe(0);
    await typeNameAndJoin();
    await text("Passcode wrong").waitFor(WAIT);
    expect(await page.locator(H.passcodeInput).count()).toBe(1);
    expect(await phase()).toBe("bad_passcode");
    expect((await meetingState(id)).attendees).toEqual([]);

    // The right one typed into the box gets in.
    await page.locator(H.passcodeInput).fill("right");
    await page.locator(H.joinButtonReady).click();
    await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
    expect(await attendeeStates(id)).toEqual(["in_call"]);
  });
});

describe("waiting and the call", () => {
  it("waiting room (with a Leave that proves nothing) → admit → in the call with the panel's names", async () => {
    const id = newId();
    await joinWaitingRoom(id, "Note Taker");
    expect(await phase()).toBe("lobby");
    expect(await page.locator(H.leaveButton).count()).toBe(1);
    expect(await page.locator(H.footer).count()).toBe(0);
    expect(await attendeeStates(id)).toEqual(["lobby"]);

    await control("POST", id, "/admit");
    await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
    expect(await page.locator(`${H.footer} ${H.leaveButton}`).count()).toBe(1);
    expect(await page.locator(PARTICIPANTS_BUTTON).getAttribute("aria-label")).toBe(
      "open the participants list pane,[3] particpants",
    );
    expect(await page.locator(".footer-button__number-counter span").textContent()).toBe("3");
    expect(await text("Please wait, the meeting host will let you in soon.").count()).toBe(0);

    // The panel exists only once opened from the footer; the tiles are there from the start.
    expect(await page.locator("#participants-ul").count()).toBe(0);
    await expect
      .poll(() => page.locator(TILE_NAMES).allTextContents(), WAIT)
      .toEqual(["Note Taker", "Alice Example", "Bob Example"]);
    await settleIn();
    await expect
      .poll(() => page.locator(PANEL_NAMES).allTextContents(), WAIT)
      .toEqual(["Note Taker", "Alice Example", "Bob Example"]);
    expect(await page.locator(".participants-item__name-label").allTextContents()).toEqual([
      "(Me)",
      "(Host)",
    ]);
    expect(await snapshot("Note Taker")).toMatchObject({
      phase: "in_call",
      participants: [
        { id: "name:Alice Example", name: "Alice Example" },
        { id: "name:Bob Example", name: "Bob Example" },
      ],
    });

    // Participants come and go through the control API.
    const zed = await control("POST", id, "/participants", { name: "Zed Newcomer" });
    await expect.poll(() => page.locator(PANEL_NAMES).allTextContents(), WAIT).toContain("Zed Newcomer");
    await control("DELETE", id, `/participants/${zed.id}`);
    await control("DELETE", id, "/participants/p-1");
    await expect
      .poll(() => page.locator(PANEL_NAMES).allTextContents(), WAIT)
      .toEqual(["Note Taker", "Bob Example"]);
    expect((await snapshot("Note Taker")).participants).toEqual([
      { id: "name:Bob Example", name: "Bob Example" },
    ]);
  });

  it("the snapshot reads names from the tiles while the panel is closed, without the bot", async () => {
    const id = newId();
    await joinOpenCall(id, { participants: 1 });
    expect(await page.locator("#participants-ul").count()).toBe(0);
    await expect
      .poll(async () => (await snapshot()).participants, WAIT)
      .toEqual([{ id: "name:Alice Example", name: "Alice Example" }]);
  });

  it("someone who takes the bot's name, or calls themself '(Me)', is listed and heard, from the tiles and from the panel", async () => {
    const id = newId();
    await joinOpenCall(id, { participants: 1 });
    await control("POST", id, "/participants", { name: "Meetbot" });
    await control("POST", id, "/participants", { name: "Meetbot (Me)" });
    // The tiles tell nobody apart: two say "Meetbot", one of them the bot's own.
    await expect
      .poll(() => page.locator(TILE_NAMES).allTextContents(), WAIT)
      .toEqual(["Meetbot", "Alice Example", "Meetbot", "Meetbot (Me)"]);
    const everyone = [
      { id: "name:Meetbot", name: "Meetbot" },
      { id: "name:Alice Example", name: "Alice Example" },
      { id: "name:Meetbot (Me)", name: "Meetbot (Me)" },
    ];
    const byId = (list: Array<{ id: string }>) => [...list].sort((a, b) => a.id.localeCompare(b.id));
    await expect
      .poll(async () => byId((await snapshot("Meetbot")).participants), WAIT)
      .toEqual(byId(everyone));
    // Four in the call: the gallery shows its active speaker, the namesakes among them.
    await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
    for (const speaker of ["name:Meetbot", "name:Meetbot (Me)"]) {
      await expect.poll(async () => (await snapshot("Meetbot")).speakers?.includes(speaker), WAIT).toBe(true);
    }

    // The panel: the bot's entry is the one tagged "(Me)", and only it is left out.
    await page.locator(PARTICIPANTS_BUTTON).click(WAIT);
    await page.locator("#participants-ul").waitFor(WAIT);
    expect(await page.locator(PANEL_NAMES).allTextContents()).toEqual([
      "Meetbot",
      "Alice Example",
      "Meetbot",
      "Meetbot (Me)",
    ]);
    expect(await page.locator(".participants-item__name-label").allTextContents()).toEqual([
      "(Me)",
      "(Host)",
    ]);
    expect(byId((await snapshot("Meetbot")).participants)).toEqual(byId(everyone));
  });

  it("is silent until Join Audio by Computer; then each participant sounds through its <audio>, tiles move", async () => {
    const id = newId();
    await joinOpenCall(id, { participants: 2 });
    await expect.poll(() => page.locator("#audio-host audio").count(), WAIT).toBe(2);
    expect(await audibleAudio()).toBe(0);

    await page.locator(H.joinAudioButton).click();
    await expect.poll(audibleAudio, WAIT).toBe(2);
    const running = await page.evaluate(() =>
      [...document.querySelectorAll("#audio-host audio")].every((a) => {
        const audio = a as HTMLAudioElement;
        return !audio.paused && (audio.srcObject as MediaStream).getAudioTracks()[0]?.readyState === "live";
      }),
    );
    expect(running).toBe(true);

    const canvas = page.locator(".gallery-video-container__video-frame canvas").nth(1);
    const first = await canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL());
    await expect
      .poll(() => canvas.evaluate((c) => (c as HTMLCanvasElement).toDataURL()), WAIT)
      .not.toBe(first);
  });

  it("marks one active speaker at a time, as Zoom's gallery does, and the snapshot reports it", async () => {
    const id = newId();
    await joinOpenCall(id, { participants: 2 });
    await settleIn();
    const activeName = () =>
      page.evaluate(
        (selector) => [...document.querySelectorAll(selector)].map((t) => t.textContent?.trim()),
        ACTIVE_TILE,
      );
    // Each of the two is the active speaker at some point; never both at once.
    for (const name of ["Alice Example", "Bob Example"]) {
      await expect.poll(activeName, WAIT).toEqual([name]);
    }
    await expect.poll(async () => (await snapshot()).speakers, WAIT).toEqual(["name:Alice Example"]);
    await expect.poll(async () => (await snapshot()).speakers, WAIT).toEqual(["name:Bob Example"]);
  });

  it("shows no active speaker with only two in the call, as Zoom's gallery does", async () => {
    const id = newId();
    await joinOpenCall(id, { participants: 2 });
    await expect.poll(() => page.locator("#audio-host audio").count(), WAIT).toBe(2);
    // With three in the call a burst of Alice's is marked (this also shows the probe works)...
    expect(await markedDuringBurst()).toBe(true);
    await control("DELETE", id, "/participants/p-2");
    await expect.poll(() => page.locator("#audio-host audio").count(), WAIT).toBe(1);
    // ...with two it is not, and neither is anyone in the snapshot.
    expect(await markedDuringBurst()).toBe(false);
    expect((await snapshot()).speakers).toEqual([]);
  });

  it("host not started: waits on Zoom's screen until the control API starts the meeting", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "auto", admitAfterMs: 200, hostStarted: false });
    await openForm(id);
    await typeNameAndJoin();
    await text("Waiting for the host to start this meeting").waitFor(WAIT);
    expect(await phase()).toBe("host_not_started");
    expect(await attendeeStates(id)).toEqual(["waiting_for_host"]);
    expect((await meetingState(id)).hostStarted).toBe(false);

    await control("POST", id, "/start");
    await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
    expect(await phase()).toBe("in_call");
    expect(await attendeeStates(id)).toEqual(["in_call"]);
  });

  it("host not started: hostStartsAfterMs starts it, into the waiting room", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", hostStartsAfterMs: 300 });
    await openForm(id);
    await typeNameAndJoin();
    await text("Please wait, the meeting host will let you in soon.").waitFor(WAIT);
    expect(await phase()).toBe("lobby");
    await control("POST", id, "/admit");
    await page.locator(PARTICIPANTS_BUTTON).waitFor(WAIT);
  });
});

describe("how it ends", () => {
  it("end: the dialog over the call, its OK button, and all media stopped", async () => {
    const id = newId();
    await joinOpenCall(id);
    await page.locator(H.joinAudioButton).click();
    await expect.poll(audibleAudio, WAIT).toBe(2);

    await control("POST", id, "/end");
    const dialog = page.locator(H.endedDialog);
    await dialog.waitFor(WAIT);
    expect(await page.locator(`${H.endedDialog} ${MODAL_TITLE}`).textContent()).toBe(
      "This meeting has been ended by host",
    );
    expect(await page.locator(H.endedDialogButton).textContent()).toBe("OK");
    // The footer stays underneath, as on the real client: the dialog must win.
    expect(await page.locator(H.footer).count()).toBe(1);
    expect(await phase()).toBe("ended");
    expect(await page.locator("#audio-host audio").count()).toBe(0);

    // OK goes back to the home page, which is no meeting.
    await page.locator(H.endedDialogButton).click();
    expect(await page.locator(H.endedDialog).count()).toBe(0);
    expect(await phase()).toBe("loading");
  });

  it("removal mid-call: 'You have been removed' over the call", async () => {
    const id = newId();
    await joinOpenCall(id);
    await control("POST", id, "/remove");
    await page.locator(H.removedDialog).waitFor(WAIT);
    expect(await page.locator(`${H.removedDialog} ${MODAL_TITLE}`).textContent()).toBe(
      "You have been removed",
    );
    expect(await page.locator(H.footer).count()).toBe(1);
    expect(await phase()).toBe("removed");
    expect(await page.locator("#audio-host audio").count()).toBe(0);
  });

  it("denial: the host removes the waiting attendee; the dialog over the waiting room reads as denied", async () => {
    const id = newId();
    await joinWaitingRoom(id);
    await control("POST", id, "/deny");
    await page.locator(H.removedDialog).waitFor(WAIT);
    expect(await page.locator(H.footer).count()).toBe(0);
    expect(await phase()).toBe("denied");
    expect(await attendeeStates(id)).toEqual(["denied"]);
  });

  it("Leave then Leave Meeting: the host sees the attendee leave", async () => {
    const id = newId();
    await joinOpenCall(id);
    // The audio dialog is modal: the footer cannot be used until it is answered.
    await page.locator(H.joinAudioButton).click();
    await page.locator(`${H.footer} ${H.leaveButton}`).click(WAIT);
    await page.locator(H.leaveConfirm).click(WAIT);
    await text("You have left the meeting").waitFor(WAIT);
    expect(await phase()).toBe("left");
    await expect.poll(() => attendeeStates(id), WAIT).toEqual(["left"]);
  });
});

describe("dead ends", () => {
  it("an id that is no Zoom id gets 'This meeting link is invalid (3,001)', titled Error - Zoom", async () => {
    await page.goto(`${host.url}/wc/12ab/join?pwd=x`);
    await text("This meeting link is invalid (3,001)").waitFor(WAIT);
    expect(await page.title()).toBe("Error - Zoom");
    expect(await page.locator(H.nameInput).count()).toBe(0);
    expect(await phase()).toBe("not_found");
  });

  it("page=not_found shows the same for a valid id", async () => {
    await page.goto(`${host.url}/wc/${newId()}/join?page=not_found`);
    await text("This meeting link is invalid (3,001)").waitFor(WAIT);
    expect(await phase()).toBe("not_found");
  });

  it("page=blocked shows the bot wall", async () => {
    await page.goto(`${host.url}/wc/${newId()}/join?page=blocked`);
    await text("We detected you may be a bot").waitFor(WAIT);
    expect(await page.locator(H.nameInput).count()).toBe(0);
    expect(await phase()).toBe("bot_wall");
  });

  it("page=sign_in shows the authorized-attendees wall", async () => {
    await page.goto(`${host.url}/wc/${newId()}/join?page=sign_in`);
    await text("Sign in to join this meeting").waitFor(WAIT);
    expect(await phase()).toBe("sign_in");
  });
});

describe("the host's passcode and start, through its APIs", () => {
  async function call(method: string, path: string, body?: unknown) {
    const response = await fetch(`${host.url}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() };
  }

  it("refuses a join without the passcode or with another one (403, no attendee), accepts the right one", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", passcode: "p4ss" });
    const attendees = `/api/meetings/zoom/${id}/attendees`;
    expect(await call("POST", attendees, { name: "Bot" })).toEqual({
      status: 403,
      json: { detail: "wrong passcode" },
    });
    expect((await call("POST", attendees, { name: "Bot", passcode: "nope" })).status).toBe(403);
    expect((await meetingState(id)).attendees).toEqual([]);
    expect(await call("POST", attendees, { name: "Bot", passcode: "p4ss" })).toEqual({
      status: 201,
      json: { id: "a-1", name: "Bot", state: "lobby" },
    });
  });

  it("start is a 409 once started; hostStartsAfterMs cannot go with hostStarted=true", async () => {
    const id = newId();
    const created = await control("PUT", id, "", { hostStarted: "false" });
    expect(created.hostStarted).toBe(false);
    expect((await control("POST", id, "/start")).hostStarted).toBe(true);
    expect((await call("POST", `/control/meetings/zoom/${id}/start`)).status).toBe(409);

    const contradiction = await call("PUT", `/control/meetings/zoom/${newId()}`, {
      hostStarted: true,
      hostStartsAfterMs: 100,
    });
    expect(contradiction.status).toBe(400);
    expect(contradiction.json.detail).toContain("hostStartsAfterMs");
    const notBoolean = await call("PUT", `/control/meetings/zoom/${newId()}`, { hostStarted: "no" });
    expect(notBoolean.json.detail).toContain("hostStarted: must be true or false");
  });

  it("rejects ids that are not 9 to 11 digits", async () => {
    const bad = await call("PUT", "/control/meetings/zoom/abc-defg-hij", {});
    expect(bad).toEqual({
      status: 400,
      json: { detail: "'abc-defg-hij' is not a valid zoom meeting id (like 12345678901)" },
    });
  });
});

describe("captions and chat (docs/notes/live-meeting.md)", () => {
  const MORE = '#wc-footer button[aria-label="More meeting control"]';
  const MENU_ITEMS = '[role="menu"] [role="menuitem"]';
  const SUBTITLES = "#live-transcription-subtitle";
  const CHAT_BUTTON = '#wc-footer button[aria-label*="chat panel"]';
  const EDITOR = '.chat-rtf-box__editor-outer [contenteditable="true"]';
  const SEND = 'button[aria-label="send"]';
  // Short lines keep the test short; six words still show the growth.
  const LINES = [
    { participant: "Alice Example", text: "Please send the report by Friday" },
    // A loaded page plays a line later than the host put it on air, and the next line cuts it
    // short (its caption stays half grown): 3 s apart, the first plays out whole.
    { participant: "Bob Example", text: "We will ship the new version", silenceBeforeMs: 3000 },
  ];

  /** Clicks More, then the menu item `label`. */
  async function fromMore(label: string) {
    await page.locator(MORE).click();
    await page.locator(MENU_ITEMS, { hasText: label }).click();
  }

  /** The participants list's avatar beside `name`: [src, initials, style]. */
  const listAvatar = (name: string) =>
    page
      .locator("li.participants-li", {
        has: page.locator(`.participants-item__display-name:text-is("${name}")`),
      })
      .locator(".participants-item__avatar")
      .evaluate((a) => [a.getAttribute("src"), a.textContent, a.getAttribute("style")]);

  it("captions: More → Captions, the toast, lines growing word by word beside the reader's avatar as in the participants list, no name", async () => {
    const id = newId();
    // Started below once captions are on (the delay is a fallback only).
    await joinOpenCall(id, { script: LINES, scriptStartAfterMs: 60_000, captionRewrites: [0] });
    await settleIn();
    expect(await page.locator(SUBTITLES).count()).toBe(0);
    await watchCaptions(page, {
      block: ".live-transcription-subtitle__item",
      speaker: ".zmu-caption-speaker-icon",
      text: ".live-transcription-subtitle__text",
    });
    await fromMore("Captions");
    await text("You have enabled live captions").waitFor(WAIT);
    await page.locator(SUBTITLES).waitFor(WAIT);
    await control("POST", id, "/script/start");

    const lines = () => page.locator(".live-transcription-subtitle__item").allTextContents();
    // Bob has no picture: his icon is his initials, as in the list.
    await expect.poll(lines, { timeout: 30_000 }).toEqual([LINES[0]!.text, `BE${LINES[1]!.text}`]);
    const [alice, bob] = await captionEntries(page);
    expectCaptionGrew(alice, LINES[0]!.text, true);
    expectCaptionGrew(bob, LINES[1]!.text);
    // The speaker is told only by the avatar, which matches the participants list's.
    const [aliceSrc, ,] = await listAvatar("Alice Example");
    expect(aliceSrc).toMatch(/^data:image\/svg\+xml,/);
    expect(alice?.speaker).toBe(aliceSrc);
    expect(await listAvatar("Bob Example")).toEqual([
      null,
      "BE",
      await page.locator(".zmu-caption-speaker-icon").nth(1).getAttribute("style"),
    ]);
    expect(bob?.speaker).toBe("BE");
    expect(await page.locator(SUBTITLES).textContent()).not.toMatch(/Alice|Bob/);
    expect((await meetingState(id)).attendees[0]?.captionsOnAt).toEqual(expect.any(String));

    await fromMore("Hide Captions");
    expect(await page.locator(SUBTITLES).count()).toBe(0);
    await expect.poll(async () => (await meetingState(id)).attendees[0]?.captionsOnAt, WAIT).toBeNull();
    await fromMore("Show Captions");
    await page.locator(SUBTITLES).waitFor(WAIT);
  });

  it("captions off for the meeting: the More menu has no captions item", async () => {
    await joinOpenCall(newId(), { captions: "off" });
    await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
    await page.locator(MORE).click();
    expect(await page.locator(MENU_ITEMS).allTextContents()).toEqual(["Stop Incoming Video", "Settings"]);
  });

  it("chat: the guest tip first, Enter sends under 'Me', the host's message under its sender once, over 4096 refused", async () => {
    const id = newId();
    await joinOpenCall(id, { chat: [{ participant: "Bob Example", text: "Hi, I am Bob", atMs: 1000 }] });
    await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
    await page.locator(CHAT_BUTTON).click();
    expect(await page.locator(CHAT_BUTTON).getAttribute("aria-label")).toBe("close the chat panel");
    // Chatting as a guest: no typing before "Got it".
    expect(await page.locator(EDITOR).count()).toBe(0);
    await page.getByRole("tooltip").getByRole("button", { name: "Got it" }).click();

    const runs = () =>
      page
        .locator(".chat-item-container")
        .evaluateAll((nodes) =>
          nodes.map((n) => [
            n.querySelector(".chat-item__sender")?.textContent,
            ...[...n.querySelectorAll('[id^="chat-message-"] .new-chat-message__content')].map(
              (m) => m.textContent,
            ),
          ]),
        );
    await expect.poll(runs, WAIT).toEqual([["Bob Example", "Hi, I am Bob"]]);
    await page.locator(EDITOR).fill("Hello from the bot");
    await page.locator(EDITOR).press("Enter");
    await expect.poll(() => page.locator(EDITOR).innerText(), WAIT).toBe("");
    await page.locator(EDITOR).fill("Second line");
    await page.locator(SEND).click();
    await expect.poll(runs, WAIT).toEqual([
      ["Bob Example", "Hi, I am Bob"],
      ["Me", "Hello from the bot", "Second line"],
    ]);
    const state = await meetingState(id);
    const ids = await page
      .locator(".new-chat-message__container")
      .evaluateAll((nodes) => nodes.map((n) => n.id));
    expect(state.chat.map((m) => [m.id, m.sender, m.senderId, m.text, m.fromAttendee])).toEqual([
      [ids[0], "Bob Example", "p-2", "Hi, I am Bob", false],
      [ids[1], "Meetbot", "a-1", "Hello from the bot", true],
      [ids[2], "Meetbot", "a-1", "Second line", true],
    ]);

    // Past Zoom's 4096 characters: refused, the text stays.
    await page.locator(EDITOR).fill("y".repeat(4097));
    expect(await page.locator(SEND).isDisabled()).toBe(true);
    expect(await page.locator(".chat-rtf-box__limit").isVisible()).toBe(true);
    await page.locator(EDITOR).press("Enter");
    expect((await page.locator(EDITOR).innerText()).length).toBe(4097);
    expect((await meetingState(id)).chat).toHaveLength(3);
  });
});

describe("the adapter on the mock", () => {
  it("join() clears the dialogs, fills name and passcode, mutes, joins; afterAdmission() joins audio, opens the panel", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", passcode: "2024", participants: 2 });
    // No pwd in the link: the form asks for the passcode, which comes from meetingPassword.
    await page.goto(`${host.url}/wc/${id}/join`);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "prejoin", evidence: "nameInput" });
    const { notes, note } = collectNotes();
    await zoomAdapter.join(page, {
      displayName: "Adapter Bot",
      info: { platform: "zoom", meetingId: id, meetingPassword: "2024" },
      note,
    });
    // As the runner does: once the snapshot says in_call, the after-admission step.
    await expect
      .poll(() => snapshot("Adapter Bot"), WAIT)
      .toMatchObject({ phase: "in_call", evidence: "footer + participantsButton" });
    await zoomAdapter.afterAdmission?.(page, { note });
    // The panel is opened in the background, so as not to delay the recording.
    await expect.poll(() => notes.some(([hook]) => hook === "participantsPanel"), WAIT).toBe(true);
    // Which variant of each hook it met, in order: the first visit's three dialogs, the passcode
    // field, the preview toggles as "Allow" left them (on), then the audio dialog in the call.
    expect(notes).toEqual([
      ["popup", "cookies #onetrust-accept-btn-handler"],
      ["popup", "terms #wc_agree1"],
      ["popup", 'permissions "Allow"'],
      ["passcodeInput", 'input[placeholder*="passcode" i]'],
      ["microphone", 'clicked #preview-audio-control-button "Mute"'],
      ["camera", 'clicked #preview-video-control-button "Stop Video"'],
      ["joinAudio", "button.join-audio-by-voip__join-btn"],
      ["participantsPanel", "opened"],
    ]);
    expect(await page.locator("#participants-ul").count()).toBe(1);
    await expect.poll(audibleAudio, WAIT).toBe(2);
    // It joined with microphone and camera off (the preview had them on after "Allow").
    expect(await page.locator('#wc-footer button[aria-label="unmute my microphone"]').count()).toBe(1);
    expect(await page.locator('#wc-footer button[aria-label="start my video"]').count()).toBe(1);
    expect(await snapshot("Adapter Bot")).toMatchObject({
      phase: "in_call",
      participants: [{ name: "Alice Example" }, { name: "Bob Example" }],
    });
    expect((await meetingState(id)).attendees).toMatchObject([{ name: "Adapter Bot", state: "in_call" }]);

    expect(await zoomAdapter.leave(page)).toBeNull();
    await expect.poll(() => attendeeStates(id), WAIT).toEqual(["left"]);
  });

  it("afterAdmission() clicks the participants button once more when its first click did not take", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", participants: 2 });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    const { notes, note } = collectNotes();
    await zoomAdapter.join(page, {
      displayName: "Adapter Bot",
      info: { platform: "zoom", meetingId: id },
      note,
    });
    await expect.poll(() => snapshot("Adapter Bot"), WAIT).toMatchObject({ phase: "in_call" });
    // The page swallows the button's first click, as a page still wiring its footer would.
    await page.evaluate((selector) => {
      let swallowed = false;
      const swallowFirst = (event: Event) => {
        if (swallowed || !(event.target as Element).closest(selector)) return;
        swallowed = true;
        event.stopPropagation();
      };
      document.addEventListener("click", swallowFirst, { capture: true });
    }, H.participantsButton);
    await zoomAdapter.afterAdmission?.(page, { note });
    await expect.poll(() => notes.some(([hook]) => hook === "participantsPanel"), WAIT).toBe(true);
    expect(notes.filter(([hook]) => hook === "participantsPanel")).toEqual([
      ["participantsPanel", "opened on a second click"],
    ]);
    expect(await page.locator(H.participantName).allInnerTexts()).toEqual([
      "Adapter Bot",
      "Alice Example",
      "Bob Example",
    ]);
    expect(await zoomAdapter.leave(page)).toBeNull();
  });

  it("leave() from the waiting room leaves at once", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual" });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    const { notes, note } = collectNotes();
    await zoomAdapter.join(page, {
      displayName: "Waiting Bot",
      info: { platform: "zoom", meetingId: id },
      note,
    });
    expect(notes).toContainEqual(["passcodeInput", "none shown"]);
    await expect
      .poll(() => snapshot("Waiting Bot"), WAIT)
      .toMatchObject({
        phase: "lobby",
        evidence: 'texts.waitingRoom "Please wait, the meeting host will let you in soon"',
      });
    expect(await zoomAdapter.leave(page)).toBeNull();
    await expect.poll(() => attendeeStates(id), WAIT).toEqual(["left"]);
  });
});

describe("incoming video off (an audio-only bot's step)", () => {
  const turnOff = zoomAdapter.live!.turnOffIncomingVideo!;
  const menuItem = (name: string) => page.getByRole("menuitem", { name, exact: true });

  // The item's two places: the footer's More menu (default), the top-right View menu (ui).
  it.each([[[]], [["zoom-view-menu"]]])(
    "ui %j: Stop Incoming Video stops the tiles; again it leaves them off",
    async (ui) => {
      const id = newId();
      await joinOpenCall(id, { participants: 2, ui });
      await page.getByRole("button", { name: "Join Audio by Computer" }).click(WAIT);
      const canvas = page.locator(".gallery-video-container__video-frame canvas").nth(1);
      const notes: string[] = [];
      await expectPictureStops(canvas, async () => {
        expect(await turnOff(page, { note: (hook) => notes.push(hook) })).toBeNull();
      });
      expect(notes).toEqual(["incomingVideoItem"]);
      expect(await page.getByRole("menu").count()).toBe(0);
      // Off already: nothing clicked, no menu left open.
      expect(await turnOff(page, { note: (hook) => notes.push(hook) })).toBeNull();
      expect({ notes, menus: await page.getByRole("menu").count() }).toEqual({
        notes: ["incomingVideoItem"],
        menus: 0,
      });
      await page.locator(ui.length ? 'button[aria-label="View"]' : H_MORE).click();
      expect(await menuItem("Start Incoming Video").count()).toBe(1);
    },
  );
});

describe("drifted layouts (ui=, fixtures/zoom/ui-variants.ts)", () => {
  /** The adapter from the form into the call, as the runner drives it; answers its notes. */
  async function adapterJoins(id: string, ui: string, name = "Drift Bot") {
    await control("PUT", id, "", { admit: "open", participants: 2, ui: [ui] });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "prejoin" });
    const { notes, note } = collectNotes();
    await zoomAdapter.join(page, { displayName: name, info: { platform: "zoom", meetingId: id }, note });
    await expect.poll(() => snapshot(name), WAIT).toMatchObject({ phase: "in_call" });
    await zoomAdapter.afterAdmission?.(page, { note });
    // The panel is opened in the background: its note comes once it is open.
    await expect.poll(() => notes.some(([hook]) => hook === "participantsPanel"), WAIT).toBe(true);
    return notes.filter(([hook]) => hook === "popup" || hook === "participantsPanel");
  }

  it("permission dialog over the cookie banner: the covered banner waits until the dialog is answered", async () => {
    const id = newId();
    await control("PUT", id, "", { ui: ["zoom-permission-over-cookies"] });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    // The reported page: the banner is shown, but a click on it lands on the dialog's overlay.
    await page.locator(H.cookieAccept).waitFor(WAIT);
    expect(await isOnTop(page.locator(H.cookieAccept))).toBe(false);
    expect(await page.locator(H.termsAgree).count()).toBe(0);

    expect(await adapterJoins(id, "zoom-permission-over-cookies")).toEqual([
      ["popup", 'permissions "Allow"'],
      ["popup", "cookies #onetrust-accept-btn-handler"],
      ["participantsPanel", "opened"],
    ]);
  });

  it("all dialogs at once, the other way round: the adapter answers the one on top first", async () => {
    expect(await adapterJoins(newId(), "zoom-dialogs-at-once")).toEqual([
      ["popup", 'permissions "Allow"'],
      ["popup", "terms #wc_agree1"],
      ["popup", "cookies #onetrust-accept-btn-handler"],
      ["participantsPanel", "opened"],
    ]);
  });

  it("classic form: #inputname and #joinBtn, disabled until a name is typed", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["zoom-classic-form"] });
    await openForm(id);
    expect(await page.locator("#input-for-name, button.preview-join-button").count()).toBe(0);
    expect(await page.locator('#inputname[placeholder="Your Name"]').count()).toBe(1);
    expect(await page.locator("#joinBtn").isDisabled()).toBe(true);
    expect(await snapshot()).toMatchObject({ phase: "prejoin", evidence: "nameInput" });

    await adapterJoins(newId(), "zoom-classic-form");
    expect(await page.locator(PANEL_NAMES).allTextContents()).toEqual([
      "Drift Bot",
      "Alice Example",
      "Bob Example",
    ]);
  });

  it("toasts over Allow, Join and the participants button for a moment, and an alert in the call", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "manual", ui: ["zoom-toasts-and-alert"] });
    await openForm(id);
    await page.locator(H.nameInput).fill("Meetbot");
    // Typing the name brings the toast over Join; it goes away by itself.
    expect(await isOnTop(page.locator(H.joinButtonReady))).toBe(false);
    await expect.poll(() => isOnTop(page.locator(H.joinButtonReady)), WAIT).toBe(true);

    // "Allow" is waited for while "Continue without microphone and camera" lies free beside it,
    // and answered before the form's toggles are read: "Allow" turns them on, and the bot mutes.
    const joined = newId();
    expect(await adapterJoins(joined, "zoom-toasts-and-alert")).toEqual([
      ["popup", "cookies #onetrust-accept-btn-handler"],
      ["popup", "terms #wc_agree1"],
      ["popup", 'permissions "Allow"'],
      ["participantsPanel", "opened"],
    ]);
    const [bot] = (await meetingState(joined)).attendees;
    expect([bot?.mic.muted, bot?.camera.on]).toEqual([true, false]);
    expect(await page.getByRole("alert").textContent()).toBe("Your internet connection is unstable");
    expect(await snapshot("Drift Bot")).toMatchObject({
      phase: "in_call",
      participants: [{ name: "Alice Example" }, { name: "Bob Example" }],
    });
  });

  it("Join Audio by Computer held under something for seconds: the adapter waits for it and joins computer audio", async () => {
    const id = newId();
    await control("PUT", id, "", { admit: "open", participants: 2 });
    await page.goto(`${host.url}/wc/${id}/join?pwd=`);
    await expect.poll(snapshot, WAIT).toMatchObject({ phase: "prejoin" });
    const { notes, note } = collectNotes();
    await zoomAdapter.join(page, {
      displayName: "Drift Bot",
      info: { platform: "zoom", meetingId: id },
      note,
    });
    await expect.poll(() => snapshot("Drift Bot"), WAIT).toMatchObject({ phase: "in_call" });
    await page.locator(H.joinAudioButton).waitFor(WAIT);
    // A layer over the whole call for 6 s, as a slow first paint or a banner can hold the dialog:
    // a bot that gave up on the click after a moment would record a silent meeting.
    await page.evaluate(() => {
      const layer = document.createElement("div");
      Object.assign(layer.style, { position: "fixed", inset: "0", zIndex: "100000" });
      document.body.append(layer);
      setTimeout(() => layer.remove(), 6_000);
    });
    await zoomAdapter.afterAdmission?.(page, { note });
    await expect.poll(audibleAudio, { timeout: 20_000 }).toBe(2);
    expect(notes).toContainEqual(["joinAudio", "button.join-audio-by-voip__join-btn"]);
  });

  it("panel already open elsewhere: kept open, its entries read (a namesake of the bot included)", async () => {
    // The bot shares Alice's name: only the roster's "(Me)" tells them apart, the tiles cannot.
    expect(await adapterJoins(newId(), "zoom-panel-open-elsewhere", "Alice Example")).toEqual([
      ["popup", "cookies #onetrust-accept-btn-handler"],
      ["popup", "terms #wc_agree1"],
      ["popup", 'permissions "Allow"'],
      ["participantsPanel", "already open"],
    ]);
    expect(await page.locator("#participants-ul, .participants-section-container").count()).toBe(0);
    expect(await page.locator(".participants-item__display-name").allTextContents()).toEqual([
      "Alice Example",
      "Alice Example",
      "Bob Example",
    ]);
    expect(await snapshot("Alice Example")).toMatchObject({
      phase: "in_call",
      participants: [{ name: "Alice Example" }, { name: "Bob Example" }],
    });
  });
});
